import { inject, injectable } from "tsyringe";
import type { Logger } from "pino";
import { Buckets, partitionKey } from "./addressing";
import { Tokens, type RuntimeBuckets } from "./tokens";
import type { PartitionRecord } from "./types";
import { WatchedBucket, type WatchedEntry } from "./watched-bucket";

/** An entry the watch has not delivered this long after it was written means the watch stalled. */
const staleAfterMs = 2000;

/**
 * Who owns which partition, as recorded in JetStream. Every node and every client keeps this
 * replica; callers route by it, owners are decided by revision-checked writes to it.
 */
@injectable()
export class PartitionTable extends WatchedBucket<PartitionRecord> {
  private waiters: Array<() => void> = [];
  /** Calls in flight, each told when its partition's owner is no longer the one it called. */
  private readonly ownerWatches = new Set<{ partition: number; incarnation: string; left: () => void }>();
  private lastRestart = 0;

  constructor(@inject(Tokens.Buckets) buckets: RuntimeBuckets, @inject(Tokens.Logger) log: Logger) {
    super(Buckets.partitions, buckets.partitions, log);
    this.on("change", () => {
      const waiters = this.waiters;
      this.waiters = [];
      for (const wake of waiters) wake();
      for (const watch of this.ownerWatches) {
        if (this.ownerOf(watch.partition)?.incarnation === watch.incarnation) continue;
        this.ownerWatches.delete(watch);
        watch.left();
      }
    });
  }

  /**
   * Resolves once the partition is recorded with another owner than `incarnation`, or none (the
   * caller then asks whether that owner is gone, and its call with it). `stop` ends the watch.
   */
  ownerLeft(partition: number, incarnation: string): { left: Promise<void>; stop: () => void } {
    let watch!: { partition: number; incarnation: string; left: () => void };
    const left = new Promise<void>((resolve) => {
      watch = { partition, incarnation, left: resolve };
    });
    this.ownerWatches.add(watch);
    return { left, stop: () => this.ownerWatches.delete(watch) };
  }

  entry(partition: number): WatchedEntry<PartitionRecord> | undefined {
    return this.get(partitionKey(partition));
  }

  /** The incarnation currently recorded as owner, if any. */
  ownerOf(partition: number): PartitionRecord | undefined {
    const record = this.entry(partition)?.value;
    return record?.owner ? record : undefined;
  }

  /**
   * Reads one partition's entry from JetStream itself. Callers use it when routing fails: the
   * watch that keeps this replica can lag (a stalled consumer after a server died).
   */
  async refresh(partition: number): Promise<void> {
    const key = partitionKey(partition);
    const entry = await this.kv.get(key);
    if (!entry) return;
    this.applyOwnWrite(key, entry.operation === "PUT" ? entry.json<PartitionRecord>() : undefined, entry.revision);
    // JetStream knows a newer entry than the watch delivered long after it was written: the watch stalled.
    if (entry.revision > this.watchedRevision(key) && Date.now() - entry.created.getTime() > staleAfterMs && Date.now() - this.lastRestart > staleAfterMs) {
      this.lastRestart = Date.now();
      this.restartWatch();
    }
  }

  /** Resolves at the next change of the table, or after `ms`, whichever comes first. */
  nextChange(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const wake = () => {
        clearTimeout(timer);
        resolve();
      };
      const timer = setTimeout(() => {
        this.waiters = this.waiters.filter((waiter) => waiter !== wake);
        resolve();
      }, ms);
      this.waiters.push(wake);
    });
  }
}
