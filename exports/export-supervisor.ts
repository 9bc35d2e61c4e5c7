import type { NatsConnection, Subscription } from "@nats-io/transport-node";
import type { SecureContext } from "node:tls";
import type { Logger } from "pino";
import { exportActor, type ExportRecord } from "../actors/export/export-actor";
import { partitionOf, stateKey } from "../actors/runtime/addressing";
import type { ActorRuntime } from "../actors/runtime/runtime";
import { WatchedBucket } from "../actors/runtime/watched-bucket";
import type { ExportServing } from "../api/types";
import type { Authenticator } from "../auth/authenticator";
import type { DecisionService } from "../ports/decision-service";
import { directVerificationFor } from "./direct-verification";
import type { ExportAudit, ExportDoors, OpenDoor, StoredAudit } from "./door";
import type { EndpointAllowList } from "./endpoint-allow-list";
import { ExportDecider } from "./export-decider";
import { exportOverrides } from "./export-overrides";
import { ExportSubjects } from "./subjects";

const scanEveryMs = 1000;
/** Wait before trying again to open a port that could not be opened. */
const retryListenAfterMs = 5000;
/** A port that keeps failing for the same reason is audited again at most this often (with the count of tries between): not every 5 s. */
const repeatedPortFailureAuditMs = 10 * 60_000;

export interface ExportSupervisorDeps {
  nc: NatsConnection;
  runtime: ActorRuntime;
  decisions: DecisionService;
  log: Logger;
  /** Address the export ports are opened on. */
  listenHost: string;
  /** The exports' TLS certificate and key (and the context made of them). */
  tls?: { cert: Buffer; key: Buffer; context: SecureContext };
  authenticator: Authenticator;
  /** The export types this node serves (service/export-doors.ts). */
  doors: ExportDoors;
  /** Backing endpoints exports may name; an export stored before the list was set (or changed) is not opened. */
  allowedEndpoints?: EndpointAllowList;
}

interface Listener {
  record: ExportRecord;
  decider: ExportDecider;
  server?: OpenDoor;
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

/** Why an export's port is not open, as GET /export says it (servingError). */
function servingError(reason: string, port: number): string {
  if (reason === "EADDRINUSE") return `port ${port} is in use by another program`;
  // The door opened the port, the audit log did not store port.opened (a full audit stream): it closed it again (exports/door.ts).
  if (reason === "AUDIT_UNAVAILABLE")
    return `not served: the audit log did not store the opening of its port (full or unreachable); tried again every ${retryListenAfterMs / 1000} s`;
  return `cannot listen: ${reason}`;
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
  private readonly listeners = new Map<string, Listener>();
  private readonly failures = new Map<string, { error: string; retryAt: number; audited?: { reason: string; at: number; repeats: number } }>();
  private subscription?: Subscription;
  private timer?: NodeJS.Timeout;
  private stopping = false;

  constructor(private readonly deps: ExportSupervisorDeps) {
    this.exports = new WatchedBucket<ExportRecord>("exports", deps.runtime.host.store.kv, deps.log, `${exportActor.type}.>`);
  }

  async start(): Promise<void> {
    await this.exports.start();
    await this.exports.ready;
    this.exports.on("change", () => this.scan());
    this.subscription = this.deps.nc.subscribe(ExportSubjects.servingAll, {
      callback: (error, message) => {
        if (error) return;
        const exportId = message.subject.slice(ExportSubjects.serving("").length);
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
    const stored = this.storedAudit(category);
    return (level, event, message, details) => void stored(level, event, message, details);
  }

  /** The same records, for answers that must wait until the record is stored (a login admitted only once audited). */
  private storedAudit(category: string): StoredAudit {
    return (level, event, message, details) =>
      this.deps.runtime.events.audit({ category, level, event, message, details }).then(
        () => true,
        (error: unknown) => {
          this.deps.log.warn({ err: error, event }, "audit record not stored");
          return false;
        },
      );
  }

  /** Opens the export's door with the services every door shares. */
  private serve(record: ExportRecord, decider: ExportDecider): Promise<OpenDoor> {
    const { runtime, authenticator } = this.deps;
    const audit = this.audit(record.type);
    const overrides = exportOverrides(record);
    return this.deps.doors[record.type].open({
      record,
      decider,
      audit,
      events: runtime.events,
      nodeId: runtime.membership.nodeId,
      authenticator,
      storedAudit: this.storedAudit(record.type),
      verification: directVerificationFor(record, authenticator, this.storedAudit(record.type), overrides),
      overrides,
      listenHost: this.deps.listenHost,
      tls: this.deps.tls,
      nc: this.deps.nc,
      log: this.deps.log,
    });
  }

  private open(record: ExportRecord): void {
    const { runtime, decisions, log } = this.deps;
    const notAllowed = this.deps.allowedEndpoints?.problem(record.endpoint);
    if (notAllowed) {
      // The list is the process's: refused until a restart with another list, so audited once, not at every scan.
      this.audit(record.type)("warn", "export.refused", `export ${record.id} is not served: ${notAllowed}`, {
        exportId: record.id,
        component: record.type,
        endpoint: record.endpoint,
      });
      this.failures.set(record.id, { error: `not served: ${notAllowed}`, retryAt: Number.POSITIVE_INFINITY });
      return;
    }
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
        // Audited when it starts failing or fails otherwise, then once per repeatedPortFailureAuditMs with the tries between:
        // every 5 s for as long as it lasts (17,000 records a day) could fill the audit stream by itself.
        const now = Date.now();
        const before = this.failures.get(record.id)?.audited;
        const repeat = before !== undefined && before.reason === reason && now - before.at < repeatedPortFailureAuditMs;
        if (!repeat)
          this.audit(record.type)("warn", "port.failed", `export ${record.id} could not open ${this.deps.listenHost}:${record.listen.port} (${reason})`, {
            exportId: record.id,
            component: record.type,
            host: this.deps.listenHost,
            port: record.listen.port,
            error: reason,
            triesSinceLastRecord: before?.reason === reason ? before.repeats : 0,
          });
        this.failures.set(record.id, {
          error: servingError(reason, record.listen.port),
          retryAt: now + retryListenAfterMs,
          audited: repeat ? { ...before, repeats: before.repeats + 1 } : { reason, at: now, repeats: 0 },
        });
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
      // Removed while served: what it stored after the removal's purge goes too.
      if (!this.exports.get(stateKey(exportActor.type, id))) await this.deps.doors[listener.record.type].discard?.(id);
    })()
      .catch((error: unknown) => this.deps.log.warn({ err: error, exportId: id }, "closing an export port failed"))
      .finally(() => {
        if (this.listeners.get(id) === listener) this.listeners.delete(id);
      });
  }

  /** Closes every port this node serves (the exports stay active: another node, or this one restarted, serves them). */
  async stop(): Promise<void> {
    this.stopping = true;
    clearInterval(this.timer);
    this.subscription?.unsubscribe();
    this.exports.stop();
    for (const [id, listener] of this.listeners) this.close(id, listener);
    await Promise.allSettled([...this.listeners.values()].map((l) => l.closing));
    await Promise.allSettled(Object.values(this.deps.doors).map((door) => door.stop?.()));
  }
}
