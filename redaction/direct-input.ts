/**
 * Input written straight into a redactor's buffers: the reader asks the redactor for room, the
 * bytes land there (a socket's reads, by the kernel), and the redactor is told how many arrived.
 * No buffer is allocated, copied or queued per read, and no promise is settled per read.
 */

/** Where a DirectInput writes: the redactor's side. */
export interface InputSink {
  /** Room for the next bytes: read into it, they need no copy. */
  room(): Buffer;
  /**
   * Bytes arrived: a view of the start of the last room, or bytes elsewhere (copied then). False when
   * enough is in flight: the reader stops reading until it is resumed.
   */
  arrived(bytes: Buffer): boolean;
  /** The input is complete (no error) or failed; the reader writes nothing more into any room after this. */
  ended(error?: Error): void;
}

/** Input that writes into a sink as it reads (the store's body, docs/objectstore-export.md). */
export interface DirectInput {
  /** From now on, bytes go to `sink` (bytes already read first). Reading starts or goes on only after `resume`. */
  readInto(sink: InputSink): void;
  pause(): void;
  resume(): void;
  /** Stops reading at once (the reader writes nothing more anywhere) and tells the sink, if it is not ended yet. */
  destroy(error?: Error): void;
}

export function isDirectInput(input: unknown): input is DirectInput {
  return typeof (input as Partial<DirectInput>).readInto === "function";
}

/** Room of a chunk read (Node's own socket read size). */
const chunkBytes = 64 << 10;

/**
 * Reads a DirectInput chunk by chunk, each in a buffer of its own (for a redactor that takes
 * chunks: the rows before it can take input in place). Undefined at the input's end; throws its failure.
 */
export class ChunkReader implements InputSink {
  private chunks: Buffer[] = [];
  private outcome?: { error?: Error };
  private waiter?: () => void;

  constructor(private readonly input: DirectInput) {
    input.readInto(this);
  }

  async next(): Promise<Buffer | undefined> {
    while (this.chunks.length === 0 && !this.outcome) {
      const arrived = new Promise<void>((resolve) => (this.waiter = resolve));
      this.input.resume();
      await arrived;
    }
    const chunk = this.chunks.shift();
    if (chunk) return chunk;
    if (this.outcome?.error) throw this.outcome.error;
    return undefined;
  }

  /** Chunks that arrived and were not taken by `next` (handed on when another sink takes over). */
  takeQueued(): Buffer[] {
    const queued = this.chunks;
    this.chunks = [];
    return queued;
  }

  room(): Buffer {
    return Buffer.allocUnsafeSlow(chunkBytes);
  }

  arrived(bytes: Buffer): boolean {
    this.chunks.push(bytes);
    this.wake();
    return false;
  }

  ended(error?: Error): void {
    this.outcome ??= { error };
    this.wake();
  }

  private wake(): void {
    const waiter = this.waiter;
    this.waiter = undefined;
    waiter?.();
  }
}
