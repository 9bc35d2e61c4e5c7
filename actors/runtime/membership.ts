import { EventEmitter } from "node:events";
import { performance } from "node:perf_hooks";
import { randomUUID } from "node:crypto";
import { inject, injectable } from "tsyringe";
import type { Logger } from "pino";
import { Buckets } from "./addressing";
import { RevisionedKv } from "./revisioned-kv";
import { StaleRevisionError } from "./errors";
import { Tokens, type RuntimeBuckets } from "./tokens";
import type { NodeRecord, RuntimeOptions } from "./types";
import { WatchedBucket } from "./watched-bucket";

/** How long joining the cluster waits for JetStream to answer (a fresh cluster elects its stream leaders in seconds on 2.9.10). */
const registerRetryMs = 30_000;

/**
 * Cluster membership by leases. Each node renews its own entry every `heartbeatMs` with a
 * revision-checked write. Liveness is judged by each observer's own monotonic clock: a peer
 * whose entry has not changed for `leaseTtlMs` since this node last saw it change is dead.
 * No wall clocks are compared and no server-side TTL is needed (nats-server 2.9 has none
 * usable for this).
 *
 * A node trusts its own lease only until `renewal started + leaseTtlMs - safety margin`:
 * observers start their countdown no earlier than that write, so the node always gives up
 * before anyone may take over. A lease that lapsed is never renewed: the node re-registers
 * as a new incarnation, and everything the old incarnation owned is free.
 *
 * Events: "change" (the set of live nodes may have changed), "incarnation" (this node
 * re-registered after its lease lapsed; everything it owned is gone).
 */
@injectable()
export class Membership extends EventEmitter {
  private readonly store: RevisionedKv<NodeRecord>;
  readonly peers: WatchedBucket<NodeRecord>;
  private record?: NodeRecord;
  private revision = 0;
  private leaseValidUntil = 0;
  private timer?: NodeJS.Timeout;
  private renewing = false;
  /** Lease renewals since start, by outcome (read by the node's metrics): written, failed (retried), lapsed (re-registered). */
  readonly renewals = { ok: 0, failed: 0, lapsed: 0 };
  private ownEntryWrites: Promise<unknown> = Promise.resolve();
  private lastRenewalAt = 0;
  private lastWrittenRevision = 0;
  private lastWrittenAt = 0;
  private stopped = false;
  private lastLiveSignature = "";

  constructor(
    @inject(Tokens.Buckets) buckets: RuntimeBuckets,
    @inject(Tokens.Options) private readonly options: RuntimeOptions,
    @inject(Tokens.Logger) private readonly log: Logger,
  ) {
    super();
    this.store = new RevisionedKv<NodeRecord>(buckets.nodes);
    this.peers = new WatchedBucket<NodeRecord>(Buckets.nodes, buckets.nodes, log);
    this.peers.on("change", () => this.emitIfLiveSetChanged());
  }

  get nodeId(): string {
    return this.options.nodeId;
  }

  /** This node's entry; only read after start() registered it. */
  private get registered(): NodeRecord {
    if (!this.record) throw new Error("membership has not registered yet");
    return this.record;
  }

  get incarnation(): string {
    return this.registered.incarnation;
  }

  /** Margin kept between this node's own view of its lease and its observers' view. */
  private get safetyMarginMs(): number {
    return Math.max(this.options.heartbeatMs / 2, this.options.leaseTtlMs / 10);
  }

  async start(): Promise<void> {
    await this.peers.start();
    await this.peers.ready;
    await this.register();
    this.timer = setInterval(() => void this.tick(), Math.max(50, Math.floor(this.options.heartbeatMs / 2)));
  }

  /** Writes a fresh incarnation over whatever this node id held before. */
  private async register(): Promise<void> {
    const started = performance.now();
    // A cluster that is still electing its stream leaders answers late: joining waits for it (retried reads, and writes that were not delivered).
    const current = await this.store.read(this.nodeId, registerRetryMs);
    this.record = { nodeId: this.nodeId, incarnation: randomUUID().replaceAll("-", ""), startedAt: new Date().toISOString(), leaving: false, heartbeat: 0 };
    this.revision = await this.store.write(this.nodeId, this.record, current.revision, registerRetryMs);
    this.leaseValidUntil = started + this.options.leaseTtlMs - this.safetyMarginMs;
    this.peers.applyOwnWrite(this.nodeId, this.record, this.revision);
    this.noteOwnWrite();
    this.log.info({ incarnation: this.registered.incarnation }, "joined the cluster");
  }

  isLeaseValid(): boolean {
    return !this.stopped && performance.now() < this.leaseValidUntil;
  }

  private async tick(): Promise<void> {
    this.emitIfLiveSetChanged();
    this.checkWatchEcho();
    if (this.renewing || this.stopped) return;
    const now = performance.now();
    if (now - this.lastRenewalAt < this.options.heartbeatMs) return;
    this.renewing = true;
    try {
      await this.exclusively(() => (this.isLeaseValid() ? this.renew() : this.reincarnate()));
      await this.removeLongDeadPeers();
    } catch (error) {
      this.renewals.failed++;
      this.log.warn({ err: error }, "lease renewal failed; will retry");
    } finally {
      this.renewing = false;
    }
  }

  /** The oldest own write the watch has not echoed yet is the one that counts for the stall check. */
  private noteOwnWrite(): void {
    if (this.peers.watchedRevision(this.nodeId) >= this.lastWrittenRevision) this.lastWrittenAt = performance.now();
    this.lastWrittenRevision = this.revision;
  }

