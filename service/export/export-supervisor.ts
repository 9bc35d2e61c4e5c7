import type { NatsConnection, Subscription } from "@nats-io/transport-node";
import type { SecureContext } from "node:tls";
import type { Logger } from "pino";
import { flowOf } from "../../actors/decision/engine";
import { exportActor, type ExportRecord } from "../../actors/export/export-actor";
import { jetstreamManager } from "@nats-io/jetstream";
import { partitionOf, stateKey, Streams, Subjects } from "../../actors/runtime/addressing";
import type { ActorRuntime } from "../../actors/runtime/runtime";
import { WatchedBucket } from "../../actors/runtime/watched-bucket";
import { PostgresExportServer } from "../../proxies/postgres/server";
import { ProxyWorkerPool } from "../../proxies/postgres/worker-pool";
import type { ExportServing } from "../../proxies/types";
import type { ProxyLimits } from "../../proxies/postgres/types";
import type { BackendTls } from "../../proxies/postgres/session/backend-tls";
import type { ExportAudit } from "../../proxies/types";
import { RevisionedKv } from "../../actors/runtime/revisioned-kv";
import { provisionPipelines } from "../../actors/runtime/provision";
import { PipelineExport } from "../pipeline/pipeline-export";
import type { PipelineProgress } from "../pipeline/pipeline-stream";
import type { DecisionService } from "../decision-service";
import { directVerificationFor } from "./direct-verification";
import { ExportDecider } from "./export-decider";
import type { Authenticator } from "../../auth/authenticator";

const scanEveryMs = 1000;
/** The line ProxyWorkerPool logs (at error) each time it starts an exited worker again. */
const workerRestartLine = "proxy worker exited; starting it again";
/** Wait before trying again to open a port that could not be opened. */
const retryListenAfterMs = 5000;

export interface ExportSupervisorDeps {
  nc: NatsConnection;
  runtime: ActorRuntime;
  decisions: DecisionService;
  log: Logger;
  /** Address the export ports are opened on. */
  listenHost: string;
  limits: ProxyLimits;
  /** The exports' TLS certificate and key (and the context made of them). */
  tls?: { cert: Buffer; key: Buffer; context: SecureContext };
  authenticator: Authenticator;
  /** JetStream replicas of the pipeline streams and bucket, created with the first pipeline export. */
  jsReplicas: number;
  /** Proxy worker processes for PostgreSQL export sessions (0: sessions run on the node's loop). */
  proxyWorkers: number;
}

/** An export's endpoint as its serving node runs it, whatever its type. */
interface ServedExport {
  serving(): ExportServing;
  close(): Promise<void>;
}

interface Listener {
  record: ExportRecord;
  decider: ExportDecider;
  server?: ServedExport;
  opening?: Promise<void>;
  closing?: Promise<void>;
}

/** What the node serving an export says about it. */
export interface ServingReport {
  nodeId: string;
  serving: ExportServing | null;
  /** Why the port is not open, when it is not. */
  error: string | null;
}

/**
 * Serves the exports whose actors live on this node (one owner per export, with failover):
 * every node keeps a replica of the exports' states; an active export in a partition this
 * node owns gets a listener on its port, and loses it when stopped, removed, or when the
 * partition moves. When a node dies its partitions move, and the new owner opens the ports
 * within a second of taking them over. After a restart of every node, each active export is
 * served again on its port.
 */
export class ExportSupervisor {
  private readonly exports: WatchedBucket<ExportRecord>;
  private pipelineStore?: Promise<RevisionedKv<PipelineProgress>>;
  private readonly listeners = new Map<string, Listener>();
  private readonly failures = new Map<string, { error: string; retryAt: number }>();
  private subscription?: Subscription;
  /** The proxy worker processes, once the first PostgreSQL export asked for them. */
  private workersStarting?: Promise<ProxyWorkerPool>;
  /** Unsubscribes the workers from user and configuration changes. */
  private readonly unsubscribe: (() => void)[] = [];
  private timer?: NodeJS.Timeout;
  private stopping = false;
  /** The running pool, once started (for its worker count). */
  private pool?: ProxyWorkerPool;
  /** Proxy workers started again after exiting, counted from the pool's log line (the pool keeps no count). */
  workerRestarts = 0;

  constructor(private readonly deps: ExportSupervisorDeps) {
    this.exports = new WatchedBucket<ExportRecord>("exports", deps.runtime.host.store.kv, deps.log, `${exportActor.type}.>`);
  }

  async start(): Promise<void> {
    await this.exports.start();
    await this.exports.ready;
    this.exports.on("change", () => this.scan());
    this.subscription = this.deps.nc.subscribe(Subjects.exportServingAll, {
      callback: (error, message) => {
        if (error) return;
        const exportId = message.subject.slice(Subjects.exportServing("").length);
        const report = this.report(exportId);
        if (report) message.respond(JSON.stringify(report));
      },
    });
    this.timer = setInterval(() => this.scan(), scanEveryMs);
    this.scan();
  }

