import type { RecordPlan } from "../decision/record-redaction";
import { Tally } from "./tally";
import type { DecisionSource, DocumentRedactor, RedactionTally } from "./types";

export const bom = Buffer.from([0xef, 0xbb, 0xbf]);
export const emptyBuffer = Buffer.alloc(0);

/**
 * What every format shares: a record the chunk does not complete is carried into the next
 * one, a leading UTF-8 BOM is noticed once, bytes in and out are counted.
 */
export abstract class ChunkedRedactor implements DocumentRedactor {
  /** The unfinished rest of the input, set by `process`. */
  protected carry: Buffer = emptyBuffer;
  protected readonly counts: Tally;
  /** Whether the document started with a BOM (known after the first bytes). */
  protected hadBom: boolean | undefined;

  constructor(
    protected readonly plan: RecordPlan,
    protected readonly decisions: DecisionSource,
  ) {
    this.counts = new Tally(plan);
  }

  async push(chunk: Buffer): Promise<Buffer> {
    this.counts.bytesIn += chunk.length;
    return this.next(this.carry.length > 0 ? Buffer.concat([this.carry, chunk]) : chunk, false);
  }

  async end(): Promise<Buffer> {
    const out = await this.next(this.carry, true);
    this.finish();
    return out;
  }

  tally(): RedactionTally {
    this.flushCounts();
    return this.counts.snapshot();
  }

  /** Nothing to release: these redactors run on the calling thread. */
  async close(): Promise<void> {}

  private async next(buf: Buffer, final: boolean): Promise<Buffer> {
    let start = 0;
    if (this.hadBom === undefined) {
      if (buf.length < bom.length && !final) {
        this.carry = Buffer.from(buf);
        return emptyBuffer;
      }
      this.hadBom = buf.subarray(0, bom.length).equals(bom);
      if (this.hadBom) start = bom.length;
    }
    const out = await this.process(buf, start, final);
    this.counts.bytesOut += out.length;
    return out;
  }

  /** Redacts the complete records of `buf` from `start`, sets the carry, returns their output. */
  protected abstract process(buf: Buffer, start: number, final: boolean): Promise<Buffer>;

  /** Called at the end of the document: throws a DocumentError when it is incomplete. */
  protected abstract finish(): void;

  /** Moves counts kept in faster structures into the tally. */
  protected flushCounts(): void {}
}
