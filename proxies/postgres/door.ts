import { randomBytes } from "node:crypto";
import type { ClientConfig } from "pg";
import type { Logger } from "pino";
import { isDatabaseCredentials, type ExportRecord } from "../../actors/export/export-actor";
import { HandlerError } from "../../actors/runtime/errors";
import { backendTlsOf, checkBackendCa } from "../../exports/backend-tls";
import type { ExportBody } from "../../api/types";
import type { CredentialVerification } from "../../exports/direct-verification";
import { connectionTracer } from "../../exports/connection-trace";
import type { DoorServices, ExportDoorType, OpenDoor } from "../../exports/door";
import { refuseField, type RefusalReasons, takenFields } from "../../exports/body-checks";
import { checkHostPortEndpoint, splitEndpoint } from "../../exports/endpoint";
import type { DecisionService } from "../../ports/decision-service";
import { PostgresExportServer } from "./server";
import type { DirectVerification, ProxyLimits } from "./types";
import { ProxyWorkerPool } from "./worker-pool";
import { pushdownTarget } from "./verdict-table";
import { VerdictTables } from "./verdict-tables";

export interface PostgresDoorSettings {
  limits: ProxyLimits;
  /** Proxy worker processes for sessions (0: sessions run on the node's loop). */
  workers: number;
  tls?: { cert: Buffer; key: Buffer };
  decisions: DecisionService;
  log: Logger;
}

/** The line ProxyWorkerPool logs (at error) each time it starts an exited worker again. */
const workerRestartLine = "proxy worker exited; starting it again";

/** Direct verification's failures in PostgreSQL's own terms (SQLSTATE and wording). */
function postgresVerification(verification: CredentialVerification): DirectVerification {
  return {
    backendIdentity: verification.backendIdentity,
    async verify(user, password, connectionId) {
      const outcome = await verification.verify(user, password, connectionId);
      if (outcome.ok) return outcome;
      if (outcome.failure === "token-needs-export-credentials") return { ok: false, sqlState: "28000", message: outcome.reason };
      // PostgreSQL's insufficient_privilege, as for a role without CONNECT on the database.
      if (outcome.failure === "forbidden") return { ok: false, sqlState: "42501", message: `permission denied: ${outcome.reason}` };
      if (outcome.failure === "unavailable") return { ok: false, sqlState: "08006", message: "the export could not verify the credentials now; try again" };
      // PostgreSQL's own wording: a client cannot tell an unknown user from a wrong password.
      return { ok: false, sqlState: "28P01", message: `password authentication failed for user "${user}"` };
    },
  };
}

/**
 * The verdict table's connection's TLS, as strict as the sessions': never cleartext when TLS is
 * asked for (`prefer` too: the table's writes are the service's own).
 */
function pgSslOf(record: ExportRecord): ClientConfig["ssl"] {
  const mode = record.backendTls ?? "disable";
  if (mode === "disable") return false;
  if (mode === "prefer" || mode === "require") return { rejectUnauthorized: false };
  return {
    rejectUnauthorized: true,
    ...(record.backendCa !== undefined ? { ca: record.backendCa } : {}),
    ...(mode === "verify-ca" ? { checkServerIdentity: () => undefined } : {}),
  };
}

/** Rewritten statements carry this 20-digit literal where the verdict version goes (random per process: no client text can aim at it). */
const versionMarker = `9${Array.from(randomBytes(19), (byte) => String(byte % 10)).join("")}`;

/** The fields of PUT /export a PostgreSQL export takes (object-storage fields and cloud signing refused). */
const taken = takenFields("endpoint", "credentials", "resourceServerId", "allowWrites", "strict", "backendTls", "backendCa", "pushdown");
const refusedBecause: RefusalReasons = {
  cloudSigning: "a postgres export's clients cannot sign requests",
  buckets: "a postgres export serves tables, not objects",
  formats: "a postgres export serves tables, not objects",
};

/**
 * PostgreSQL exports (docs/postgres-export.md): a wire-protocol proxy in front of a PostgreSQL
 * server. The node's proxy worker processes start with the first export it serves.
 */
