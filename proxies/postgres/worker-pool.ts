import type { PushdownVerdicts } from "./verdict-watch";
import type { StatementPolicy } from "./analysis/statement-analysis";
import { fork, type ChildProcess } from "node:child_process";
import { join } from "node:path";
import type { Socket } from "node:net";
import type { Logger } from "pino";
import type { DirectVerification, ProxyAudit, ProxyLimits, ProxyStoredAudit, SessionCounts } from "./types";
import type { MappingView, RowDecider } from "../../exports/row-decider";
import { addRowCounts, emptyRowCounts } from "../../exports/row-counts";
import type { DecideAnswer, FromWorker, LiveCounts, ToWorker, VerdictWire, VerifyAnswer } from "./worker-messages";

/** A worker that does not confirm an export's connections closed within this long is not waited for. */
const closeExportTimeoutMs = 5000;
/** A worker that exits is started again after this long, doubling while it keeps failing young. */
const firstRestartDelayMs = 100;
const maxRestartDelayMs = 5000;
/** A worker that lived this long before exiting is started again without delay growth. */
const healthyLifetimeMs = 10_000;

/** An export as the node serves it through the pool: the node's own decisions, verification, audit and traces. */
export interface PooledExport {
  backend: { host: string; port: number };
  limits: ProxyLimits;
  decider: RowDecider;
  audit: ProxyAudit;
  storedAudit: ProxyStoredAudit;
  directVerification?: DirectVerification;
  policy: StatementPolicy;
  /** Pushdown: the export's verdict tables on this node. */
  pushdown?: PushdownVerdicts;
  /** A connection logged in, in a worker. */
  loggedIn(connectionId: string): void;
  /** A connection ended in a worker, with what it counted. */
  ended(connectionId: string, counts: SessionCounts, identity: { user?: string; database?: string }): void;
}

interface Worker {
  index: number;
  child?: ChildProcess;
  ready: boolean;
  startedAt: number;
  restartDelayMs: number;
  /** Connection ids handed to this worker and not ended, per export. */
  connections: Map<string, Set<string>>;
  live: Map<string, LiveCounts>;
  /** The mapping key this worker last got for each export. */
  mappingKeys: Map<string, string>;
  /** Pushdown: the verdict tables (export and database) whose states this worker is sent, with how to stop. */
  verdictFeeds: Map<string, () => void>;
}

export interface ProxyWorkerPoolOptions {
  workers: number;
  tls?: { cert: Buffer; key: Buffer };
  log: Logger;
}

/**
 * The proxy worker processes of a serving node (EXPORT_WORKERS): each export's listener stays
 * in the node, which hands every accepted connection, unread, to a worker in turn; the worker
 * runs the session on its own event loop and asks the node for decisions and verification.
 * A worker that exits takes its connections with it (clients reconnect) and is started again.
 */
export class ProxyWorkerPool {
  private readonly workers: Worker[];

  /** Worker processes running now (started and not exited). */
  runningCount(): number {
    return this.workers.filter((worker) => worker.ready).length;
  }
  private readonly exports = new Map<string, PooledExport>();
  private readonly closing = new Map<number, () => void>();
  private nextRequestId = 1;
  private turn = 0;
  private stopping = false;

  private constructor(private readonly options: ProxyWorkerPoolOptions) {
    this.workers = Array.from({ length: options.workers }, (_, index) => ({
      index,
      ready: false,
      startedAt: 0,
      restartDelayMs: firstRestartDelayMs,
      connections: new Map(),
      live: new Map(),
      mappingKeys: new Map(),
      verdictFeeds: new Map(),
    }));
  }

  /** Starts the workers; resolves when each has taken its settings. */
  static async start(options: ProxyWorkerPoolOptions): Promise<ProxyWorkerPool> {
    const pool = new ProxyWorkerPool(options);
    await Promise.all(pool.workers.map((worker) => pool.spawn(worker)));
    options.log.info({ workers: options.workers, pids: pool.workers.map((w) => w.child?.pid) }, "proxy worker processes started");
    return pool;
  }

  private spawn(worker: Worker): Promise<void> {
    const child = fork(join(__dirname, "proxy-worker.js"), [], { serialization: "advanced" });
    worker.child = child;
    worker.ready = false;
    worker.startedAt = Date.now();
    const ready = new Promise<void>((resolve) => {
      child.on("message", (message: FromWorker) => {
        if (message.kind === "ready") {
          worker.ready = true;
          for (const [exportId, served] of this.exports) this.sendExport(worker, exportId, served);
          resolve();
        } else this.onMessage(worker, message);
      });
      child.once("exit", (code, signal) => {
        resolve();
        this.exited(worker, child, code, signal);
      });
    });
    child.on("error", (error) => this.options.log.warn({ err: error, worker: worker.index }, "proxy worker channel failed"));
    this.post(worker, { kind: "init", slot: worker.index, slots: this.workers.length, tls: this.options.tls });
    return ready;
  }

