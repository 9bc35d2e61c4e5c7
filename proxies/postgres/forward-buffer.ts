import { PendingRange } from "./pending-range";

/**
 * What goes to the backend after a chunk from the client is handled. Messages forwarded as they
 * came stay slices of the chunk, adjacent ones one slice: a chunk that passes whole is written
 * as it is, without a copy. Only a chunk with messages of the proxy's own among them is joined.
 * The chunks must be the client socket's own (never read into again).
 */
export class ForwardBuffer {
  private parts: Buffer[] = [];
  private readonly run = new PendingRange();

  /** Forwards source[start, end). */
  forward(source: Buffer, start: number, end: number): void {
    if (this.run.extend(source, start, end)) return;
    this.endRun();
    this.run.restart(source, start, end);
  }

  /** A message of the proxy's own, after what was forwarded so far. */
  push(message: Buffer): void {
    this.endRun();
    this.parts.push(message);
  }

  /** The bytes so far, as one buffer (undefined: none); the buffer starts empty again. */
  take(): Buffer | undefined {
    const run = this.run;
    if (this.parts.length === 0 && run.start === 0 && run.end === run.source.length && run.size > 0) {
      // The whole chunk passes: written as the socket handed it over (no slice of it).
      const whole = run.source;
      run.clear();
      return whole;
    }
    this.endRun();
    const parts = this.parts;
    if (parts.length === 0) return undefined;
    this.parts = [];
    return parts.length === 1 ? parts[0]! : Buffer.concat(parts);
  }

  private endRun(): void {
    if (this.run.size === 0) return;
    this.parts.push(this.run.source.subarray(this.run.start, this.run.end));
    this.run.clear();
  }
}
