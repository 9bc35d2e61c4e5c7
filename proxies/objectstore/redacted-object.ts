import { createHash } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";
import type { RecordPlan } from "../../decision/record-redaction";
import { documentRedactor, redactedChunks } from "../../redaction/document-stream";
import { documentFormats, DocumentError, type CsvThreading, type DocumentFormat, type RedactionTally } from "../../redaction/types";
import type { ExportDecider } from "../../exports/export-decider";
import { ExportDecisionSource } from "./export-decision-source";
import { S3Error } from "./s3-errors";
import { isDirectInput, type DirectInput } from "../../redaction/direct-input";
import { discardStored, type RangedStoreBody } from "./ranged-body";
import { takeOverBody } from "./store-body";
import { addAbortSignal, pipeline, type Transform } from "node:stream";

/**
 * Redacted output the client's connection may hold at once (written to it, not yet sent): no
 * further output is made past this, so a slow reader holds the store back. What a slow reader
 * holds at most beyond the redactor's blocks.
 */
const outputHighWaterMark = 1 << 20;

export interface RedactedObject {
  /** Headers of the answer: no length (chunked), a derived ETag and Last-Modified, never cached. */
  headers: Record<string, string>;
  /**
   * Sends the answer on `res`: its head (`head`: the answer's headers with any the caller adds),
   * then the document as it is redacted. Never rejects: a failure cuts the answer off.
   */
  send(res: ServerResponse, head: Record<string, string | number | string[] | undefined>): Promise<void>;
}

/**
 * The ETag of a redacted document: derived from the stored object's and the export's mapping,
 * weak because the same object gives other bytes when a user's decision changes, so that no
 * cache or client mistakes it for the stored object's (whose ETag is its bytes' digest).
 */
export function redactedEtag(exportId: string, mappingKey: string, stored: IncomingMessage): string {
  const digest = createHash("sha256")
    .update(`${exportId}\0${mappingKey}\0${stored.headers.etag ?? ""}\0${stored.headers["last-modified"] ?? ""}`)
    .digest("hex");
  return `W/"${digest.slice(0, 32)}"`;
}

/**
 * A stored document redacted as it streams: the store's body goes through the redaction engine
 * of its format and out to the client, read from the store only as fast as the client reads.
 * The first output (the CSV header, or the first records) is produced before the answer starts,
 * so a document refused at once is an S3 error; a failure later (a malformed row, the store
 * failing, a decision that cannot be made) cuts the chunked answer off without its last chunk:
 * the client sees a failed transfer, never a short document as whole.
 */
export async function redactedObject(options: {
  exportId: string;
  stored: IncomingMessage;
  format: DocumentFormat;
  decider: ExportDecider;
  plan: RecordPlan;
  mappingKey: string;
  threading: CsvThreading;
  /** The stored object's length (NaN when the store did not say). */
  length: number;
  /** The object read in ranges (ranged-body.ts storedObject), `stored` the answer of its first. */
  ranged?: RangedStoreBody;
  /** The object is stored compressed (its Content-Encoding): the body is decoded before it is redacted, and answered plain. Never with `ranged`. */
  decoder?: () => Transform;
  /** The client's request ended: the store's body, once taken over from the HTTP client (store-body.ts), is dropped with it. */
  signal: AbortSignal;
  /** Called once when the document ends: complete, failed (with the error) or abandoned by the client. */
  onEnd: (outcome: "complete" | "failed" | "abandoned", tally: RedactionTally | undefined, error?: Error) => void;
}): Promise<RedactedObject> {
  const { stored, format, plan } = options;
  const threading = threadingFor(options.length, options.threading);
  let redactor: ReturnType<typeof documentRedactor>;
  try {
    redactor = documentRedactor(format, plan, new ExportDecisionSource(options.decider, plan), threading);
  } catch (error) {
    // Nothing reads the store's answer (or ranges) then: dropped at once, not left to the store's idle timeout.
    discardStored({ answer: stored, ranged: options.ranged });
    throw error;
  }
  const input = storeInput(options, format, threading);
  const chunks = redactedChunks(redactor, input);
  const drop = () => (isDirectInput(input) ? input.destroy(new Error("the document's answer ended before the store's body")) : stored.destroy());
  let ended = false;
  const end = (outcome: "complete" | "failed" | "abandoned", error?: Error) => {
    if (ended) return;
    ended = true;
    let tally: RedactionTally | undefined;
    try {
      tally = redactor.tally();
    } catch {
      tally = undefined;
    }
    options.onEnd(outcome, tally, error);
  };
  let first: IteratorResult<Buffer>;
  try {
    first = await chunks.next();
  } catch (error) {
    drop();
    end("failed", error as Error);
    throw documentFailure(error);
  }
  /**
   * Each output is written as it comes, and given back to the redactor once the connection has
   * sent it (its buffer takes a later block's output instead of becoming garbage).
   */
  async function send(res: ServerResponse, head: Record<string, string | number | string[] | undefined>): Promise<void> {
    let finished = false;
    let unsent = 0;
    let resume: (() => void) | undefined;
    const wake = () => {
      const waiting = resume;
      resume = undefined;
      waiting?.();
    };
    const sent = (output: Buffer) => (error?: Error | null) => {
      unsent -= output.length;
      // A write that failed may leave the output anywhere in the connection's queue: it is not reused.
      if (!error) redactor.written?.(output);
      wake();
    };
    res.once("close", wake);
    try {
      res.writeHead(200, head);
      for (let next = first; !next.done; next = await chunks.next()) {
        // The client went away (the answer was destroyed).
        if (res.destroyed) break;
        unsent += next.value.length;
        res.write(next.value, sent(next.value));
        while (unsent > outputHighWaterMark && !res.destroyed) await new Promise<void>((resolve) => (resume = resolve));
      }
      if (!res.destroyed) {
        finished = true;
        end("complete");
        res.end();
      }
    } catch (error) {
      end("failed", error as Error);
      // What was written goes out first (the answer's head, the first output): Node corks a response's writes until the
      // next tick, and a failure found in the same tick destroyed them unsent, so the client saw no answer at all.
      res.socket?.uncork();
      // Cuts the chunked answer off without its last chunk: the client sees a failed transfer.
      res.destroy();
    } finally {
      res.off("close", wake);
      // The client went away: the store's request is dropped with it, and the workers stopped.
      if (!finished) {
        drop();
        await chunks.return(undefined).catch(() => undefined);
        end("abandoned");
      }
    }
  }
  const contentType = typeof stored.headers["content-type"] === "string" ? stored.headers["content-type"] : documentFormats[format];
  return {
    headers: {
      "content-type": contentType,
      etag: redactedEtag(options.exportId, options.mappingKey, stored),
      "last-modified": new Date().toUTCString(),
      "cache-control": "no-store",
      "accept-ranges": "none",
    },
    send,
  };
}

