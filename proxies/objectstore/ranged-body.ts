import { setMaxListeners } from "node:events";
import { NodeBound } from "../../redaction/node-bound";
import type { IncomingMessage } from "node:http";
import type { RangedReads } from "../../actors/export/export-actor";
import { DocumentBufferPool } from "../../redaction/buffer-pool";
import type { DirectInput, InputSink } from "../../redaction/direct-input";
import type { ObjectStore } from "./object-store";
import { S3Error } from "./s3-errors";
import { takeOverBody, type StoreBody } from "./store-body";

/**
 * How a document is read when an export does not say (ExportRecord.rangedReads): in one GET. Ranges
 * read several at once are for stores that serve one connection slower than the export redacts
 * (S3 itself: AWS advises ranged GETs for throughput); against a store on the same two cores
 * they measured no faster (each byte is copied once more, and the store's CPU is shared):
 * docs/objectstore-export.md, "Ranged reads". A `parallel` set without `rangeBytes` reads 8 MiB ranges.
 */
export const defaultRangedReads: RangedReads = { parallel: 1, rangeBytes: 8 << 20 };

/** An export's ranged reads, each setting it leaves out taking its default. */
export function rangedReadsOf(set: Partial<RangedReads> | undefined): RangedReads {
  return { ...defaultRangedReads, ...set };
}

/** Sends the GET of bytes `start` to `end` (inclusive) of the object, with If-Match `etag`; resolves with the store's answer (any status). */
export type RangeFetch = (start: number, end: number, etag: string, signal: AbortSignal) => Promise<IncomingMessage>;

/** The node's bound on range bytes when OBJECTSTORE_RANGE_MEMORY_BYTES does not set one. */
export const rangeMemoryBytes = 64 << 20;

/**
 * Bytes of range buffers a node holds at once, over every GetObject of every export: a GetObject
 * whose first range does not fit is read in one GET, and one whose later ranges do not fit reads
 * fewer at once (at least its first), so clients that open many GetObjects and read nothing hold
 * no more than `limit` in ranges (OBJECTSTORE_RANGE_MEMORY_BYTES). docs/objectstore-export.md, "Ranged reads".
 */
export const rangeMemory = new NodeBound(rangeMemoryBytes);

/** Sets the node's bound on range bytes held at once (OBJECTSTORE_RANGE_MEMORY_BYTES). */
export function limitRangeMemory(bytes: number): void {
  rangeMemory.limit = bytes;
}

/** The store's first answer to a GetObject: the object whole in one answer, or read in ranges by `ranged`. */
export interface StoredObject {
  /** The one answer; with `ranged`, the answer of the first range (its headers name the object's type and version). */
  answer: IncomingMessage;
  /** The stored object's length (NaN when the store did not say). */
  length: number;
  /** The object's body read in ranges; nothing is asked for past the first range before its first `resume`. */
  ranged?: RangedStoreBody;
}

/** Drops a stored object that will not be read: its ranges (and the range memory they hold), else its one answer. */
export function discardStored({ answer, ranged }: Pick<StoredObject, "answer" | "ranged">): void {
  if (ranged) ranged.destroy();
  else answer.destroy();
}

/**
 * Asks the store for an object (`path`), as its first range when it may be read in ranges. The
 * object is read whole in one answer when the export reads so (`parallel: 1`), when the store
 * ignores Range (200), when the first range is the whole object, when the node holds its range
 * bytes already (OBJECTSTORE_RANGE_MEMORY_BYTES), or when the first range cannot be tied to one version of the
 * object: no strong ETag (so no later range can be checked to be of the same bytes), an answer
 * that is not exactly the range asked for (Content-Range `0-end/total` and its Content-Length), or
 * 416 (an empty object); the answer of the first range is dropped then and the object asked for
 * again without a Range. Any other status is handed back as it is (the caller refuses it); a 206
 * handed back is always a range checked here, never the answer to a GET without Range.
 */
