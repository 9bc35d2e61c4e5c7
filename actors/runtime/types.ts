import type { Logger } from "pino";
import type { WireError } from "./errors";

/** Where an actor lives: its type name and its id within that type. */
export interface ActorAddress {
  readonly type: string;
  readonly id: string;
}

/** What every handler can see. */
interface BaseContext<S> extends ActorAddress {
  /** Last committed state, or the definition's initial state when none is stored. Treat as read-only. */
  readonly state: Readonly<S>;
  /** Revision of the committed state in JetStream (0 when nothing is stored yet). */
  readonly revision: number;
  /** Milliseconds left before the caller's deadline. Work past it is wasted: the caller has given up. */
  remainingMs(): number;
  readonly log: Logger;
  /** Calls to other actors (mind cycles: an exclusive handler waiting on its caller deadlocks until the deadline). */
  readonly actors: ActorCaller;
}

/**
 * Context of a read-only handler. Shared handlers run as soon as they arrive, against the
 * last committed state, beside whatever exclusive handler is running.
 */
export type SharedContext<S> = BaseContext<S>;

/**
 * Context of an exclusive handler: one at a time per actor across the cluster, in arrival
 * order. Staged changes are written (revision-checked) before the reply is sent; a handler
 * that throws leaves the state untouched.
 */
export interface ExclusiveContext<S> extends BaseContext<S> {
  /** Stage the next state; it is persisted when the handler returns. */
  setState(next: S): void;
  /** Stage the removal of the state (erasure); the actor starts from its initial state afterwards. */
  clearState(): void;
}

export type HandlerKind = "shared" | "exclusive";

export interface SharedHandler<S, A, R> {
  readonly kind: "shared";
  readonly run: (ctx: SharedContext<S>, arg: A) => R | Promise<R>;
}

export interface ExclusiveHandler<S, A, R> {
  readonly kind: "exclusive";
  readonly run: (ctx: ExclusiveContext<S>, arg: A) => R | Promise<R>;
}

// `any` because a handler map is heterogeneous; ActorRef recovers each handler's argument and result types.
export type AnyHandler<S> = SharedHandler<S, any, any> | ExclusiveHandler<S, any, any>;

export interface ActorDefinition<S, H extends Record<string, AnyHandler<S>>> {
  /** Type name: letters, digits, dash and underscore. Part of every address and state key. */
  readonly type: string;
  /** State of an actor that has none stored. */
  readonly initialState: () => S;
  readonly handlers: H;
}

// `any` for the same reason: the host stores definitions of every state type side by side.
export type AnyActorDefinition = ActorDefinition<any, Record<string, AnyHandler<any>>>;

type ArgOf<H> = H extends { run: (ctx: never, arg: infer A) => unknown } ? A : never;
type ResultOf<H> = H extends { run: (...args: never[]) => infer R } ? Awaited<R> : never;

export interface CallOptions {
  /** Deadline for the whole call, retries included. Defaults to the client's default timeout. */
  timeoutMs?: number;
}

/** The client's view of an actor: the definition's type is the client's type. */
export type ActorRef<D extends AnyActorDefinition> = {
  [K in keyof D["handlers"]]: undefined extends ArgOf<D["handlers"][K]>
    ? (arg?: ArgOf<D["handlers"][K]>, options?: CallOptions) => Promise<ResultOf<D["handlers"][K]>>
    : (arg: ArgOf<D["handlers"][K]>, options?: CallOptions) => Promise<ResultOf<D["handlers"][K]>>;
};

/** A node's entry in the membership bucket. */
export interface NodeRecord {
  nodeId: string;
  /** Unique per process start: a restarted node is a new incarnation and owns nothing of the old one. */
  incarnation: string;
  startedAt: string;
  /** Set while the node hands its partitions over before leaving. */
  leaving: boolean;
  heartbeat: number;
}

/** A partition's entry in the placement bucket. `owner` null means released and free to claim. */
export interface PartitionRecord {
  owner: string | null;
  incarnation: string | null;
  /** Incremented on every change of owner. */
  epoch: number;
}

/** Request envelope on the wire (JSON). Short keys: this is on the hot path. */
export interface CallEnvelope {
  /** actor type */
  t: string;
  /** actor id */
  i: string;
  /** handler name */
  m: string;
  /** milliseconds left before the caller's deadline, when sent */
  d: number;
  /**
   * the caller's deadline on its wall clock (epoch ms): a call held in transit past it is not started.
   * Absent from nodes older than the field; their calls are bounded by `d` alone.
   */
  x?: number;
  /** argument */
  a?: unknown;
}

/** Reply envelope: `r` the result (absent for undefined), or `e` the error in its wire form. */
export type ReplyEnvelope = { r?: unknown } | { e: WireError };

/** Tunables of one node's runtime. Every node of a cluster uses the same partition count (fixed at first start). */
export interface RuntimeOptions {
  nodeId: string;
  partitions: number;
  /** How often a node renews its lease. */
  heartbeatMs: number;
  /** A node whose lease was not renewed for this long (by the observer's clock) is dead. */
  leaseTtlMs: number;
  /** Default deadline of a call. */
  callTimeoutMs: number;
  /** How far apart two nodes' wall clocks may be: a call is refused as expired only this long after its caller's deadline. */
  clockSkewMs: number;
  /** An activation unused for this long is dropped from memory (its state stays in JetStream). */
  activationIdleMs: number;
}

/** Calls to other actors, as seen from inside a handler or by any client. */
export interface ActorCaller {
  call<R = unknown>(type: string, id: string, handler: string, arg?: unknown, options?: CallOptions): Promise<R>;
  ref<D extends AnyActorDefinition>(definition: D, id: string): ActorRef<D>;
}