export class PostgresDoor implements ExportDoorType {
  readonly type = "postgres" as const;
  readonly takes = taken;
  readonly refusedBecause = refusedBecause;
  private workersStarting?: Promise<ProxyWorkerPool>;
  private pool?: ProxyWorkerPool;
  private readonly unsubscribe: Array<() => void> = [];
  /** Proxy workers started again after exiting, counted from the pool's log line (the pool keeps no count). */
  workerRestarts = 0;

  constructor(private readonly settings: PostgresDoorSettings) {}

  validate(body: ExportBody): void {
    if (body.credentials && !isDatabaseCredentials(body.credentials))
      refuseField(this.type, "credentials", "a postgres export logs in with {user, password}, not an access key");
    checkHostPortEndpoint(this.type, body.endpoint);
    checkBackendCa(body);
    // The verdict table is written with the export's own identity: clients' identities vary, and may not write there.
    if (body.pushdown && !body.credentials)
      throw new HandlerError(
        "EXPORT_INVALID",
        "pushdown needs the export's credentials: the service keeps the verdict table in the backing database with them",
        { details: [{ path: "pushdown", problem: "needs credentials" }] },
      );
  }

  async open(services: DoorServices): Promise<OpenDoor> {
    const { record } = services;
    const [host, port] = splitEndpoint(record.endpoint ?? "");
    const login = isDatabaseCredentials(record.credentials) ? record.credentials : undefined;
    const target = record.pushdown && login ? pushdownTarget(record.id, versionMarker) : undefined;
    const pushdown =
      target &&
      login &&
      new VerdictTables({
        target,
        connection: { host, port, user: login.user, password: login.password, ssl: pgSslOf(record) },
        decider: services.decider,
        decisions: this.settings.decisions,
        nc: services.nc,
        log: services.log,
      });
    const server = await PostgresExportServer.listen({
      exportId: record.id,
      host: services.listenHost,
      port: record.listen.port,
      backend: { host, port, ...backendTlsOf(record) },
      decider: services.decider,
      audit: services.audit,
      storedAudit: services.storedAudit,
      limits: this.settings.limits,
      tls: services.tls?.context,
      directVerification: services.verification && postgresVerification(services.verification),
      policy: { allowWrites: record.allowWrites === true, strict: record.strict === true, ...(target ? { pushdown: target } : {}) },
      pushdown,
      workers: await this.workers(),
      onConnectionEnd: connectionTracer(services),
    }).catch(async (error: unknown) => {
      await pushdown?.close();
      throw error;
    });
    if (!pushdown) return server;
    return {
      serving: () => server.serving(),
      close: async () => {
        await server.close();
        await pushdown.close();
      },
    };
  }

  /** Proxy worker processes running now (0 before the first PostgreSQL export, or with EXPORT_WORKERS=0). */
  runningWorkers(): number {
    return this.pool?.runningCount() ?? 0;
  }

  /** The worker processes (none with EXPORT_WORKERS=0), started when the first export is served: a node that serves none runs none. */
  private workers(): Promise<ProxyWorkerPool | undefined> {
    const { workers, tls, log, decisions } = this.settings;
    if (workers === 0) return Promise.resolve(undefined);
    this.workersStarting ??= ProxyWorkerPool.start({ workers, tls, log: this.countingRestarts(log) }).then(
      (pool) => {
        this.pool = pool;
        this.unsubscribe.push(
          decisions.onUserChange((userId) => pool.userChanged(userId)),
          decisions.onUsersReset(() => pool.usersReset()),
          decisions.onPolicyChange(() => pool.refreshMappings()),
        );
        return pool;
      },
      (error: unknown) => {
        // Tried again with the next export served.
        this.workersStarting = undefined;
        throw error;
      },
    );
    return this.workersStarting;
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

  async stop(): Promise<void> {
    for (const unsubscribe of this.unsubscribe) unsubscribe();
    const pool = await this.workersStarting?.catch(() => undefined);
    await pool?.stop();
  }
}