export async function storedObject(store: ObjectStore, path: string, reads: RangedReads, signal: AbortSignal): Promise<StoredObject> {
  const whole = async (): Promise<StoredObject> => {
    const answer = await store.send({ method: "GET", path, signal });
    if (answer.statusCode === 206) {
      answer.destroy();
      throw new S3Error("InternalError", "the store answered a GET of the whole object with a part of it (206); nothing was released");
    }
    return { answer, length: Number(answer.headers["content-length"]) };
  };
  if (reads.parallel <= 1) return whole();
  const first = await store.send({ method: "GET", path, headers: { range: `bytes=0-${reads.rangeBytes - 1}` }, signal });
  if (first.statusCode === 200) return { answer: first, length: Number(first.headers["content-length"]) };
  if (first.statusCode !== 206 && first.statusCode !== 416) return { answer: first, length: Number.NaN };
  const range = first.statusCode === 206 ? contentRange(first) : undefined;
  const etag = first.headers.etag;
  const asked =
    range !== undefined &&
    range.start === 0 &&
    range.end === Math.min(reads.rangeBytes, range.total) - 1 &&
    Number(first.headers["content-length"]) === range.end + 1;
  if (!asked || !isStrongEtag(etag)) {
    first.destroy();
    return whole();
  }
  if (range.end + 1 === range.total) return { answer: first, length: range.total };
  if (!rangeMemory.take(reads.rangeBytes)) {
    first.destroy();
    return whole();
  }
  const rest: RangeFetch = (start, end, ifMatch, rangeSignal) =>
    store.send({ method: "GET", path, headers: { range: `bytes=${start}-${end}`, "if-match": ifMatch }, signal: rangeSignal });
  return { answer: first, length: range.total, ranged: new RangedStoreBody(first, range.total, reads, rest, signal) };
}

/** A strong ETag names one version of an object's bytes (a weak one, W/"...", does not: RFC 9110 8.8.3). */
function isStrongEtag(etag: string | undefined): etag is string {
  return etag !== undefined && /^"[^"]*"$/.test(etag);
}

/**
 * Range buffers kept for reuse by every document (zeroed when another document's bytes are in them,
 * as block buffers are): at most four, of at most the default range size, so an idle node holds
 * at most 32 MiB of them; a range takes a kept buffer of exactly its size.
 */
const spare = new DocumentBufferPool(4);

/** The `Content-Range` of a 206: first byte, last byte, whole length; undefined when it is not of that form. */
export function contentRange(response: IncomingMessage): { start: number; end: number; total: number } | undefined {
  const match = /^bytes (\d+)-(\d+)\/(\d+)$/.exec(response.headers["content-range"] ?? "");
  if (!match) return undefined;
  const [start, end, total] = [Number(match[1]), Number(match[2]), Number(match[3])];
  return Number.isSafeInteger(total) && start <= end && end < total ? { start, end, total } : undefined;
}

/** A range of the object being read into a buffer of its own (the sink of its answer's body). */
class Range implements InputSink {
  received = 0;
  delivered = 0;
  done = false;
  error?: Error;
  body?: StoreBody | IncomingMessage;

  constructor(
    readonly start: number,
    readonly buffer: Buffer,
    private readonly changed: () => void,
  ) {}

  get length(): number {
    return this.buffer.length;
  }

  room(): Buffer {
    return this.buffer.subarray(this.received);
  }

  arrived(bytes: Buffer): boolean {
    if (this.done) return false;
    const inPlace = bytes.buffer === this.buffer.buffer && bytes.byteOffset === this.buffer.byteOffset + this.received;
    if (bytes.length > this.length - this.received) {
      this.ended(new Error(`the store sent more than the range of ${this.length} bytes at ${this.start}`));
      return false;
    }
    if (!inPlace) bytes.copy(this.buffer, this.received);
    this.received += bytes.length;
    this.changed();
    return true;
  }

