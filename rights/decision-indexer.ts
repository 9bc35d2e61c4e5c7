import { DeliverPolicy, jetstream, type JsMsg } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import type { Logger } from "pino";
import { Streams } from "../actors/runtime/addressing";
import type { IndexedEvent } from "../api/subject-rights";
import { decisionOf, foldMessages, type MessageEvents, type UserIndexEntry } from "./decision-index";
import type { IndexBucket } from "./index-bucket";

const fetchMessages = 512;
/** Messages folded at once at most, and queued at most before the reader waits. */
const maxBatch = 2048;
const maxQueued = 8192;
/**
 * Least time between two folds: under load the indexer writes each busy user's entry and the
 * watermark a few times a second, not once per trace message (the cost the decision bench
 * measures); a report waits at most this much longer for the last decisions.
 */
const foldIntervalMs = 200;
const idlePauseMs = 250;
/** Entries kept in memory by the indexer, so a busy user costs one write per batch, not a read and a write. */
const cachedEntries = 20_000;
const writeConcurrency = 32;

/**
 * Folds the stored trace stream into the per-user decision index (docs/subject-rights.md).
 * It reads the stream in order from the watermark (an ordered consumer, one for the cluster,
 * started again from the stored watermark on whichever node takes over), folds each message's
 * decisions into their users' entries (each entry remembers the last message folded, so a
 * message folded twice after a crash counts once), and moves the watermark on only after
 * every entry of a batch is written. Nothing a door answered can be missing: the answer left
 * after its record was stored, and the indexer reads every stored record.
 */
export class DecisionIndexer {
  private running = false;
  private loop?: Promise<void>;
  private readonly cache = new Map<string, { entry: UserIndexEntry; revision: number }>();

  constructor(
    private readonly nc: NatsConnection,
    private readonly bucket: IndexBucket,
    private readonly log: Logger,
    /** Whether this node is the indexer now (it owns the indexer's partition, its lease holds): told by the node's thread. */
    private readonly isIndexer: () => boolean,
  ) {}

  start(): void {
    this.running = true;
    this.loop = this.run();
  }

  async stop(): Promise<void> {
    this.running = false;
    await this.loop;
  }

  private owns(): boolean {
    return this.running && this.isIndexer();
  }

  private async run(): Promise<void> {
    while (this.running) {
      try {
        if (this.owns()) await this.follow();
      } catch (error) {
        this.log.warn({ err: error }, "decision indexer interrupted; it starts again from its watermark");
      }
      await pause(idlePauseMs);
    }
  }

  /** Reads the trace from the watermark while this node is the indexer; returns when it is not any more, or another indexer moved the watermark. */
  private async follow(): Promise<void> {
    this.cache.clear();
    let watermark = await this.bucket.watermark();
    this.log.info({ watermark: watermark.seq }, "this node indexes the decision trace");
    const consumer = await jetstream(this.nc).consumers.get(Streams.trace.name, {
      deliver_policy: watermark.seq === 0 ? DeliverPolicy.All : DeliverPolicy.StartSequence,
      ...(watermark.seq === 0 ? {} : { opt_start_seq: watermark.seq + 1 }),
    });
    const messages = await consumer.consume({ max_messages: fetchMessages });
    // The reader queues what arrives; the loop below folds whatever queued while it folded the last batch.
    const queue: JsMsg[] = [];
    let wake: (() => void) | undefined;
    let ended = false;
    const reading = (async () => {
      for await (const message of messages) {
        queue.push(message);
        wake?.();
        while (queue.length > maxQueued && this.owns()) await pause(5);
      }
    })().finally(() => {
      ended = true;
      wake?.();
    });
    let lastFold = 0;
    try {
      while (this.owns() && !ended) {
        if (queue.length === 0) {
          await new Promise<void>((resolve) => {
            wake = resolve;
            setTimeout(resolve, idlePauseMs);
          });
          wake = undefined;
          continue;
        }
        // Coalesce: at most one fold per interval (a user's entry and the watermark are written once for every message that came meanwhile).
        const since = performance.now() - lastFold;
        if (since < foldIntervalMs && queue.length < maxBatch) await pause(foldIntervalMs - since);
        lastFold = performance.now();
        const fresh = queue.splice(0, maxBatch).filter((message) => message.seq > watermark.seq);
        if (fresh.length === 0) continue;
        await this.foldBatch(fresh);
        const last = fresh[fresh.length - 1]!.seq;
        const revision = await this.bucket.advance(last, watermark.revision);
        if (revision === undefined) return;
        watermark = { seq: last, revision };
      }
    } finally {
      await messages.close().catch(() => undefined);
      await reading.catch(() => undefined);
      await consumer.delete().catch(() => undefined);
    }
  }

  private async foldBatch(messages: readonly JsMsg[]): Promise<void> {
    const byUser = new Map<string, Array<{ seq: number; events: IndexedEvent[] }>>();
    for (const message of messages) {
      const perUser = new Map<string, IndexedEvent[]>();
      for (const line of message.string().split("\n")) {
        let record: unknown;
        try {
          record = JSON.parse(line);
        } catch {
          continue;
        }
        const decision = typeof record === "object" && record !== null ? decisionOf(record as Record<string, unknown>) : undefined;
        if (!decision) continue;
        const { userId, ...event } = decision;
        let events = perUser.get(userId);
        if (!events) perUser.set(userId, (events = []));
        events.push(event);
      }
      for (const [userId, events] of perUser) {
        let folds = byUser.get(userId);
        if (!folds) byUser.set(userId, (folds = []));
        folds.push({ seq: message.seq, events });
      }
    }
    const users = [...byUser];
    for (let i = 0; i < users.length; i += writeConcurrency)
      await Promise.all(users.slice(i, i + writeConcurrency).map(([userId, folds]) => this.foldUser(userId, folds)));
  }

  /** Folds a user's messages of the batch into their entry, revision-checked; a conflicting write (an erasure) is read again and folded again. */
  private async foldUser(userId: string, folds: readonly MessageEvents[]): Promise<void> {
    const now = new Date();
    for (;;) {
      const current = this.cache.get(userId) ?? (await this.bucket.entry(userId));
      const entry = foldMessages(current.entry, folds, now);
      if (entry === current.entry) return;
      const written = await this.bucket.write(userId, entry, current.revision);
      if (written !== undefined) {
        this.remember(userId, { entry, revision: written });
        return;
      }
      this.cache.delete(userId);
      if (!this.owns()) throw new Error("no longer the decision indexer");
    }
  }

  private remember(userId: string, value: { entry: UserIndexEntry; revision: number }): void {
    this.cache.delete(userId);
    this.cache.set(userId, value);
    if (this.cache.size > cachedEntries) this.cache.delete(this.cache.keys().next().value as string);
  }
}

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