  private exited(worker: Worker, child: ChildProcess, code: number | null, signal: NodeJS.Signals | null): void {
    if (worker.child !== child) return;
    worker.ready = false;
    worker.child = undefined;
    const lost = [...worker.connections.values()].reduce((sum, ids) => sum + ids.size, 0);
    worker.connections.clear();
    worker.live.clear();
    worker.mappingKeys.clear();
    for (const stop of worker.verdictFeeds.values()) stop();
    worker.verdictFeeds.clear();
    if (this.stopping) return;
    this.options.log.error({ worker: worker.index, code, signal, connectionsLost: lost }, "proxy worker exited; starting it again");
    worker.restartDelayMs = Date.now() - worker.startedAt > healthyLifetimeMs ? firstRestartDelayMs : Math.min(worker.restartDelayMs * 2, maxRestartDelayMs);
    setTimeout(() => {
      if (!this.stopping) void this.spawn(worker);
    }, worker.restartDelayMs).unref();
  }

  private post(worker: Worker, message: ToWorker, socket?: Socket, sent?: (error: Error | null) => void): void {
    const child = worker.child;
    if (!child?.connected) {
      sent?.(new Error("the proxy worker is not running"));
      return;
    }
    child.send(message, socket, {}, (error) => sent?.(error ?? null));
  }

  private sendExport(worker: Worker, exportId: string, served: PooledExport): void {
    const mapping = served.decider.mapping();
    worker.mappingKeys.set(exportId, mapping.key);
    const direct = served.directVerification && { backendIdentity: served.directVerification.backendIdentity };
    this.post(worker, { kind: "export", exportId, backend: served.backend, limits: served.limits, directVerification: direct, mapping, policy: served.policy });
  }

  /** Serves an export through the workers (before any of its connections is handed over). */
  attach(exportId: string, served: PooledExport): void {
    this.exports.set(exportId, served);
    for (const worker of this.workers) if (worker.ready) this.sendExport(worker, exportId, served);
  }

  /** Ends the export's connections in every worker; resolves when each confirmed (or did not in time). */
  async detach(exportId: string): Promise<void> {
    this.exports.delete(exportId);
    await Promise.all(
      this.workers.map((worker) => {
        worker.connections.delete(exportId);
        worker.live.delete(exportId);
        worker.mappingKeys.delete(exportId);
        for (const [key, stop] of worker.verdictFeeds) {
          if (!key.startsWith(`${exportId}\u0000`)) continue;
          stop();
          worker.verdictFeeds.delete(key);
        }
        if (!worker.ready) return undefined;
        const requestId = this.nextRequestId++;
        return new Promise<void>((resolve) => {
          const timer = setTimeout(done, closeExportTimeoutMs);
          const closing = this.closing;
          function done(): void {
            clearTimeout(timer);
            closing.delete(requestId);
            resolve();
          }
          closing.set(requestId, done);
          this.post(worker, { kind: "close-export", exportId, requestId }, undefined, (error) => error && done());
        });
      }),
    );
  }

  /** Hands an accepted, unread connection to the next running worker; false when none is running. */
  handOver(exportId: string, connectionId: string, socket: Socket): boolean {
    for (let tried = 0; tried < this.workers.length; tried++) {
      const worker = this.workers[this.turn++ % this.workers.length]!;
      if (!worker.ready) continue;
      let ids = worker.connections.get(exportId);
      if (!ids) worker.connections.set(exportId, (ids = new Set()));
      ids.add(connectionId);
      this.post(worker, { kind: "connection", exportId, connectionId }, socket, (error) => {
        if (!error) return;
        ids.delete(connectionId);
        socket.destroy();
      });
      return true;
    }
    return false;
  }

  /** The export's connections open in the workers. */
  open(exportId: string): number {
    let open = 0;
    for (const worker of this.workers) open += worker.connections.get(exportId)?.size ?? 0;
    return open;
  }

  /** What the export's open connections in the workers have counted (as of their last report, at most a second old). */
  live(exportId: string): LiveCounts {
    const sum = emptyRowCounts();
    for (const worker of this.workers) {
      const live = worker.live.get(exportId);
      if (live) addRowCounts(sum, live);
    }
    return sum;
  }

  /** A user's state changed: every worker forgets the user's verdicts. */
  userChanged(userId: string): void {
    for (const worker of this.workers) if (worker.ready) this.post(worker, { kind: "user-changed", userId });
  }

  /** The node may have missed user changes: every worker forgets every verdict. */
  usersReset(): void {
    for (const worker of this.workers) if (worker.ready) this.post(worker, { kind: "users-reset" });
  }