  /** Every export this node knows of (the replica: a change made elsewhere shows up within moments). */
  list(): ExportRecord[] {
    return [...this.exports.all()].map(([, entry]) => entry.value);
  }

  /** What each export this node serves counted since its port opened here (the metrics read it at scrape time). */
  servingCounts(): Array<{ exportId: string; type: string; serving: ExportServing }> {
    const counts: Array<{ exportId: string; type: string; serving: ExportServing }> = [];
    for (const [exportId, listener] of this.listeners) {
      const serving = listener.server?.serving();
      if (serving) counts.push({ exportId, type: listener.record.type, serving });
    }
    return counts;
  }

  /** Proxy worker processes running now (0 before the first PostgreSQL export, or with EXPORT_WORKERS=0). */
  runningWorkers(): number {
    // The pool exposes no count; its workers list is read as is (a rename there fails this build, not silently).
    return this.pool ? this.pool["workers"].filter((worker) => worker.ready).length : 0;
  }

  /** The pool's logger, counting the restarts it logs. */
  private countingRestarts(log: Logger): Logger {
    const counting = Object.create(log) as Logger;
    counting.error = ((obj: unknown, message?: string, ...rest: unknown[]) => {
      if (message === workerRestartLine) this.workerRestarts++;
      (log.error as (...args: unknown[]) => void)(obj, message, ...rest);
    }) as Logger["error"];
    return counting;
  }

  /** This node's report on an export it serves or should serve; undefined when it is not the owner. */
  private report(exportId: string): ServingReport | undefined {
    const listener = this.listeners.get(exportId);
    const failure = this.failures.get(exportId);
    if (!listener && !failure) return undefined;
    return { nodeId: this.deps.runtime.membership.nodeId, serving: listener?.server?.serving() ?? null, error: failure?.error ?? null };
  }

  private owns(exportId: string): boolean {
    const partition = partitionOf(exportActor.type, exportId, this.deps.runtime.placement.partitionCount);
    return !this.stopping && this.deps.runtime.host.serves(partition) && this.deps.runtime.membership.isLeaseValid();
  }

  private scan(): void {
    if (this.stopping) return;
    const wanted = new Map<string, ExportRecord>();
    for (const [, { value }] of this.exports.all()) if (value.status === "active" && this.owns(value.id)) wanted.set(value.id, value);
    for (const [id, listener] of this.listeners) if (!wanted.has(id)) this.close(id, listener);
    for (const [id, record] of wanted) {
      if (this.listeners.has(id)) continue;
      if ((this.failures.get(id)?.retryAt ?? 0) > Date.now()) continue;
      this.open(record);
    }
    for (const id of this.failures.keys()) if (!wanted.has(id)) this.failures.delete(id);
  }

  /** Audit records of an export's endpoint, in the category of its component (`postgres`, `pipeline`). */
  private audit(category: string): ExportAudit {
    return (level, event, message, details) => {
      this.deps.runtime.events.audit({ category, level, event, message, details }).catch((error: unknown) => this.deps.log.warn({ err: error, event }, "audit record not stored"));
    };
  }

  /** The pipeline streams and progress bucket, created (idempotently) the first time a pipeline export needs them. */
  pipelines(): Promise<RevisionedKv<PipelineProgress>> {
    if (!this.pipelineStore) {
      this.pipelineStore = provisionPipelines(this.deps.nc, this.deps.jsReplicas).then((kv) => new RevisionedKv<PipelineProgress>(kv));
      // A failed creation is tried again by the next export that needs it.
      this.pipelineStore.catch(() => (this.pipelineStore = undefined));
    }
    return this.pipelineStore;
  }

  private async serve(record: ExportRecord, decider: ExportDecider): Promise<ServedExport> {
    const { runtime, listenHost, tls } = this.deps;
    const audit = this.audit(record.type);
    if (record.type === "pipeline") {
      const auth = { authenticator: this.deps.authenticator, audit: (entry: Parameters<typeof runtime.events.audit>[0]) => runtime.events.audit(entry) };
      return PipelineExport.start({ nc: this.deps.nc, record, decider, auth, audit, log: this.deps.log, listenHost, tls: tls && { cert: tls.cert, key: tls.key }, progress: await this.pipelines() });
    }
    const [host, port] = splitEndpoint(record.endpoint ?? "");
    return PostgresExportServer.listen({
      exportId: record.id,
      host: listenHost,
      port: record.listen.port,
      backend: { host, port, ...backendTlsOf(record) },
      decider,
      audit,
      limits: this.deps.limits,
      tls: tls?.context,
      directVerification: directVerificationFor(record, this.deps.authenticator, audit),
      policy: { allowWrites: record.allowWrites === true, strict: record.strict === true },
      workers: await this.proxyWorkers(),
      onConnectionEnd: (connectionId, counts, identity) =>
        // A closing connection's summary answers nobody: a failure to store it is logged and counted by the event log.
        void runtime.events.trace("export", flowOf(record.metadata.type), { kind: "export.connection", time: new Date().toISOString(), nodeId: runtime.membership.nodeId, exportId: record.id, connectionId, identity: identity.user ?? null, database: identity.database ?? null, purposeId: record.metadata.purposeId, type: record.metadata.type, mappingGroup: record.resolverGroup, ...counts }),
    });
  }