  /** Writes to this node's own entry run one at a time: each names the revision the previous one produced. */
  private exclusively<T>(write: () => Promise<T>): Promise<T> {
    const result = this.ownEntryWrites.then(write, write);
    this.ownEntryWrites = result.catch(() => undefined);
    return result;
  }

  /**
   * This node's own renewals must come back through the watch within a few heartbeats. If they
   * do not, the watch has stalled (it can, after a nats-server dies) and this node's view of its
   * peers is stale: the watches are restarted ("stalled" tells the others to restart theirs).
   */
  private checkWatchEcho(): void {
    if (!this.record || this.lastWrittenAt === 0) return;
    const overdue = performance.now() - this.lastWrittenAt > this.options.heartbeatMs * 3;
    if (overdue && this.peers.watchedRevision(this.nodeId) < this.lastWrittenRevision) {
      this.lastWrittenAt = performance.now(); // one restart per grace period
      this.peers.restartWatch();
      this.emit("stalled");
    }
  }

  private async renew(): Promise<void> {
    const started = performance.now();
    this.lastRenewalAt = started;
    const next = { ...this.registered, heartbeat: this.registered.heartbeat + 1 };
    try {
      this.revision = await this.store.write(this.nodeId, next, this.revision);
    } catch (error) {
      if (error instanceof StaleRevisionError) {
        // Someone rewrote our entry (a peer removed it as dead, or another process uses our node id).
        this.log.error({ nodeId: this.nodeId }, "lease entry changed by someone else; giving up this incarnation");
        this.leaseValidUntil = 0;
        return this.reincarnate();
      }
      throw error;
    }
    this.record = next;
    this.renewals.ok++;
    this.peers.applyOwnWrite(this.nodeId, this.record, this.revision);
    this.noteOwnWrite();
    // A renewal that completes after the lease lapsed (peers may already have taken over) must not revive it.
    if (performance.now() >= this.leaseValidUntil) return this.reincarnate();
    this.leaseValidUntil = started + this.options.leaseTtlMs - this.safetyMarginMs;
  }

  private async reincarnate(): Promise<void> {
    const previous = this.registered.incarnation;
    this.renewals.lapsed++;
    this.log.warn({ previous }, "lease lapsed (node paused or cut off); stepping down everywhere and re-registering");
    this.emit("lapsed");
    this.lastRenewalAt = performance.now();
    await this.register();
    this.emit("incarnation", this.registered.incarnation);
  }

  /** Entries of nodes dead for a long time are removed (revision-checked, so a revived node wins). */
  private async removeLongDeadPeers(): Promise<void> {
    const now = performance.now();
    for (const [nodeId, entry] of this.peers.all()) {
      if (nodeId === this.nodeId || now - entry.seenAt < this.options.leaseTtlMs * 5) continue;
      try {
        await this.store.remove(nodeId, entry.revision);
        this.log.info({ peer: nodeId }, "removed the entry of a long-dead node");
      } catch (error) {
        if (!(error instanceof StaleRevisionError)) throw error;
      }
    }
  }

  /** True while the node's lease is current (by this node's clock). */
  isAlive(nodeId: string, incarnation: string | null): boolean {
    // Before registering, this node's own entry (a previous incarnation's) is not alive.
    if (nodeId === this.nodeId) return !!this.record && incarnation === this.record.incarnation && this.isLeaseValid();
    const entry = this.peers.get(nodeId);
    return !!entry && entry.value.incarnation === incarnation && performance.now() - entry.seenAt < this.options.leaseTtlMs;
  }

  /**
   * Reads a peer's entry from JetStream itself: true when it changed since this node's watch last
   * showed it (the watch lags, the peer is alive; its entry here is refreshed) or the watch never
   * showed it. Used before taking a partition from a peer believed dead.
   */
  async confirmAlive(nodeId: string, incarnation: string | null): Promise<boolean> {
    if (nodeId === this.nodeId) return this.isAlive(nodeId, incarnation);
    const stored = await this.store.read(nodeId);
    if (!stored.value || stored.value.incarnation !== incarnation) return false;
    const seen = this.peers.get(nodeId);
    if (seen && seen.revision >= stored.revision) return false;
    this.log.warn({ peer: nodeId }, "membership watch lags behind JetStream; the peer is alive");
    this.peers.applyOwnWrite(nodeId, stored.value, stored.revision);
    return true;
  }

  /** Live nodes that take new work (leaving nodes excluded), sorted by id. */
  activeNodeIds(): string[] {
    const ids: string[] = [];
    for (const [nodeId, entry] of this.peers.all()) {
      if (!entry.value.leaving && this.isAlive(nodeId, entry.value.incarnation)) ids.push(nodeId);
    }
    return ids.sort();
  }

  private emitIfLiveSetChanged(): void {
    const signature = this.activeNodeIds().join(",");
    if (signature !== this.lastLiveSignature) {
      this.lastLiveSignature = signature;
      this.emit("change");
    }
  }

  /** Announces that this node is leaving: peers stop placing work here but wait for its hand-over. */
  markLeaving(): Promise<void> {
    return this.exclusively(async () => {
      const next = { ...this.registered, leaving: true };
      this.revision = await this.store.write(this.nodeId, next, this.revision);
      this.record = next;
      this.peers.applyOwnWrite(this.nodeId, next, this.revision);
    });
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearInterval(this.timer);
    this.peers.stop();
    try {
      await this.exclusively(() => this.store.remove(this.nodeId, this.revision));
    } catch (error) {
      this.log.warn({ err: error }, "could not remove the membership entry; peers will expire it");
    }
  }
}
