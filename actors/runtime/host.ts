import { EventEmitter } from "node:events";
import { performance } from "node:perf_hooks";
import { inject, injectable } from "tsyringe";
import type { Msg, NatsConnection, Subscription } from "@nats-io/transport-node";
import type { Logger } from "pino";
import { Counter, Histogram, type Registry } from "prom-client";
import { Activation, type ActivationHost } from "./activation";
import { partitionOf, Subjects } from "./addressing";
import { msPastCallerDeadline, runDeadline } from "./call-deadline";
import { ActorClient } from "./client";
import { errorToWire, ExpiredBeforeStartError, FatalError, NotOwnerError, RuntimeError } from "./errors";
import { Membership } from "./membership";
import { RevisionedKv } from "./revisioned-kv";
import { Tokens, type RuntimeBuckets } from "./tokens";
import type { AnyActorDefinition, CallEnvelope, ReplyEnvelope, RuntimeOptions } from "./types";

const sweepIntervalMs = 30_000;
const expiredLogIntervalMs = 1000;

/**
 * Runs the activations of the partitions this node owns. Calls arrive on this incarnation's
 * subject; a call for a partition this node does not (or no longer) own is answered NotOwner,
 * and the caller routes again.
 *
 * Events: "stepped-down" (partition) when a write proved that another owner has moved on.
 */
@injectable()
export class ActorHost extends EventEmitter implements ActivationHost {
  readonly store: RevisionedKv<unknown>;
  readonly log: Logger;
  private readonly definitions = new Map<string, AnyActorDefinition>();
  private readonly partitions = new Map<number, Map<string, Activation>>();
  /** Partitions being handed over: no new calls, but running and queued handlers still commit. */
  private readonly draining = new Set<number>();
  private subscription?: Subscription;
  private sweepTimer?: NodeJS.Timeout;
  private readonly calls: Counter<"type" | "handler" | "outcome">;
  private readonly duration: Histogram<"type">;
  /** Calls refused as expired since the last log line about them, and when that line was written (monotonic ms). */
  private expiredSinceLogged = 0;
  private expiredLoggedAt = -Infinity;

  constructor(
    @inject(Tokens.Nats) private readonly nc: NatsConnection,
    @inject(Tokens.Buckets) buckets: RuntimeBuckets,
    private readonly membership: Membership,
    private readonly client: ActorClient,
    @inject(Tokens.Options) private readonly options: RuntimeOptions,
    @inject(Tokens.Logger) log: Logger,
    @inject(Tokens.Metrics) metrics: Registry,
  ) {
    super();
    this.log = log;
    this.store = new RevisionedKv<unknown>(buckets.state);
    this.calls = new Counter({
      name: "warden_actor_calls_total",
      help: "Actor calls handled on this node",
      labelNames: ["type", "handler", "outcome"],
      registers: [metrics],
    });
    this.duration = new Histogram({
      name: "warden_actor_call_duration_seconds",
      help: "Time from arrival to reply of actor calls handled on this node",
      labelNames: ["type"],
      buckets: [0.0001, 0.0005, 0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5],
      registers: [metrics],
    });
  }

  get storeRetryMs(): number {
    return this.options.callTimeoutMs;
  }

  get caller(): ActorClient {
    return this.client;
  }

  register(definition: AnyActorDefinition): void {
    const existing = this.definitions.get(definition.type);
    if (existing && existing !== definition) throw new Error(`actor type '${definition.type}' is registered twice`);
    this.definitions.set(definition.type, definition);
  }

  registeredTypes(): string[] {
    return [...this.definitions.keys()].sort();
  }

  start(): void {
    this.subscribe();
    this.membership.on("incarnation", () => this.subscribe());
    this.membership.on("lapsed", () => this.dropAll("lease lapsed"));
    this.sweepTimer = setInterval(() => this.sweepIdle(), sweepIntervalMs);
    this.sweepTimer.unref();
  }

