/** One NDJSON line as received: its bytes, or only its number when it was longer than allowed. */
export type NdjsonLine = { number: number; bytes: Buffer } | { number: number; overlong: true };

import { skipWhitespace } from "../../redaction/json-scan";

const newline = 0x0a;

/**
 * The lines of an NDJSON stream, a batch per chunk received (what arrived together is answered
 * together). Blank lines are skipped; a final line without a newline counts. A line longer than
 * `maxLineBytes` is reported once by number and its bytes are dropped as they come, so a
 * client cannot make the proxy hold an unbounded line.
 */
export async function* ndjsonBatches(source: AsyncIterable<Buffer>, maxLineBytes: number): AsyncGenerator<NdjsonLine[]> {
  let carry: Buffer[] = [];
  let carried = 0;
  let number = 1;
  let skipping = false;
  const take = (end: Buffer, batch: NdjsonLine[]) => {
    const bytes = carry.length === 0 ? end : Buffer.concat([...carry, end]);
    carry = [];
    carried = 0;
    if (skipWhitespace(bytes, 0) < bytes.length) batch.push({ number, bytes });
    number++;
  };
  for await (const chunk of source) {
    const batch: NdjsonLine[] = [];
    let start = 0;
    for (let at = chunk.indexOf(newline); at !== -1; at = chunk.indexOf(newline, start)) {
      if (skipping) {
        skipping = false;
        number++;
      } else if (carried + at - start > maxLineBytes) {
        batch.push({ number, overlong: true });
        carry = [];
        carried = 0;
        number++;
      } else take(chunk.subarray(start, at), batch);
      start = at + 1;
    }
    if (start < chunk.length && !skipping) {
      const rest = chunk.subarray(start);
      if (carried + rest.length > maxLineBytes) {
        batch.push({ number, overlong: true });
        carry = [];
        carried = 0;
        skipping = true;
      } else {
        // Copied: the chunk's memory may be reused by the stream.
        carry.push(Buffer.from(rest));
        carried += rest.length;
      }
    }
    if (batch.length > 0) yield batch;
  }
  if (carried > 0 && !skipping) {
    const batch: NdjsonLine[] = [];
    take(Buffer.alloc(0), batch);
    if (batch.length > 0) yield batch;
  }
}
