import { jetstreamManager, type JetStreamManager } from "@nats-io/jetstream";
import { Kvm, type KV } from "@nats-io/kv";
import type { NatsConnection } from "@nats-io/transport-node";
import { encodeId, Streams } from "../actors/runtime/addressing";
import { openBucket } from "../actors/runtime/provision";
import { RetryableError } from "../actors/runtime/errors";
import { emptyEntry, type UserIndexEntry } from "./decision-index";

/** The decision index: one key per user (`u.<encoded id>`), and the watermark (the last trace stream sequence folded in). */
export const decisionIndexBucket = "warden_decision_index";
const watermarkKey = "watermark";
export const userKey = (userId: string): string => `u.${encodeId(userId)}`;

/** How long a report waits for the indexer to reach the last stored decision. */
const catchUpMs = 10_000;
const catchUpPollMs = 20;

/** The index bucket: entries and watermark, read and written revision-checked. */
export class IndexBucket {
  private constructor(
    readonly kv: KV,
    private readonly jsm: JetStreamManager,
  ) {}

  static async open(nc: NatsConnection, replicas: number): Promise<IndexBucket> {
    return new IndexBucket(await openBucket(new Kvm(nc), decisionIndexBucket, replicas), await jetstreamManager(nc));
  }

  /** A user's entry and its revision (0: none yet). */
  async entry(userId: string): Promise<{ entry: UserIndexEntry; revision: number }> {
    const stored = await this.kv.get(userKey(userId));
    if (stored?.operation !== "PUT") return { entry: emptyEntry(), revision: stored?.revision ?? 0 };
    return { entry: stored.json<UserIndexEntry>(), revision: stored.revision };
  }

  /** Writes an entry if it is still at `revision` and returns its new revision; undefined when another writer got there first. */
  async write(userId: string, entry: UserIndexEntry, revision: number): Promise<number | undefined> {
    return this.compareAndSet(userKey(userId), JSON.stringify(entry), revision);
  }

  private async compareAndSet(key: string, value: string, revision: number): Promise<number | undefined> {
    try {
      return revision === 0 ? await this.kv.create(key, value) : await this.kv.update(key, value, revision);
    } catch (error) {
      if (/wrong last sequence|key exists/i.test(String((error as Error).message))) return undefined;
      throw error;
    }
  }

  async watermark(): Promise<{ seq: number; revision: number }> {
    const stored = await this.kv.get(watermarkKey);
    return stored?.operation === "PUT" ? { seq: Number(stored.string()), revision: stored.revision } : { seq: 0, revision: stored?.revision ?? 0 };
  }

  /** Moves the watermark on from `revision`; false when another indexer moved it (this one then steps back and reads again). */
  advance(seq: number, revision: number): Promise<number | undefined> {
    return this.compareAndSet(watermarkKey, String(seq), revision);
  }

  /** The trace stream's last sequence: every decision answered so far is at or below it. */
  async traceHead(): Promise<number> {
    return (await this.jsm.streams.info(Streams.trace.name)).state.last_seq;
  }

  /**
   * Waits until the index holds every decision stored before this call (so nothing already
   * answered is missing from a report); INDEX_BEHIND (503) when the indexer does not get there in time.
   */
  async caughtUp(): Promise<number> {
    const head = await this.traceHead();
    const until = performance.now() + catchUpMs;
    for (;;) {
      const { seq } = await this.watermark();
      if (seq >= head) return head;
      if (performance.now() > until) throw new RetryableError("INDEX_BEHIND", `the decision index is at trace record ${seq} of ${head}; try again in a moment`);
      await new Promise((resolve) => setTimeout(resolve, catchUpPollMs));
    }
  }
}