  private subscribe(): void {
    // drain, not unsubscribe: calls the server routed here before it saw the change are still
    // answered (NOT_OWNER, so callers route again) instead of being dropped until their deadline.
    this.subscription?.drain().catch((error: unknown) => this.log.debug({ err: error }, "draining the previous subscription failed"));
    this.subscription = this.nc.subscribe(Subjects.callsTo(this.membership.incarnation), {
      callback: (error, msg) => {
        if (!error) this.receive(msg);
      },
    });
  }

  serves(partition: number): boolean {
    return this.partitions.has(partition);
  }

  activationCount(): number {
    let count = 0;
    for (const actors of this.partitions.values()) count += actors.size;
    return count;
  }

  mayWrite(partition: number): boolean {
    return this.partitions.has(partition) && this.membership.isLeaseValid();
  }

  /** Starts accepting calls for a partition this node now owns. */
  activate(partition: number): void {
    if (!this.partitions.has(partition)) this.partitions.set(partition, new Map());
  }

  /**
   * Stops accepting calls for the partition and lets its running and queued handlers finish and
   * commit (for at most one call deadline), then closes it.
   */
  async deactivate(partition: number): Promise<void> {
    const actors = this.partitions.get(partition);
    if (!actors || this.draining.has(partition)) return;
    this.draining.add(partition);
    try {
      const idle = Promise.all([...actors.values()].map((activation) => activation.idle()));
      let timer: NodeJS.Timeout | undefined;
      const timeout = new Promise<void>((resolve) => (timer = setTimeout(resolve, this.options.callTimeoutMs)));
      await Promise.race([idle, timeout]);
      clearTimeout(timer);
    } finally {
      this.draining.delete(partition);
      if (this.partitions.get(partition) === actors) this.partitions.delete(partition);
      for (const activation of actors.values()) activation.close();
    }
  }

  stepDown(partition: number, reason: string, activation?: Activation): void {
    const actors = this.partitions.get(partition);
    if (!actors) return;
    // A closed activation from an earlier tenure must not close the partition's current ones.
    if (activation && actors.get(activation.id) !== activation) return;
    this.partitions.delete(partition);
    this.draining.delete(partition);
    for (const activation of actors.values()) activation.close();
    this.log.warn({ partition, reason }, "stepped down from a partition");
    this.emit("stepped-down", partition);
  }

  /** Drops every activation at once, without waiting: this node may no longer act as owner. */
  dropAll(reason: string): void {
    if (this.partitions.size === 0) return;
    for (const actors of this.partitions.values()) for (const activation of actors.values()) activation.close();
    this.log.warn({ partitions: this.partitions.size, reason }, "dropped all partitions");
    this.partitions.clear();
    this.draining.clear();
  }