  /** The configuration may have changed: each worker gets every export's mapping that moved. */
  refreshMappings(): void {
    for (const [exportId, served] of this.exports) {
      const mapping = served.decider.mapping();
      for (const worker of this.workers) {
        if (!worker.ready || worker.mappingKeys.get(exportId) === mapping.key) continue;
        worker.mappingKeys.set(exportId, mapping.key);
        this.post(worker, { kind: "mapping", exportId, mapping });
      }
    }
  }

  private onMessage(worker: Worker, message: FromWorker): void {
    const served = "exportId" in message ? this.exports.get(message.exportId) : undefined;
    switch (message.kind) {
      case "decide":
        if (!served) return this.answer(worker, message.requestId, undefined, "the export is not served here");
        served.decider.load(message.userIds).then(
          () => this.answer(worker, message.requestId, this.decided(worker, message.exportId, served, message.userIds)),
          (error: unknown) => this.answer(worker, message.requestId, undefined, String((error as Error)?.message ?? error)),
        );
        return;
      case "verify":
        if (!served?.directVerification) return this.answer(worker, message.requestId, undefined, "the export does not verify clients");
        served.directVerification.verify(message.user, message.password, message.connectionId).then(
          (outcome) => this.answer(worker, message.requestId, outcome),
          (error: unknown) => this.answer(worker, message.requestId, undefined, String((error as Error)?.message ?? error)),
        );
        return;
      case "audit":
        served?.audit(message.level, message.event, message.message, message.details);
        return;
      case "stored-audit":
        // An export closed meanwhile stores nothing: the session is not served.
        if (!served) return this.answer(worker, message.requestId, false);
        served.storedAudit(message.level, message.event, message.message, message.details).then(
          (stored) => this.answer(worker, message.requestId, stored),
          () => this.answer(worker, message.requestId, false),
        );
        return;
      case "ended":
        if (!served) return;
        worker.connections.get(message.exportId)?.delete(message.connectionId);
        worker.live.set(message.exportId, message.live);
        served.ended(message.connectionId, message.counts, message.identity);
        return;
      case "logged-in":
        served?.loggedIn(message.connectionId);
        return;
      case "live":
        if (served) worker.live.set(message.exportId, message.live);
        return;
      case "cancel":
        this.routeCancel(message);
        return;
      case "export-closed":
        this.closing.get(message.requestId)?.();
        return;
      case "verdicts-wanted":
        if (served?.pushdown) this.feedVerdicts(worker, message.exportId, message.database, served.pushdown);
        return;
      case "ready":
        return;
    }
  }

  /** Sends a worker the states of one database's verdict table, now and at every change. */
  private feedVerdicts(worker: Worker, exportId: string, database: string, pushdown: PushdownVerdicts): void {
    const key = `${exportId}\u0000${database}`;
    if (worker.verdictFeeds.has(key)) return;
    const watch = pushdown.of(database);
    const send = () => this.post(worker, { kind: "verdicts", exportId, database, state: watch.state() });
    worker.verdictFeeds.set(key, watch.onChange(send));
    send();
  }

  private decided(worker: Worker, exportId: string, served: PooledExport, userIds: readonly string[]): DecideAnswer {
    const mapping: MappingView = served.decider.mapping();
    worker.mappingKeys.set(exportId, mapping.key);
    const verdicts: VerdictWire[] = [];
    for (const userId of userIds) {
      // None when the configuration moved on during the decision: the row is dropped, never guessed.
      const verdict = served.decider.verdict(userId);
      const expiresAt = served.decider.expiresAt(userId);
      if (verdict && expiresAt !== undefined)
        verdicts.push({ userId, allowed: verdict.allowed, reason: verdict.reason, categories: [...verdict.categories], expiresAt });
    }
    return { mapping, verdicts };
  }

  private answer(worker: Worker, requestId: number, value: DecideAnswer | VerifyAnswer | boolean | undefined, error?: string): void {
    this.post(worker, error === undefined ? { kind: "answer", requestId, value } : { kind: "answer", requestId, error });
  }

  /** A CancelRequest that reached one worker for keys another issued: the issuing worker cancels. */
  private routeCancel(request: FromWorker & { kind: "cancel" }): void {
    const target = this.workers[request.keys.processId % this.workers.length];
    if (target?.ready) this.post(target, request);
  }

  /** Stops every worker (their connections end); resolves when they have exited. */
  async stop(): Promise<void> {
    this.stopping = true;
    await Promise.all(
      this.workers.map((worker) => {
        const child = worker.child;
        if (!child || child.exitCode !== null || child.signalCode !== null) return undefined;
        return new Promise<void>((resolve) => {
          const kill = setTimeout(() => child.kill("SIGKILL"), 2000);
          child.once("exit", () => {
            clearTimeout(kill);
            resolve();
          });
          if (child.connected) child.disconnect();
          else child.kill("SIGTERM");
        });
      }),
    );
  }
}
