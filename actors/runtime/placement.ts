import { inject, injectable } from "tsyringe";
import type { Logger } from "pino";
import { desiredOwner, partitionKey } from "./addressing";
import { StaleRevisionError } from "./errors";
import { ActorHost } from "./host";
import { Membership } from "./membership";
import { PartitionTable } from "./partition-table";
import { RevisionedKv } from "./revisioned-kv";
import { Tokens, type RuntimeBuckets } from "./tokens";
import type { PartitionRecord, RuntimeOptions } from "./types";

const reconcileIntervalMs = 500;

/**
 * Decides which partitions this node serves. Every node computes the same desired owner for
 * each partition from the live node set (rendezvous hashing); ownership itself changes only by
 * revision-checked writes to the partition table, so two nodes with different views can never
 * both win a partition.
 *
 * - A partition whose recorded owner is dead, released or absent is claimed by its desired owner.
 * - An owner that is no longer the desired owner drains the partition, then releases it.
 * - A node whose lease lapsed drops everything at once (the host does, on "lapsed").
 */
@injectable()
export class Placement {
  private readonly store: RevisionedKv<PartitionRecord>;
  private timer?: NodeJS.Timeout;
  private running = false;
  private rerun = false;
  private leaving = false;
  private readonly transitions = new Set<number>();
  private readonly ownerlessSince = new Map<number, number>();

  constructor(
    @inject(Tokens.Buckets) buckets: RuntimeBuckets,
    private readonly table: PartitionTable,
    private readonly membership: Membership,
    private readonly host: ActorHost,
    @inject(Tokens.Options) private readonly options: RuntimeOptions,
    @inject(Tokens.Logger) private readonly log: Logger,
  ) {
    this.store = new RevisionedKv<PartitionRecord>(buckets.partitions);
  }

  start(): void {
    const schedule = () => void this.reconcile();
    this.membership.on("change", schedule);
    this.membership.on("incarnation", schedule);
    this.table.on("change", schedule);
    this.host.on("stepped-down", schedule);
    this.timer = setInterval(schedule, reconcileIntervalMs);
    schedule();
  }

  private isMine(record: PartitionRecord | undefined): boolean {
    return record?.owner === this.membership.nodeId && record.incarnation === this.membership.incarnation;
  }

  /** One pass at a time; a request during a pass makes one more pass afterwards. */
  async reconcile(): Promise<void> {
    if (this.running) {
      this.rerun = true;
      return;
    }
    this.running = true;
    try {
      do {
        this.rerun = false;
        await this.reconcileOnce();
      } while (this.rerun);
    } catch (error) {
      this.log.warn({ err: error }, "placement pass failed; will retry");
    } finally {
      this.running = false;
    }
  }

  private async reconcileOnce(): Promise<void> {
    if (!this.membership.isLeaseValid()) return; // the host already dropped everything
    const active = this.membership.activeNodeIds();
    for (let partition = 0; partition < this.options.partitions; partition++) {
      if (this.transitions.has(partition)) continue;
      const entry = this.table.entry(partition);
      const record = entry?.value;
      const mine = this.isMine(record);
      const served = this.host.serves(partition);
      if (mine && !served && !this.leaving) this.host.activate(partition);
      if (!mine && served) this.host.stepDown(partition, "the partition table names another owner");
      this.probeIfOwnerlessTooLong(partition, record);
      const desired = desiredOwner(partition, active);
      if (!mine && desired === this.membership.nodeId && !this.leaving) {
        const free = !record?.owner || !this.membership.isAlive(record.owner, record.incarnation);
        if (free) this.transition(partition, () => this.claim(partition, record, entry?.revision ?? 0));
      } else if (mine && (this.leaving || (desired !== undefined && desired !== this.membership.nodeId))) {
        this.transition(partition, () => this.release(partition, record!, entry!.revision));
      }
    }
  }

  /**
   * A partition that has looked ownerless (no owner, or a dead one) for longer than a lease is
   * re-read from JetStream: the live owner may have claimed it while this node's watch stalled.
   */
  private probeIfOwnerlessTooLong(partition: number, record: PartitionRecord | undefined): void {
    const ownerless = !record?.owner || !this.membership.isAlive(record.owner, record.incarnation);
    if (!ownerless) {
      this.ownerlessSince.delete(partition);
      return;
    }
    const since = this.ownerlessSince.get(partition);
    const now = Date.now();
    if (since === undefined) this.ownerlessSince.set(partition, now);
    else if (now - since > this.options.leaseTtlMs) {
      this.ownerlessSince.set(partition, now);
      this.table.refresh(partition).catch((error: unknown) => this.log.debug({ err: error, partition }, "re-reading a partition failed"));
    }
  }

  /** Runs beside the passes (a slow drain must not hold placement up); one change per partition at a time. */
  private transition(partition: number, change: () => Promise<void>): void {
    this.transitions.add(partition);
    change()
      .catch((error: unknown) => {
        // A stale revision means someone changed the record first: the watch brings the news.
        if (!(error instanceof StaleRevisionError)) this.log.warn({ err: error, partition }, "partition change failed; will retry");
      })
      .finally(() => {
        this.transitions.delete(partition);
        void this.reconcile();
      });
  }

  private async claim(partition: number, previous: PartitionRecord | undefined, revision: number): Promise<void> {
    // The watch can lag (a stalled consumer, a reconnect): confirm from JetStream itself that
    // the recorded owner stopped renewing before taking its partition.
    if (previous?.owner && (await this.membership.confirmAlive(previous.owner, previous.incarnation))) return;
    const record: PartitionRecord = { owner: this.membership.nodeId, incarnation: this.membership.incarnation, epoch: (previous?.epoch ?? 0) + 1 };
    const written = await this.store.write(partitionKey(partition), record, revision);
    this.table.applyOwnWrite(partitionKey(partition), record, written);
    if (this.membership.isLeaseValid() && this.isMine(record)) this.host.activate(partition);
    this.log.debug({ partition, epoch: record.epoch, from: previous?.owner ?? null }, "claimed partition");
  }

  private async release(partition: number, current: PartitionRecord, revision: number): Promise<void> {
    await this.host.deactivate(partition);
    const record: PartitionRecord = { owner: null, incarnation: null, epoch: current.epoch };
    const written = await this.store.write(partitionKey(partition), record, revision);
    this.table.applyOwnWrite(partitionKey(partition), record, written);
    this.log.debug({ partition, epoch: record.epoch }, "released partition");
  }

  get partitionCount(): number {
    return this.options.partitions;
  }

  ownedCount(): number {
    let count = 0;
    for (let partition = 0; partition < this.options.partitions; partition++) if (this.isMine(this.table.entry(partition)?.value)) count++;
    return count;
  }

  /** Partitions whose recorded owner this node believes alive. */
  assignedCount(): number {
    let count = 0;
    for (let partition = 0; partition < this.options.partitions; partition++) {
      const record = this.table.ownerOf(partition);
      if (record?.owner && this.membership.isAlive(record.owner, record.incarnation)) count++;
    }
    return count;
  }

  /** Hands every partition over (draining each first), then stops; gives up after `limitMs`. */
  async leave(limitMs = 30_000): Promise<void> {
    this.leaving = true;
    await this.membership.markLeaving();
    const until = Date.now() + limitMs;
    while ((this.ownedCount() > 0 || this.transitions.size > 0) && Date.now() < until) {
      await this.reconcile();
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    if (this.ownedCount() > 0)
      this.log.warn({ partitions: this.ownedCount() }, "left without handing every partition over; peers take them when the lease lapses");
    if (this.timer) clearInterval(this.timer);
  }
}
