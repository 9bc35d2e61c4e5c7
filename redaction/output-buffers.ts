import { DocumentBufferPool } from "./buffer-pool";

/** Output buffers kept for reuse by every document of the process (a few blocks in flight and a few being written). */
const spare = new DocumentBufferPool(8);

/**
 * The buffers one document's workers write their outputs into. An output written to the client
 * comes back (`written`) and goes with a later block to a worker (`take`), which writes the
 * block's output into it when it is big enough. Only the output's length is ever handed out
 * (`Buffer.from(buffer, 0, length)`), and a buffer that held another document's output is zeroed
 * before this one's worker gets it: no byte of one document reaches another, not even past an
 * output's end.
 */
export class OutputBuffers {
  /** Outputs this document handed out whole (their buffer is theirs alone), by buffer. */
  private readonly handedOut = new WeakSet<ArrayBuffer>();

  /** A spare buffer for a worker to write an output into, or undefined when none is kept. */
  take(): ArrayBuffer | undefined {
    return spare.take(this);
  }

  /** An output as it is handed out: the first `length` bytes of the buffer a worker wrote it in. */
  output(buffer: ArrayBuffer, length: number): Buffer {
    this.handedOut.add(buffer);
    return Buffer.from(buffer, 0, length);
  }

  /** An output that was written: nothing reads it any more. Anything but an output this document handed out whole is left alone. */
  written(output: Buffer): void {
    const buffer = output.buffer as ArrayBuffer;
    if (output.byteOffset !== 0 || !this.handedOut.delete(buffer)) return;
    this.keep(buffer);
  }

  /** A buffer of this document whose output is not sent: its block was abandoned (read from a wrong start), or its output is empty. */
  unused(buffer: ArrayBuffer): void {
    this.keep(buffer);
  }

  private keep(buffer: ArrayBuffer): void {
    if (buffer.byteLength > 0) spare.put(buffer, this);
  }
}
