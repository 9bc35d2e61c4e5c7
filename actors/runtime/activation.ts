import { performance } from "node:perf_hooks";
import type { Logger } from "pino";
import { stateKey } from "./addressing";
import { DeadlineExceededError, NotOwnerError, StaleRevisionError } from "./errors";
import type { RevisionedKv } from "./revisioned-kv";
import type { ActorCaller, AnyActorDefinition, AnyHandler, ExclusiveContext, SharedContext } from "./types";

/** What an activation needs from its host. */
export interface ActivationHost {
  readonly store: RevisionedKv<unknown>;
  readonly caller: ActorCaller;
  readonly log: Logger;
  /** How long a state read may wait for JetStream to answer. */
  readonly storeRetryMs: number;
  /** False once this node may no longer act as owner (lease lapsed, partition handed over). */
  mayWrite(partition: number): boolean;
  /** Called when this activation finds it may no longer write; ignored for activations already replaced. */
  stepDown(partition: number, reason: string, activation: Activation): void;
}

interface Task {
  handler: AnyHandler<unknown>;
  arg: unknown;
  deadline: number;
  resolve: (value: unknown) => void;
  reject: (error: unknown) => void;
}

type Staged = { kind: "none" } | { kind: "set"; value: unknown } | { kind: "clear" };

/**
 * The single live instance of one actor on its owning node: its committed state and revision,
 * and a mailbox that runs exclusive handlers one at a time in arrival order.
 */
export class Activation {
  readonly key: string;
  private state: unknown;
  private revision = 0;
  private loading?: Promise<void>;
  private loaded = false;
  private readonly mailbox: Task[] = [];
  private draining = false;
  private sharedInFlight = 0;
  private idleWaiters: Array<() => void> = [];
  private closed = false;
  lastUsed = performance.now();
  private logger?: Logger;

  constructor(
    readonly definition: AnyActorDefinition,
    readonly id: string,
    readonly partition: number,
    private readonly host: ActivationHost,
  ) {
    this.key = stateKey(definition.type, id);
  }

  private get log(): Logger {
    return (this.logger ??= this.host.log.child({ actor: `${this.definition.type}/${this.id}` }));
  }

  get busy(): boolean {
    return this.draining || this.sharedInFlight > 0 || this.mailbox.length > 0;
  }

  private ensureLoaded(): Promise<void> {
    if (this.loaded) return Promise.resolve();
    this.loading ??= this.host.store.read(this.key, this.host.storeRetryMs).then(
      (stored) => {
        this.state = stored.value === undefined ? this.definition.initialState() : stored.value;
        this.revision = stored.revision;
        this.loaded = true;
      },
      (error) => {
        this.loading = undefined; // the next message tries again
        throw error;
      },
    );
    return this.loading;
  }

  async runShared(handler: AnyHandler<unknown>, arg: unknown, deadline: number): Promise<unknown> {
    this.lastUsed = performance.now();
    this.sharedInFlight++;
    try {
      await this.ensureLoaded();
      if (this.closed) throw new NotOwnerError();
      if (performance.now() >= deadline) throw new DeadlineExceededError();
      const ctx = this.context(deadline);
      return await (handler.run as (ctx: SharedContext<unknown>, arg: unknown) => unknown)(ctx, arg);
    } finally {
      this.sharedInFlight--;
      this.notifyIfIdle();
    }
  }

  runExclusive(handler: AnyHandler<unknown>, arg: unknown, deadline: number): Promise<unknown> {
    this.lastUsed = performance.now();
    return new Promise((resolve, reject) => {
      this.mailbox.push({ handler, arg, deadline, resolve, reject });
      if (!this.draining) void this.drain();
    });
  }

  private async drain(): Promise<void> {
    this.draining = true;
    try {
      for (let task = this.mailbox.shift(); task; task = this.mailbox.shift()) {
        try {
          task.resolve(await this.execute(task));
        } catch (error) {
          task.reject(error);
        }
      }
    } finally {
      this.draining = false;
      this.notifyIfIdle();
    }
  }

  private async execute(task: Task): Promise<unknown> {
    await this.ensureLoaded();
    if (this.closed) throw new NotOwnerError();
    if (performance.now() >= task.deadline) throw new DeadlineExceededError("the deadline passed while the call waited in the mailbox");
    let staged: Staged = { kind: "none" };
    const ctx: ExclusiveContext<unknown> = {
      ...this.context(task.deadline),
      setState: (next) => (staged = { kind: "set", value: next }),
      clearState: () => (staged = { kind: "clear" }),
    };
    const result = await (task.handler.run as (ctx: ExclusiveContext<unknown>, arg: unknown) => unknown)(ctx, task.arg);
    const change = staged as Staged;
    if (change.kind !== "none") await this.commit(change, task.deadline);
    return result;
  }

  private async commit(change: Exclude<Staged, { kind: "none" }>, deadline: number): Promise<void> {
    // Checked before every attempt: the lease check catches an owner paused past its lease,
    // the closed check an activation whose partition moved; the revision check in JetStream
    // catches everything these cannot see.
    const guard = () => {
      if (this.closed) throw new NotOwnerError("this activation was closed; nothing was written");
      if (!this.host.mayWrite(this.partition)) {
        this.host.stepDown(this.partition, "lease no longer valid at write time", this);
        throw new NotOwnerError("ownership lapsed before the write; nothing was written");
      }
    };
    const retryForMs = Math.max(0, deadline - performance.now());
    try {
      if (change.kind === "set") {
        this.revision = await this.host.store.write(this.key, change.value, this.revision, retryForMs, guard);
        this.state = change.value;
      } else {
        this.revision = this.revision === 0 ? 0 : await this.host.store.remove(this.key, this.revision, retryForMs, guard);
        this.state = this.definition.initialState();
      }
    } catch (error) {
      if (error instanceof NotOwnerError) throw error;
      if (error instanceof StaleRevisionError) {
        this.log.warn({ revision: this.revision }, "stale write rejected: a newer owner wrote this actor's state");
        this.host.stepDown(this.partition, "stale write rejected", this);
        throw new NotOwnerError("a newer owner has written this actor's state; nothing was written", { cause: error });
      }
      // Whether the write was stored is unknown: read the state again before the next handler.
      this.loaded = false;
      this.loading = undefined;
      throw error;
    }
  }

  private context(deadline: number): SharedContext<unknown> {
    const activation = this;
    return {
      type: this.definition.type,
      id: this.id,
      state: this.state as Readonly<unknown>,
      revision: this.revision,
      remainingMs: () => Math.max(0, deadline - performance.now()),
      get log() {
        return activation.log;
      },
      actors: this.host.caller,
    };
  }

  /** Resolves when no handler is running or queued. */
  idle(): Promise<void> {
    if (!this.busy) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  private notifyIfIdle(): void {
    if (this.busy) return;
    const waiters = this.idleWaiters;
    this.idleWaiters = [];
    for (const wake of waiters) wake();
  }

  /** No further handler runs or writes; queued calls are answered NotOwner so callers route again. */
  close(): void {
    this.closed = true;
    for (let task = this.mailbox.shift(); task; task = this.mailbox.shift()) task.reject(new NotOwnerError());
  }
}