  ended(error?: Error): void {
    if (this.done) return;
    this.done = true;
    this.error =
      error ?? (this.received < this.length ? new Error(`the store's range at ${this.start} ended after ${this.received} of ${this.length} bytes`) : undefined);
    this.changed();
  }

  /** Stops the range's body (nothing more is written into its buffer). */
  stop(): void {
    if (!this.body) return;
    if ("readInto" in this.body) this.body.destroy(new Error("the object's reading ended"));
    else this.body.destroy();
  }
}

/**
 * An object's body read as consecutive ranges, several at once, each on a connection of its own:
 * a store serves one stream at the pace of its own reads and writes, and several streams faster
 * (AWS advises ranged GETs for throughput). The first range is the answer the GET already has
 * (asked with a Range); the next ones are asked for as earlier ones are handed on, with
 * If-Match, each answer checked to be the asked range of the same object (its ETag and length),
 * so ranges of two versions of an object are never joined. Bytes are handed to the sink in the
 * object's order, each copied once from its range's buffer into the sink's room; a range that
 * fails fails the whole body. Memory: `parallel` buffers of `rangeBytes`. docs/objectstore-export.md.
 */
export class RangedStoreBody implements DirectInput {
  private readonly ranges: Range[] = [];
  private nextStart: number;
  /** Bytes handed to the sink: the body ends complete only when they are the object's length. */
  private delivered = 0;
  private sink?: InputSink;
  private paused = true;
  private pumping = false;
  private outcome?: { error?: Error };
  private readonly stopped = new AbortController();
  private readonly onAbort = () => this.fail(new Error("the client's request ended before the store's answer"));

  private readonly etag: string;

  /** `first`: the store's answer of the object's first range (storedObject), `total` bytes long; `fetch`: its `rest`. */
  constructor(
    first: IncomingMessage,
    private readonly total: number,
    private readonly reads: RangedReads,
    private readonly fetch: RangeFetch,
    private readonly signal: AbortSignal,
  ) {
    this.etag = first.headers.etag ?? "";
    // Each range in flight listens for the stop twice (its request and its body).
    setMaxListeners(2 * reads.parallel + 2, this.stopped.signal);
    const firstLength = Math.min(reads.rangeBytes, total);
    this.nextStart = firstLength;
    // The first range's bytes were reserved by storedObject.
    this.attach(this.newRange(0, firstLength), first);
    if (signal.aborted) this.onAbort();
    else signal.addEventListener("abort", this.onAbort, { once: true });
  }

  readInto(sink: InputSink): void {
    this.sink = sink;
    if (this.outcome) sink.ended(this.outcome.error);
  }

  pause(): void {
    this.paused = true;
  }

  resume(): void {
    if (this.outcome) return;
    this.paused = false;
    // The later ranges are asked for once the object is read (not, say, while its format is checked).
    this.launch();
    this.pump();
  }

  destroy(error?: Error): void {
    this.fail(error ?? new Error("the store's body was not read to its end"));
  }

  private newRange(start: number, length: number): Range {
    const kept = spare.take(this, this.reads.rangeBytes, this.reads.rangeBytes);
    const buffer = (kept ? Buffer.from(kept) : Buffer.allocUnsafeSlow(this.reads.rangeBytes)).subarray(0, length);
    const range = new Range(start, buffer, () => this.changed(range));
    this.ranges.push(range);
    return range;
  }

