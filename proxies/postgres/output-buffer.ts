import { writeMaskedRowFrom } from "../../protocols/postgres/data-row";

const empty = Buffer.alloc(0);

/**
 * What goes to one side of a connection after a chunk is handled, built in one buffer: a
 * chunk's rows are copied (or written masked, never longer than they came) once, with no
 * buffer per row and no join at the end.
 */
export class OutputBuffer {
  private buffer: Buffer = empty;
  private length = 0;

  /** `capacity`: what the chunk's output usually needs (allocated when the first message comes). */
  constructor(private readonly capacity: number) {}

  get size(): number {
    return this.length;
  }

  private ensure(extra: number): void {
    if (this.length + extra <= this.buffer.length) return;
    const grown = Buffer.allocUnsafe(Math.max(this.buffer.length * 2, this.capacity, this.length + extra, 256));
    this.buffer.copy(grown, 0, 0, this.length);
    this.buffer = grown;
  }

  push(message: Buffer): void {
    this.ensure(message.length);
    message.copy(this.buffer, this.length);
    this.length += message.length;
  }

  pushRange(source: Buffer, start: number, end: number): void {
    this.ensure(end - start);
    source.copy(this.buffer, this.length, start, end);
    this.length += end - start;
  }

  /** The DataRow source[start, end) with the values `keep` does not keep set to NULL. */
  pushMaskedRow(source: Buffer, start: number, end: number, keep: ArrayLike<boolean>): void {
    this.ensure(end - start);
    this.length = writeMaskedRowFrom(this.buffer, this.length, source, start + 5, end, keep);
  }

  /** The bytes so far (the buffer is not reused: the caller may hold them while they are written). */
  take(): Buffer {
    const taken = this.buffer.subarray(0, this.length);
    this.buffer = empty;
    this.length = 0;
    return taken;
  }
}
