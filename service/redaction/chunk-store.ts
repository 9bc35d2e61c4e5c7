import type { JetStreamClient, JetStreamManager, PubAck } from "@nats-io/jetstream";
import { Streams } from "../../actors/runtime/addressing";

/** Bytes per stored chunk: well under NATS's default 1 MiB message limit. */
export const chunkBytes = 256 * 1024;
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

/** Reads a stored document's chunks in order; fails when the stream no longer holds all of them. */
export async function* readChunks(js: JetStreamClient, jsm: JetStreamManager, subject: string, stored: StoredDocument): AsyncGenerator<Buffer> {
  if (stored.chunks === 0) return;
  const info = await jsm.streams.info(Streams.redact.name, { subjects_filter: subject });
  const held = info.state.subjects?.[subject] ?? 0;
  if (held !== stored.chunks) throw new Error(`the stream holds ${held} of the ${stored.chunks} chunks of ${subject}`);
  const consumer = await js.consumers.get(Streams.redact.name, { filter_subjects: subject });
  const messages = await consumer.consume({ max_messages: window });
  let count = 0;
  try {
    for await (const message of messages) {
      count++;
      yield Buffer.from(message.data.buffer, message.data.byteOffset, message.data.byteLength);
      if (count === stored.chunks) break;
    }
  } finally {
    await messages.close().catch(() => undefined);
  }
  if (count !== stored.chunks) throw new Error(`read ${count} of the ${stored.chunks} chunks of ${subject}`);
}

/** Deletes every message on the subjects matching `filter`. */
export async function purgeDocuments(jsm: JetStreamManager, filter: string): Promise<void> {
  await jsm.streams.purge(Streams.redact.name, { filter });
}