  /** Asks for ranges until `parallel` are read or handed on, the node holds its range bytes (OBJECTSTORE_RANGE_MEMORY_BYTES), or the object is all asked for. */
  private launch(): void {
    while (!this.outcome && this.ranges.length < this.reads.parallel && this.nextStart < this.total) {
      // A GetObject with no range in hand (its last one just handed on and given back) always takes the next.
      if (!rangeMemory.take(this.reads.rangeBytes, this.ranges.length === 0)) return;
      const start = this.nextStart;
      const length = Math.min(this.reads.rangeBytes, this.total - start);
      this.nextStart += length;
      const range = this.newRange(start, length);
      this.fetch(start, start + length - 1, this.etag, this.stopped.signal)
        .then(
          (response) => {
            const problem = this.outcome ? undefined : this.mismatch(response, start, length);
            if (this.outcome || problem) {
              response.destroy();
              if (problem) range.ended(problem);
            } else this.attach(range, response);
          },
          (error: Error) => range.ended(error),
        )
        .catch((error: unknown) => this.fail(error as Error));
    }
  }

  /** Why the store's answer is not the range asked for of the object the first answer came from (status, Content-Range, ETag); undefined when it is. */
  private mismatch(response: IncomingMessage, start: number, length: number): Error | undefined {
    if (response.statusCode !== 206)
      return new Error(`the store answered ${response.statusCode} to the range at ${start} (the object changed or went away while it was read)`);
    const range = contentRange(response);
    if (!range || range.start !== start || range.end !== start + length - 1 || range.total !== this.total)
      return new Error(`the store answered the range at ${start} with Content-Range '${response.headers["content-range"] ?? ""}'`);
    if (response.headers.etag !== this.etag)
      return new Error(`the object changed while it was read (ETag ${this.etag}, then ${response.headers.etag ?? "none"})`);
    return undefined;
  }

  /** The range's answer body read into its buffer: off the connection where it can be taken over, else as Node's client hands it out. */
  private attach(range: Range, response: IncomingMessage): void {
    const body = takeOverBody(response, this.stopped.signal);
    if (body) {
      range.body = body;
      body.readInto(range);
      body.resume();
      return;
    }
    range.body = response;
    response.on("data", (chunk: Buffer) => range.arrived(chunk));
    response.on("end", () => range.ended(response.complete ? undefined : new Error("the store's range answer was cut off")));
    response.on("error", (error) => range.ended(error));
  }

  private changed(range: Range): void {
    if (this.outcome) return;
    if (range.error) return this.fail(range.error);
    if (range === this.ranges[0]) this.pump();
  }

  /** Hands the first range's bytes on, in order, while the sink takes them; a range handed on whole makes way for the next. */
  private pump(): void {
    if (this.pumping) return;
    this.pumping = true;
    try {
      while (!this.outcome && this.sink && !this.paused) {
        const head = this.ranges[0];
        if (!head)
          return this.delivered === this.total
            ? this.finish()
            : this.fail(new Error(`the object's ranges ended after ${this.delivered} of ${this.total} bytes`));
        const available = head.received - head.delivered;
        if (available > 0) {
          const room = this.sink.room();
          const length = Math.min(room.length, available);
          head.buffer.copy(room, 0, head.delivered, head.delivered + length);
          head.delivered += length;
          this.delivered += length;
          if (!this.sink.arrived(room.subarray(0, length))) this.paused = true;
          continue;
        }
        if (!head.done) return;
        this.ranges.shift();
        rangeMemory.giveBack(this.reads.rangeBytes);
        if (this.reads.rangeBytes <= defaultRangedReads.rangeBytes) spare.put(head.buffer.buffer as ArrayBuffer, this);
        this.launch();
      }
    } finally {
      this.pumping = false;
    }
  }

  private finish(): void {
    this.outcome = {};
    this.signal.removeEventListener("abort", this.onAbort);
    this.sink?.ended();
  }

  private fail(error: Error): void {
    if (this.outcome) return;
    this.outcome = { error };
    this.paused = true;
    this.signal.removeEventListener("abort", this.onAbort);
    this.stopped.abort();
    for (const range of this.ranges) range.stop();
    rangeMemory.giveBack(this.ranges.length * this.reads.rangeBytes);
    this.ranges.length = 0;
    this.sink?.ended(error);
  }
}
