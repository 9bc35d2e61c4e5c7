import { EventEmitter } from "node:events";
import { setTimeout as sleep } from "node:timers/promises";
import type { KV, KvWatchEntry } from "@nats-io/kv";
import { KvWatchInclude } from "@nats-io/kv";
import type { QueuedIterator } from "@nats-io/transport-node";
import type { Logger } from "pino";
import { addressOfStateKey, stateKey } from "./addressing";
import { RevisionedKv, type Revisioned } from "./revisioned-kv";
import type { ActorDefinition, AnyHandler } from "./types";

/**
 * A read-through cache of one actor type's committed state, kept near a caller on a hot path
 * (a proxy deciding about rows, the gateway redacting a record), so that it pays no network
 * round trip per row once warm. It watches the state bucket for that type and replaces or
 * drops entries as actors commit, and tells listeners ("change", id, revision). When its watch
 * is lost, changes may have been missed: it empties itself and tells listeners ("reset") to
 * forget what they derived from it.
 *
 * Reads never go through the actor: they see committed state only, at least as new as the
 * last change this node has been told of.
 */
export class StateCache<S> extends EventEmitter {
  private readonly entries = new Map<string, Revisioned<S>>();
  private readonly store: RevisionedKv<S>;
  private watcher?: QueuedIterator<KvWatchEntry>;
  private stopped = false;
  /** False while the watch is down: reads then go to JetStream and are not kept. */
  private live = true;

  constructor(
    private readonly kv: KV,
    private readonly definition: ActorDefinition<S, Record<string, AnyHandler<S>>>,
    private readonly log: Logger,
    private readonly maxEntries = 100_000,
  ) {
    super();
    this.store = new RevisionedKv<S>(kv);
  }

  async start(): Promise<void> {
    this.watcher = await this.watch();
    void this.consume();
  }

  private watch(): Promise<QueuedIterator<KvWatchEntry>> {
    return this.kv.watch({ key: `${this.definition.type}.>`, include: KvWatchInclude.UpdatesOnly });
  }

  /** Applies changes until stopped; when the watch ends on its own the cache is emptied and the watch started again. */
  private async consume(): Promise<void> {
    while (!this.stopped) {
      try {
        // Only a watch that was actually created is iterated: an ended one cannot be again.
        if (this.watcher)
          for await (const entry of this.watcher) {
            const { id } = addressOfStateKey(entry.key);
            this.remember(id, { value: entry.operation === "PUT" ? entry.json<S>() : undefined, revision: entry.revision });
            this.emit("change", id, entry.revision);
          }
      } catch (error) {
        this.log.error({ err: error, type: this.definition.type }, "state cache watch failed");
      }
      if (this.stopped) return;
      // Changes may have been missed: nothing cached can be trusted any more, and nothing read
      // until a new watch is live may be kept (a change in between would never be delivered).
      this.live = false;
      this.watcher = undefined;
      this.entries.clear();
      this.emit("reset");
      this.log.warn({ type: this.definition.type }, "state cache watch ended; cache emptied, watch started again");
      await sleep(250);
      try {
        this.watcher = await this.watch();
        this.entries.clear();
        this.live = true;
      } catch (error) {
        this.log.warn({ err: error, type: this.definition.type }, "restarting the state cache watch failed; will retry");
      }
    }
  }

  /** Keeps the newest revision seen for an id; the least recently stored entry goes first when full. */
  private remember(id: string, state: Revisioned<S>): void {
    const current = this.entries.get(id);
    if (current && current.revision >= state.revision) return;
    this.entries.delete(id);
    this.entries.set(id, state);
    if (this.entries.size > this.maxEntries) this.entries.delete(this.entries.keys().next().value as string);
  }

  /** The committed state (the definition's initial state when none is stored) and its revision. */
  async get(id: string): Promise<{ state: S; revision: number }> {
    let cached = this.entries.get(id);
    if (!cached) {
      const stored = await this.store.read(stateKey(this.definition.type, id));
      if (!this.live) return { state: stored.value ?? this.definition.initialState(), revision: stored.revision };
      this.remember(id, stored);
      cached = this.entries.get(id)!;
    }
    return { state: cached.value ?? this.definition.initialState(), revision: cached.revision };
  }

  /** Drops an entry: the next read goes to JetStream (a caller that just wrote reads its own write). */
  forget(id: string): void {
    this.entries.delete(id);
  }

  /** The cached entry without any I/O, or undefined when this id is not cached. */
  peek(id: string): { state: S; revision: number } | undefined {
    const cached = this.entries.get(id);
    return cached && { state: cached.value ?? this.definition.initialState(), revision: cached.revision };
  }

  stop(): void {
    this.stopped = true;
    this.watcher?.stop();
  }
}
