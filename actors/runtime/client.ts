import { performance } from "node:perf_hooks";
import { inject, injectable } from "tsyringe";
import { RequestError, TimeoutError, type NatsConnection } from "@nats-io/transport-node";
import { Histogram, type Registry } from "prom-client";
import { partitionOf, Subjects } from "./addressing";
import { DeadlineExceededError, errorFromWire, FatalError, NotOwnerError, RetryableError } from "./errors";
import { PartitionTable } from "./partition-table";
import { Tokens } from "./tokens";
import type { ActorCaller, ActorRef, AnyActorDefinition, CallEnvelope, CallOptions, ReplyEnvelope, RuntimeOptions } from "./types";

const firstBackoffMs = 10;
const loneSurrogate = /\p{Cs}/u;
const maxBackoffMs = 250;
/** How long the probe of an owner that left the table waits: a paused owner does not answer, a dead one has no responders. */
const probeTimeoutMs = 1000;

/**
 * Calls actors from anywhere: a node, the gateway, a proxy, a test. The caller never knows
 * where an actor lives: it routes by the replicated partition table and, while ownership is
 * moving (no owner yet, owner gone, owner handing over), waits and routes again until the
 * call's deadline. A call that timed out is not sent again: an exclusive handler may have run.
 */
@injectable()
export class ActorClient implements ActorCaller {
  private readonly latency: Histogram<"type" | "outcome">;
  /** Per type, the children for a call that answered and one that failed: bound once, so a call allocates no label object. */
  private readonly latencyOf = new Map<string, { ok: Histogram.Internal<"type" | "outcome">; error: Histogram.Internal<"type" | "outcome"> }>();

  constructor(
    @inject(Tokens.Nats) private readonly nc: NatsConnection,
    private readonly table: PartitionTable,
    @inject(Tokens.Options) private readonly options: RuntimeOptions,
    @inject(Tokens.Metrics) metrics: Registry,
  ) {
    this.latency = new Histogram({
      name: "warden_actor_client_call_duration_seconds",
      help: "Actor calls made from this node, from the call to its answer (routing and retries included), by actor type and outcome",
      labelNames: ["type", "outcome"],
      buckets: [0.0005, 0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 30],
      registers: [metrics],
    });
  }

  async call<R = unknown>(type: string, id: string, handler: string, arg?: unknown, options?: CallOptions): Promise<R> {
    const started = performance.now();
    let bound = this.latencyOf.get(type);
    if (!bound)
      this.latencyOf.set(type, (bound = { ok: this.latency.labels({ type, outcome: "ok" }), error: this.latency.labels({ type, outcome: "error" }) }));
    try {
      const answer = await this.route<R>(type, id, handler, arg, options);
      bound.ok.observe((performance.now() - started) / 1000);
      return answer;
    } catch (error) {
      bound.error.observe((performance.now() - started) / 1000);
      throw error;
    }
  }

  private async route<R>(type: string, id: string, handler: string, arg?: unknown, options?: CallOptions): Promise<R> {
    // A lone surrogate cannot be encoded faithfully: two different ids would share one key.
    if (loneSurrogate.test(id)) throw new FatalError("BAD_ACTOR_ID", "an id must be well-formed Unicode text");
    const timeoutMs = options?.timeoutMs ?? this.options.callTimeoutMs;
    const deadline = performance.now() + timeoutMs;
    const partition = partitionOf(type, id, this.options.partitions);
    // x, on the wall clock, lets the receiver see time the call spent in transit; d cannot.
    const envelope: CallEnvelope = { t: type, i: id, m: handler, d: 0, x: Date.now() + timeoutMs, a: arg };
    let backoff = firstBackoffMs;
    /** Waits for the table to change; every other time, also re-reads the partition's entry in case the watch lags. */
    let waits = 0;
    const routeAgain = async () => {
      const wait = Math.min(backoff, Math.max(0, deadline - performance.now()));
      backoff = Math.min(backoff * 2, maxBackoffMs);
      if (waits++ % 2 === 1) await Promise.all([this.table.refresh(partition).catch(() => undefined), this.table.nextChange(wait)]);
      else await this.table.nextChange(wait);
    };
    for (;;) {
      const remaining = deadline - performance.now();
      if (remaining <= 0) throw new DeadlineExceededError(`no owner of ${type}/${id} answered before the deadline`);
      const owner = this.table.ownerOf(partition);
      if (!owner?.incarnation) {
        await routeAgain();
        continue;
      }
      envelope.d = Math.floor(remaining);
      let reply: ReplyEnvelope;
      const ownerWatch = this.table.ownerLeft(partition, owner.incarnation);
      try {
        const request = this.nc.request(Subjects.call(owner.incarnation, partition), JSON.stringify(envelope), { timeout: Math.ceil(remaining) });
        request.catch(() => undefined); // when the owner left first, its outcome is nobody's
        const lost = ownerWatch.left.then(async () => {
          if (await this.incarnationGone(owner.incarnation!))
            throw new FatalError("OUTCOME_UNKNOWN", `${type}/${id} lost its owner while ${handler} was in flight: whether it ran is unknown`);
          return new Promise<never>(() => undefined); // still there (paused, partitioned): its answer, NOT_OWNER at worst, is awaited
        });
        reply = (await Promise.race([request, lost])).json<ReplyEnvelope>();
      } catch (error) {
        if (error instanceof FatalError) throw error;
        if (error instanceof TimeoutError) throw new DeadlineExceededError(`${type}/${id} did not answer ${handler} before the deadline`, { cause: error });
        if (error instanceof RequestError && error.isNoResponders()) {
          await routeAgain(); // the recorded owner is gone; wait for the table to name another
          continue;
        }
        throw new RetryableError("TRANSPORT", `calling ${type}/${id} failed: ${(error as Error).message}`, { cause: error });
      } finally {
        ownerWatch.stop();
      }
      if (!("e" in reply)) return reply.r as R;
      const failure = errorFromWire(reply.e);
      if (!(failure instanceof NotOwnerError)) throw failure;
      await routeAgain();
    }
  }

  /**
   * Whether nothing listens for an incarnation's calls any more: it died, and a call it had taken
   * died with it. A paused owner whose lease lapsed still listens; when it wakes, its stale write
   * is refused and it answers NOT_OWNER, so the call is routed again without having run twice.
   */
  private async incarnationGone(incarnation: string): Promise<boolean> {
    try {
      await this.nc.request(Subjects.probe(incarnation), "", { timeout: probeTimeoutMs });
      return false;
    } catch (error) {
      return error instanceof RequestError && error.isNoResponders();
    }
  }

  ref<D extends AnyActorDefinition>(definition: D, id: string): ActorRef<D> {
    const ref: Record<string, (arg?: unknown, options?: CallOptions) => Promise<unknown>> = {};
    for (const handler of Object.keys(definition.handlers)) {
      ref[handler] = (arg, options) => this.call(definition.type, id, handler, arg, options);
    }
    return ref as ActorRef<D>;
  }
}
