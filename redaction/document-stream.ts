import type { RecordPlan } from "../decision/record-redaction";
import { JsonRedactor } from "./json-redactor";
import { csvRedactor } from "./threaded-csv-redactor";
import type { CsvThreading, DecisionSource, DocumentFormat, DocumentRedactor } from "./types";

/** The redactor of a document format: CSV on worker threads (per `csvThreading`), JSON arrays and NDJSON on the calling thread. */
export function documentRedactor(format: DocumentFormat, plan: RecordPlan, decisions: DecisionSource, csvThreading: CsvThreading): DocumentRedactor {
  return format === "csv" ? csvRedactor(plan, decisions, csvThreading) : new JsonRedactor(plan, decisions, format === "json" ? "array" : "lines");
}

/**
 * A document redacted as it is read: each input chunk is pushed through the redactor and its
 * output yielded before the next chunk is read, so a consumer that reads slowly slows the
 * input (memory stays bounded by a chunk and the redactor's own blocks). Throws the redactor's
 * DocumentError, or the input's error, instead of ending: a consumer never mistakes a cut
 * document for a whole one. The redactor is closed (its worker threads stopped) however the
 * iteration ends, the consumer's `return` included.
 */
export async function* redactedChunks(redactor: DocumentRedactor, input: AsyncIterable<Buffer>): AsyncGenerator<Buffer> {
  try {
    const waits = redactor.waits;
    if (waits) {
      // The same loop, timed: how long the input's next chunk and the consumer's next read take.
      const chunks = input[Symbol.asyncIterator]();
      let done = false;
      try {
        for (;;) {
          const next = await waits.time("inputMs", chunks.next());
          if (next.done) break;
          waits.chunks++;
          const out = await redactor.push(next.value);
          const from = performance.now();
          if (out.length > 0) yield out;
          waits.outputMs += performance.now() - from;
        }
        done = true;
      } finally {
        // As for-await does: an input left before its end is told (a stream is destroyed).
        if (!done) await chunks.return?.();
      }
    } else
      for await (const chunk of input) {
        const out = await redactor.push(chunk);
        if (out.length > 0) yield out;
      }
    const last = await redactor.end();
    if (last.length > 0) yield last;
  } finally {
    await redactor.close();
  }
}
