import { EventEmitter } from "node:events";
import { performance } from "node:perf_hooks";
import { setTimeout as sleep } from "node:timers/promises";
import { KvWatchInclude, type KV, type KvWatchEntry } from "@nats-io/kv";
import type { QueuedIterator } from "@nats-io/transport-node";
import type { Logger } from "pino";

export interface WatchedEntry<T> {
  value: T;
  revision: number;
  /** Local monotonic time (ms) at which this node saw the entry change. */
  seenAt: number;
}

/**
 * A local replica of a small KV bucket, kept current by a watch. Emits "change" with the key
 * after every update. `ready` resolves once the bucket's existing content has been read.
 */
export class WatchedBucket<T> extends EventEmitter {
  private readonly entries = new Map<string, WatchedEntry<T>>();
  private watcher?: QueuedIterator<KvWatchEntry>;
  private stopped = false;
  private readonly delivered = new Map<string, number>();
  private resolveReady!: () => void;
  readonly ready = new Promise<void>((resolve) => (this.resolveReady = resolve));

  constructor(
    readonly name: string,
    readonly kv: KV,
    private readonly log: Logger,
    /** Only keys matching this filter (e.g. `redaction-job.>`); all keys when absent. */
    private readonly keyFilter?: string,
  ) {
    super();
  }

  /**
   * Starts the watch, then reads every key once: the replica is complete when `ready` resolves,
   * whatever the watch's initial delivery does (it can deliver nothing that marks it caught up,
   * for instance over a recovering stream). Changes during the read come through the watch;
   * older revisions are ignored.
   */
  async start(): Promise<void> {
    this.watcher = await this.kv.watch({ include: KvWatchInclude.UpdatesOnly, ...(this.keyFilter ? { key: this.keyFilter } : {}) });
    void this.consume();
    for await (const key of await this.kv.keys(this.keyFilter)) {
      const entry = await this.kv.get(key);
      if (entry) this.applyOwnWrite(key, entry.operation === "PUT" ? entry.json<T>() : undefined, entry.revision);
    }
    this.resolveReady();
  }

  /** Applies changes until stopped; a watch that ends on its own is started again (a stale replica is worse than none). */
  private async consume(): Promise<void> {
    while (!this.stopped) {
      try {
        // Only a watch that was actually created is iterated: an ended one cannot be again.
        if (this.watcher)
          for await (const entry of this.watcher) {
            try {
              this.apply(entry);
            } catch (error) {
              // A listener's failure must not end the watch: the replica would silently go stale.
              this.log.error({ err: error, bucket: this.name, key: entry.key }, "handling a bucket change failed");
            }
          }
      } catch (error) {
        this.log.error({ err: error, bucket: this.name }, "bucket watch failed");
      }
      if (this.stopped) return;
      this.watcher = undefined;
      this.log.warn({ bucket: this.name }, "bucket watch ended; starting it again");
      await sleep(250);
      try {
        this.watcher = await this.kv.watch(this.keyFilter ? { key: this.keyFilter } : {}); // current values again (older revisions are ignored), then updates
      } catch (error) {
        this.log.warn({ err: error, bucket: this.name }, "restarting the bucket watch failed; will retry");
      }
    }
  }

  /** The newest revision of `key` the watch itself delivered (own writes recorded directly do not count). */
  watchedRevision(key: string): number {
    return this.delivered.get(key) ?? 0;
  }

  /** Replaces a watch that stalled without ending (the consume loop starts a new one). */
  restartWatch(): void {
    this.log.warn({ bucket: this.name }, "restarting a stalled bucket watch");
    this.watcher?.stop();
  }

  private apply(entry: KvWatchEntry): void {
    this.delivered.set(entry.key, Math.max(entry.revision, this.delivered.get(entry.key) ?? 0));
    const current = this.entries.get(entry.key);
    if (current && current.revision >= entry.revision) return;
    if (entry.operation === "PUT") {
      this.entries.set(entry.key, { value: entry.json<T>(), revision: entry.revision, seenAt: performance.now() });
    } else {
      this.entries.delete(entry.key);
    }
    this.emit("change", entry.key);
  }

  /** Records a write this node made itself, without waiting for the watch to echo it. */
  applyOwnWrite(key: string, value: T | undefined, revision: number): void {
    const current = this.entries.get(key);
    if (current && current.revision >= revision) return;
    if (value === undefined) this.entries.delete(key);
    else this.entries.set(key, { value, revision, seenAt: performance.now() });
    this.emit("change", key);
  }

  get(key: string): WatchedEntry<T> | undefined {
    return this.entries.get(key);
  }

  all(): IterableIterator<[string, WatchedEntry<T>]> {
    return this.entries.entries();
  }

  stop(): void {
    this.stopped = true;
    this.watcher?.stop();
  }
}
