import type { RecordPlan } from "../decision/record-redaction";
import { ChunkReader, isDirectInput, type DirectInput } from "./direct-input";
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
 * iteration ends, the consumer's `return` included; a DirectInput is stopped before that.
 */
export async function* redactedChunks(redactor: DocumentRedactor, input: AsyncIterable<Buffer> | DirectInput): AsyncGenerator<Buffer> {
  try {
    if (isDirectInput(input)) yield* readDirectly(redactor, input);
    else {
      const waits = redactor.waits;
      for await (const chunk of waits ? waits.timedInput(input) : input) {
        const out = await redactor.push(chunk);
        if (out.length === 0) continue;
        const from = waits && performance.now();
        yield out;
        // How long the consumer took to ask for more (the client).
        if (waits) waits.outputMs += performance.now() - from!;
      }
    }
    const last = await redactor.end();
    if (last.length > 0) yield last;
  } finally {
    // The reader stops before the redactor lets its buffers go (the socket may be reading into one).
    if (isDirectInput(input)) input.destroy(new Error("the document redaction ended"));
    await redactor.close();
  }
}

/**
 * A DirectInput: pushed chunk by chunk until the redactor can take the rest straight into its
 * buffers (the CSV header read), then read into them while the released output is yielded. The
 * reader is stopped by the redactor when enough is in flight or released and not yet yielded, so
 * a consumer that reads slowly slows the input as with chunks.
 */
async function* readDirectly(redactor: DocumentRedactor, input: DirectInput): AsyncGenerator<Buffer> {
  const resume = () => input.resume();
  let sink = redactor.directSink?.(resume);
  let more = true;
  if (!sink) {
    const chunks = new ChunkReader(input);
    for (let chunk = await chunks.next(); chunk; chunk = sink ? undefined : await chunks.next()) {
      const out = await redactor.push(chunk);
      if (out.length > 0) yield out;
      sink = redactor.directSink?.(resume);
    }
    if (!sink) return;
    for (const queued of chunks.takeQueued()) more = sink.arrived(queued);
  }
  input.readInto(sink);
  // Told to stop already: the redactor resumes the reader once its output is taken.
  if (more) input.resume();
  for (let out = await redactor.output!(); out; out = await redactor.output!()) if (out.length > 0) yield out;
}