/**
 * The store says how long the document is: one longer than what stays on the calling thread goes to
 * the worker threads right after its header, instead of its first `inlineBytes` being redacted on the
 * event loop (the JS way, several times the workers' CPU per byte) while the workers could have started.
 */
function threadingFor(length: number, threading: CsvThreading): CsvThreading {
  return length > threading.inlineBytes ? { ...threading, inlineBytes: 0 } : threading;
}

/**
 * A CSV on worker threads from its header on is read off the store's connection straight into the
 * block buffers (store-body.ts), where the connection allows. JSON, NDJSON, and CSVs redacted on the
 * calling thread (one thread, or small enough) are read as the HTTP client hands them out.
 */
function takesBodyOver(format: DocumentFormat, threading: CsvThreading): boolean {
  return format === "csv" && threading.workers > 0 && threading.inlineBytes === 0;
}

/**
 * Where the document's bytes come from: the object's ranges, several read at once, when the first
 * answer is the first of several (ranged-body.ts); a compressed object's body through its decoder;
 * else the one answer's body, taken over where takesBodyOver says, or as Node's HTTP client hands it out.
 */
function storeInput(
  options: { stored: IncomingMessage; ranged?: RangedStoreBody; decoder?: () => Transform; signal: AbortSignal },
  format: DocumentFormat,
  threading: CsvThreading,
): DirectInput | AsyncIterable<Buffer> {
  const { stored, ranged, decoder, signal } = options;
  if (ranged) return ranged;
  if (decoder) return decodedBody(stored, decoder, signal);
  if (takesBodyOver(format, threading)) return takeOverBody(stored, signal) ?? stored;
  return stored;
}

/**
 * A compressed object's body, decoded. A stream that does not decode is a malformed document (DocumentError: 422
 * before the answer, a cut-off answer after), and so is one with bytes after its end: the decoders stop at the
 * end of their stream and drop the rest (deflate and br any bytes, gzip any after a zero byte), which would end a
 * document as whole without them (two deflate streams one after the other read as the first alone). The store
 * failing midway, or the client going away, fail it as they are.
 */
async function* decodedBody(stored: IncomingMessage, decoder: () => Transform, signal: AbortSignal): AsyncGenerator<Buffer> {
  // The client going away stops the decoding too: a small object is read whole before it is decoded (aborting the store's
  // request then stops nothing), and it may decode to gigabytes that nobody reads.
  const decoded = addAbortSignal(signal, decoder()) as Transform & { bytesWritten: number };
  let received = 0;
  let storeFailed = false;
  stored.on("data", (chunk: Buffer) => (received += chunk.length));
  stored.once("error", () => (storeFailed = true));
  // The store failing midway fails the decoded stream too (pipeline destroys it with the error): the document is cut off.
  pipeline(stored, decoded, () => undefined);
  try {
    for await (const chunk of decoded) yield chunk;
  } catch (error) {
    if (storeFailed || signal.aborted) throw error;
    throw new DocumentError("CONTENT_CODING_MALFORMED", "the object's compressed bytes do not decode");
  }
  // bytesWritten: the compressed bytes the decoder took.
  if (decoded.bytesWritten !== received)
    throw new DocumentError(
      "CONTENT_CODING_MALFORMED",
      `the object's compressed stream ends ${received - decoded.bytesWritten} bytes or more before the object`,
    );
}

/** A document the engine refused before anything was sent, as the client's error (its line or record, never its bytes). */
function documentFailure(error: unknown): S3Error {
  if (error instanceof DocumentError) {
    const where = error.where.line !== undefined ? ` (line ${error.where.line})` : error.where.record !== undefined ? ` (record ${error.where.record})` : "";
    return new S3Error("InvalidObjectState", `the object is not a well-formed document and cannot be redacted: ${error.code}${where}`, { status: 422 });
  }
  return new S3Error("InternalError", "the object could not be redacted now; nothing was released", { cause: error });
}
