import type { JetStreamClient, JetStreamManager, PubAck } from "@nats-io/jetstream";
import { documentStream } from "./subjects";

/** Bytes per stored chunk: well under NATS's default 1 MiB message limit. */
const chunkBytes = 256 * 1024;
/** Chunks published and not yet acknowledged: bounds memory and keeps the stream busy. */
const window = 8;

export interface StoredDocument {
  bytes: number;
  chunks: number;
}

/**
 * Writes a document to one subject of the WARDEN_REDACT stream in fixed-size chunks, in order
 * (one connection keeps publish order), with at most `window` chunks awaiting their ack. Any
 * failed publish fails the whole write: nothing is retried, so nothing is duplicated.
 */
export class ChunkWriter {
  private readonly pending: Array<Promise<PubAck>> = [];
  private buffered: Buffer[] = [];
  private bufferedBytes = 0;
  private bytes = 0;
  private chunks = 0;

  constructor(
    private readonly js: JetStreamClient,
    readonly subject: string,
  ) {}

  async write(data: Buffer): Promise<void> {
    if (data.length === 0) return;
    this.buffered.push(data);
    this.bufferedBytes += data.length;
    while (this.bufferedBytes >= chunkBytes) {
      const all = this.buffered.length === 1 ? this.buffered[0] : Buffer.concat(this.buffered);
      await this.publish(all.subarray(0, chunkBytes));
      const rest = all.subarray(chunkBytes);
      this.buffered = rest.length > 0 ? [rest] : [];
      this.bufferedBytes = rest.length;
    }
  }

  /** Waits for every publish in flight, whatever its outcome (before deleting what was written). */
  async settle(): Promise<void> {
    await Promise.allSettled(this.pending.splice(0));
  }

  async close(): Promise<StoredDocument> {
    if (this.bufferedBytes > 0) await this.publish(Buffer.concat(this.buffered));
    this.buffered = [];
    this.bufferedBytes = 0;
    await Promise.all(this.pending.splice(0));
    return { bytes: this.bytes, chunks: this.chunks };
  }

  private async publish(chunk: Buffer): Promise<void> {
    const ack = this.js.publish(this.subject, chunk);
    ack.catch(() => undefined); // awaited below or in close(); marked handled meanwhile
    this.pending.push(ack);
    this.bytes += chunk.length;
    this.chunks++;
    if (this.pending.length >= window) await this.pending.shift();
  }
}

/** How long a read waits for the next chunk before checking that the stream still holds the document. */
const idleCheckMs = 2000;

/** The number of chunks the stream holds on a subject. */
async function chunksHeld(jsm: JetStreamManager, subject: string): Promise<number> {
  const info = await jsm.streams.info(documentStream.name, { subjects_filter: subject });
  return info.state.subjects?.[subject] ?? 0;
}

/** Why a stored document cannot be read whole (the stream does not hold all of its chunks), or undefined when it can. */
export async function missingChunks(jsm: JetStreamManager, subject: string, stored: StoredDocument): Promise<Error | undefined> {
  const held = await chunksHeld(jsm, subject);
  return held === stored.chunks ? undefined : new Error(`the stream holds ${held} of the ${stored.chunks} chunks of ${subject}`);
}

/**
 * Reads a stored document's chunks in order. Fails when the stream does not hold all of them,
 * before reading and whenever the next chunk is slow to come (a deleted or expired document
 * would otherwise leave the reader waiting for ever); `stop` is asked at those moments too.
 */
export async function* readChunks(
  js: JetStreamClient,
  jsm: JetStreamManager,
  subject: string,
  stored: StoredDocument,
  stop?: () => boolean,
): AsyncGenerator<Buffer> {
  if (stored.chunks === 0) return;
  const missing = () => missingChunks(jsm, subject, stored);
  const absent = await missing();
  if (absent) throw absent;
  const consumer = await js.consumers.get(documentStream.name, { filter_subjects: subject });
  const messages = await consumer.consume({ max_messages: window });
  const iterator = messages[Symbol.asyncIterator]();
  let count = 0;
  try {
    while (count < stored.chunks) {
      const next = iterator.next();
      next.catch(() => undefined); // raced below; if it fails after the reader gave up, nobody waits for it
      let result: IteratorResult<{ data: Uint8Array }> | undefined;
      while (!result) {
        let timer: NodeJS.Timeout | undefined;
        const idle = new Promise<undefined>((resolve) => (timer = setTimeout(() => resolve(undefined), idleCheckMs)));
        result = await Promise.race([next, idle]);
        clearTimeout(timer);
        if (result) break;
        if (stop?.()) throw new Error(`stopped reading ${subject}`);
        const gone = await missing();
        if (gone) throw gone;
      }
      if (result.done) break;
      count++;
      const { data } = result.value;
      yield Buffer.from(data.buffer, data.byteOffset, data.byteLength);
    }
  } finally {
    // stop(), not close(): close() waits for an iterator nobody drives any more.
    messages.stop();
    await consumer.delete().catch(() => undefined);
  }
  if (count !== stored.chunks) throw new Error(`read ${count} of the ${stored.chunks} chunks of ${subject}`);
}

/** Deletes every message on the subjects matching `filter`. */
export async function purgeDocuments(jsm: JetStreamManager, filter: string): Promise<void> {
  await jsm.streams.purge(documentStream.name, { filter });
}