  private receive(msg: Msg): void {
    const started = performance.now();
    let envelope: CallEnvelope;
    try {
      envelope = msg.json<CallEnvelope>();
      if (
        typeof envelope?.t !== "string" ||
        typeof envelope.i !== "string" ||
        typeof envelope.m !== "string" ||
        typeof envelope.d !== "number" ||
        (envelope.x !== undefined && typeof envelope.x !== "number")
      ) {
        throw new Error("malformed envelope");
      }
    } catch {
      this.respond(msg, { e: errorToWire(new FatalError("BAD_CALL", "malformed call envelope")) });
      return;
    }
    // A call held in transit (a paused nats-server) past its caller's deadline is not started:
    // its caller has already reported it failed, so running it now would be a change nobody awaits.
    const msPastDeadline = msPastCallerDeadline(envelope.x, Date.now(), this.options.clockSkewMs);
    if (msPastDeadline >= 0) {
      this.refuseExpired(msg, envelope, msPastDeadline, started);
      return;
    }
    const partition = partitionOf(envelope.t, envelope.i, this.options.partitions);
    const actors = this.partitions.get(partition);
    if (!actors || this.draining.has(partition) || !this.membership.isLeaseValid() || !msg.subject.endsWith(`.${partition}`)) {
      this.respond(msg, { e: errorToWire(new NotOwnerError()) });
      return;
    }
    const definition = this.definitions.get(envelope.t);
    const handler = definition && Object.hasOwn(definition.handlers, envelope.m) ? definition.handlers[envelope.m] : undefined;
    if (!definition || !handler) {
      const what = definition ? `handler '${envelope.m}' of actor type '${envelope.t}'` : `actor type '${envelope.t}'`;
      this.respond(msg, { e: errorToWire(new FatalError(definition ? "UNKNOWN_HANDLER" : "UNKNOWN_ACTOR_TYPE", `no ${what} on this cluster`)) });
      return;
    }
    let activation = actors.get(envelope.i);
    if (!activation) {
      activation = new Activation(definition, envelope.i, partition, this);
      actors.set(envelope.i, activation);
    }
    const deadline = runDeadline(started, envelope.d, msPastDeadline);
    const pending = handler.kind === "shared" ? activation.runShared(handler, envelope.a, deadline) : activation.runExclusive(handler, envelope.a, deadline);
    pending.then(
      (result) => {
        this.calls.inc({ type: envelope.t, handler: envelope.m, outcome: "ok" });
        this.respond(msg, result === undefined ? {} : { r: result });
        this.duration.observe({ type: envelope.t }, (performance.now() - started) / 1000);
      },
      (error: unknown) => {
        this.calls.inc({ type: envelope.t, handler: envelope.m, outcome: error instanceof RuntimeError ? error.code : "INTERNAL" });
        if (!(error instanceof RuntimeError)) this.log.error({ err: error, actor: `${envelope.t}/${envelope.i}`, handler: envelope.m }, "actor handler failed");
        this.respond(msg, { e: errorToWire(error) });
      },
    );
  }

  /** Counted per call; logged at most once a second (a server waking from a pause can deliver many at once). */
  private refuseExpired(msg: Msg, envelope: CallEnvelope, msPastDeadline: number, now: number): void {
    this.calls.inc({ type: envelope.t, handler: envelope.m, outcome: "EXPIRED_BEFORE_START" });
    this.expiredSinceLogged++;
    if (now - this.expiredLoggedAt >= expiredLogIntervalMs) {
      this.log.warn(
        {
          actor: `${envelope.t}/${envelope.i}`,
          handler: envelope.m,
          lateMs: Math.round(msPastDeadline + this.options.clockSkewMs),
          refused: this.expiredSinceLogged,
        },
        "refused calls that arrived after their caller's deadline (held in transit, or clocks further apart than CLOCK_SKEW_MS)",
      );
      this.expiredLoggedAt = now;
      this.expiredSinceLogged = 0;
    }
    this.respond(msg, { e: errorToWire(new ExpiredBeforeStartError()) });
  }

  /** Never throws: a reply that cannot be sent as it is becomes a small error the caller can read. */
  private respond(msg: Msg, reply: ReplyEnvelope): void {
    let payload: string;
    try {
      payload = JSON.stringify(reply);
    } catch (error) {
      this.log.error({ err: error }, "actor reply is not serializable");
      payload = JSON.stringify({ e: errorToWire(error) });
    }
    try {
      msg.respond(payload);
    } catch (error) {
      this.log.error({ err: error, bytes: payload.length }, "could not send an actor reply");
      try {
        msg.respond(
          JSON.stringify({ e: errorToWire(new FatalError("REPLY_NOT_SENT", "the reply could not be sent (too large, or the connection is closing)")) }),
        );
      } catch {
        // The connection is gone: the caller's deadline answers for us.
      }
    }
  }

  private sweepIdle(): void {
    const cutoff = performance.now() - this.options.activationIdleMs;
    for (const actors of this.partitions.values()) {
      for (const [id, activation] of actors) {
        if (!activation.busy && activation.lastUsed < cutoff) actors.delete(id);
      }
    }
  }

  async stop(): Promise<void> {
    if (this.sweepTimer) clearInterval(this.sweepTimer);
    await this.subscription?.drain();
  }
}