  /** The proxy worker processes (none with EXPORT_WORKERS=0), started when the first PostgreSQL export is served: a node that serves none runs none. */
  private proxyWorkers(): Promise<ProxyWorkerPool | undefined> {
    const { proxyWorkers, tls, log, decisions } = this.deps;
    if (proxyWorkers === 0) return Promise.resolve(undefined);
    this.workersStarting ??= ProxyWorkerPool.start({ workers: proxyWorkers, tls: tls && { cert: tls.cert, key: tls.key }, log: this.countingRestarts(log) }).then(
      (workers) => {
        this.pool = workers;
        this.unsubscribe.push(decisions.onUserChange((userId) => workers.userChanged(userId)), decisions.onUsersReset(() => workers.usersReset()), decisions.onPolicyChange(() => workers.refreshMappings()));
        return workers;
      },
      (error: unknown) => {
        // Tried again with the next export served.
        this.workersStarting = undefined;
        throw error;
      },
    );
    return this.workersStarting;
  }

  private open(record: ExportRecord): void {
    const { runtime, decisions, log } = this.deps;
    const decider = new ExportDecider(decisions, runtime.events, runtime.membership.nodeId, record.id, record.metadata, record.resolverGroup);
    const listener: Listener = { record, decider };
    this.listeners.set(record.id, listener);
    listener.opening = (async () => {
      await decider.warm();
      const server = await this.serve(record, decider);
      // Stopped, removed or moved while the port was opening: close it again.
      if (this.listeners.get(record.id) !== listener || listener.closing) await server.close();
      else listener.server = server;
      this.failures.delete(record.id);
    })()
      .catch((error: unknown) => {
        const reason = (error as NodeJS.ErrnoException).code ?? (error as Error).message;
        log.warn({ err: error, exportId: record.id, port: record.listen.port }, "export port could not be opened; will retry");
        this.audit(record.type)("warn", "port.failed", `export ${record.id} could not open ${this.deps.listenHost}:${record.listen.port} (${reason})`, { exportId: record.id, component: record.type, host: this.deps.listenHost, port: record.listen.port, error: reason });
        this.failures.set(record.id, { error: reason === "EADDRINUSE" ? `port ${record.listen.port} is in use by another program` : `cannot listen: ${reason}`, retryAt: Date.now() + retryListenAfterMs });
        if (this.listeners.get(record.id) === listener) this.listeners.delete(record.id);
        decider.close();
      })
      .finally(() => (listener.opening = undefined));
  }

  private close(id: string, listener: Listener): void {
    if (listener.closing) return;
    listener.closing = (async () => {
      await listener.opening;
      await listener.server?.close();
      listener.decider.close();
      // Removed while served: what it answered after the removal's purge goes too.
      if (listener.record.type === "pipeline" && !this.exports.get(stateKey(exportActor.type, id))) await this.discardPipeline(id);
    })()
      .catch((error: unknown) => this.deps.log.warn({ err: error, exportId: id }, "closing an export port failed"))
      .finally(() => {
        if (this.listeners.get(id) === listener) this.listeners.delete(id);
      });
  }

  /** A removed pipeline export's records: its input and answers are purged, its progress forgotten. */
  async discardPipeline(exportId: string): Promise<void> {
    const progress = await this.pipelines();
    const jsm = await jetstreamManager(this.deps.nc);
    await jsm.streams.purge(Streams.pipelineIn.name, { filter: Subjects.pipelineInput(exportId) });
    await jsm.streams.purge(Streams.pipelineOut.name, { filter: Subjects.pipelineOutput(exportId) });
    await progress.kv.purge(exportId);
  }

  /** Closes every port this node serves (the exports stay active: another node, or this one restarted, serves them). */
  async stop(): Promise<void> {
    this.stopping = true;
    clearInterval(this.timer);
    this.subscription?.unsubscribe();
    this.exports.stop();
    for (const [id, listener] of this.listeners) this.close(id, listener);
    await Promise.allSettled([...this.listeners.values()].map((l) => l.closing));
    for (const unsubscribe of this.unsubscribe) unsubscribe();
    const workers = await this.workersStarting?.catch(() => undefined);
    await workers?.stop();
  }
}

/** `host:port` (IPv6 hosts in brackets) into its parts; validated when the export is created. */
export function splitEndpoint(endpoint: string): [string, number] {
  const match = /^(?:\[([^\]]+)\]|([^:]+)):(\d{1,5})$/.exec(endpoint);
  if (!match) throw new Error(`invalid endpoint '${endpoint}'`);
  return [match[1] ?? match[2]!, Number(match[3])];
}

/** TLS to a PostgreSQL export's backend as its record asks (none for `disable`, the default). */
function backendTlsOf(record: ExportRecord): { tls?: BackendTls } {
  const mode = record.backendTls ?? "disable";
  if (mode === "disable") return {};
  return { tls: { mode, ...(record.backendCa !== undefined ? { ca: record.backendCa } : {}) } };
}
