import { writeMaskedRowFrom, type ValueActions } from "../../protocols/postgres/data-row";
import { PendingRange } from "./pending-range";

const empty = Buffer.alloc(0);

/**
 * What goes to one side of a connection after a chunk is handled, built in one buffer: a
 * chunk's rows are copied (or written masked, never longer than they came) once, with no
 * buffer per row and no join at the end. Adjacent ranges of the same source are copied as one
 * (a run of messages that pass as they came is one copy, not one per message).
 */
export class OutputBuffer {
  private buffer: Buffer = empty;
  private length = 0;
  /** Passed as it is, not copied yet. */
  private readonly run = new PendingRange();

  /** `capacity`: what the chunk's output usually needs (allocated when the first message comes). */
  constructor(private readonly capacity: number) {}

  get size(): number {
    return this.length + this.run.size;
  }

  private ensure(extra: number): void {
    if (this.length + extra <= this.buffer.length) return;
    const grown = Buffer.allocUnsafe(Math.max(this.buffer.length * 2, this.capacity, this.length + extra, 256));
    this.buffer.copy(grown, 0, 0, this.length);
    this.buffer = grown;
  }

  /** Copies the pending run (before anything else is written, and before its source can change). */
  private endRun(): void {
    const size = this.run.size;
    if (size === 0) return;
    this.ensure(size);
    this.run.source.copy(this.buffer, this.length, this.run.start, this.run.end);
    this.length += size;
    this.run.clear();
  }

  push(message: Buffer): void {
    this.endRun();
    this.ensure(message.length);
    message.copy(this.buffer, this.length);
    this.length += message.length;
  }

  /** source[start, end), copied no later than `take` (the source must not change before). */
  pushRange(source: Buffer, start: number, end: number): void {
    if (this.run.extend(source, start, end)) return;
    this.endRun();
    this.run.restart(source, start, end);
  }

  /** The DataRow source[start, end) with the values `keep` does not keep set to NULL (or left out, -1). */
  pushMaskedRow(source: Buffer, start: number, end: number, keep: ValueActions): void {
    this.endRun();
    this.ensure(end - start);
    this.length = writeMaskedRowFrom(this.buffer, this.length, source, start + 5, end, keep);
  }

  /** The bytes so far (the buffer is not reused: the caller may hold them while they are written). */
  take(): Buffer {
    const run = this.run;
    if (this.length === 0 && run.size > 0) {
      // Only messages that pass as they came: one copy of exactly their bytes.
      const taken = Buffer.allocUnsafe(run.size);
      run.source.copy(taken, 0, run.start, run.end);
      run.clear();
      return taken;
    }
    this.endRun();
    const taken = this.buffer.subarray(0, this.length);
    this.buffer = empty;
    this.length = 0;
    return taken;
  }
}
