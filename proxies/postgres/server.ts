import { randomUUID } from "node:crypto";
import { createServer, type Server, type Socket } from "node:net";
import type { SecureContext } from "node:tls";
import { CancelKeys, honourCancel } from "./cancel-keys";
import type { BackendEndpoint } from "./session/backend-tls";
import { fatalMessage, ProxySession } from "./session";
import { addRowCounts, emptyRowCounts } from "../../exports/row-counts";
import { listenExclusive, sqlServing } from "../../exports/wire-listener";
import { announceWirePort } from "../../exports/door";
import { UserIdMemo } from "./user-id-memo";
import type { DirectVerification, ProxyAudit, ProxyLimits, ProxyStoredAudit, SessionCounts } from "./types";
import type { RowDecider } from "../../exports/row-decider";
import type { ProxyWorkerPool } from "./worker-pool";
import type { ExportServing } from "../../api/types";
import { loadSqlParser } from "./analysis/sql-parser";
import { sharedAnalyses } from "./analysis/analysis-cache";
import type { StatementPolicy } from "./analysis/statement-analysis";
import type { PushdownVerdicts } from "./verdict-watch";
import { LoginSlots, loginSlotMessage } from "../../exports/login-slots";
import { RepeatedAudit } from "../../auth/repeated-audit";

export interface ExportServerOptions {
  exportId: string;
  host: string;
  port: number;
  /** The backend, and TLS to it when the export asks for it (sessions in workers get it with the export). */
  backend: BackendEndpoint;
  decider: RowDecider;
  audit: ProxyAudit;
  /** For what may go on only once its record is stored: the port's opening, a connection's outgoing and pass-through records. */
  storedAudit: ProxyStoredAudit;
  limits: ProxyLimits;
  tls?: SecureContext;
  /** Present when the export's component enforces authentication. */
  directVerification?: DirectVerification;
  /** Read-only unless writes are allowed; strict predicates; pushdown. */
  policy: StatementPolicy;
  /** Pushdown: the export's verdict tables. */
  pushdown?: PushdownVerdicts;
  /** Present when sessions run in the node's proxy worker processes rather than on its own event loop. */
  workers?: ProxyWorkerPool;
  /** Called when a connection ends, with what it counted (for the trace). */
  onConnectionEnd?(connectionId: string, counts: SessionCounts, identity: { user?: string; database?: string }): void;
}

/**
 * The network endpoint of one PostgreSQL export: accepts clients and runs a ProxySession for
 * each, here or (with workers) in one of the node's proxy worker processes.
 */
export class PostgresExportServer {
  private readonly sessions = new Set<ProxySession>();
  /** Every accepted socket until it closes (a refused one too): closing the export closes them all. */
  private readonly sockets = new Set<Socket>();
  private readonly cancelKeys = new CancelKeys();
  private readonly userIds = new UserIdMemo();
  private readonly totals = { total: 0, refused: 0, rows: emptyRowCounts() };
  private readonly since = new Date().toISOString();
  private readonly loggingIn: LoginSlots;
  private readonly refusals: RepeatedAudit;

  private constructor(
    private readonly server: Server,
    private readonly options: ExportServerOptions,
  ) {
    this.loggingIn = new LoginSlots(options.limits);
    this.refusals = new RepeatedAudit((message, details, count) => options.audit("warn", "connection.refused", message, { ...details, count }));
  }

  /** Opens the port; rejects (EADDRINUSE, EACCES...) when it cannot be opened. */
  static async listen(options: ExportServerOptions): Promise<PostgresExportServer> {
    // Sessions parse every statement with PostgreSQL's parser, loaded once per process.
    await loadSqlParser();
    // A connection handed to a worker must reach it unread.
    const server = createServer({ pauseOnConnect: options.workers !== undefined, noDelay: true });
    const endpoint = new PostgresExportServer(server, options);
    server.on("connection", (socket) => endpoint.accept(socket));
    options.workers?.attach(options.exportId, {
      backend: options.backend,
      limits: options.limits,
      decider: options.decider,
      audit: options.audit,
      storedAudit: options.storedAudit,
      directVerification: options.directVerification,
      policy: options.policy,
      pushdown: options.pushdown,
      loggedIn: (connectionId) => endpoint.loggingIn.free(connectionId),
      ended: (connectionId, counts, identity) => endpoint.ended(connectionId, counts, identity),
    });
    try {
      await listenExclusive(server, options.host, options.port);
    } catch (error) {
      await options.workers?.detach(options.exportId);
      throw error;
    }
    await announceWirePort(options, "postgres", () => endpoint.close());
    return endpoint;
  }

  private open(): number {
    return this.options.workers ? this.options.workers.open(this.options.exportId) : this.sessions.size;
  }

  private accept(socket: Socket): void {
    this.totals.total++;
    this.sockets.add(socket);
    socket.once("close", () => this.sockets.delete(socket));
    socket.on("error", () => socket.destroy());
    const { exportId, limits, workers } = this.options;
    const remote = socket.remoteAddress ?? null;
    // Connections logging in have places of their own: unauthenticated clients cannot fill the sessions'.
    if (this.open() - this.loggingIn.size >= limits.maxConnections) {
      this.refuse(
        socket,
        "sessions",
        `export ${exportId} is at its limit of ${limits.maxConnections} connections`,
        "too many connections to this export",
        remote,
      );
      return;
    }
    const connectionId = randomUUID();
    const refusal = this.loggingIn.take(connectionId, socket.remoteAddress);
    if (refusal) {
      this.refuse(socket, refusal, `export ${exportId}: ${loginSlotMessage(refusal, limits)}`, loginSlotMessage(refusal, limits), remote);
      return;
    }
    if (workers) {
      if (workers.handOver(exportId, connectionId, socket)) return;
      this.loggingIn.free(connectionId);
      this.totals.refused++;
      this.options.audit("warn", "connection.refused", `export ${exportId} has no proxy worker running (they are being started again)`, {
        exportId,
        component: "postgres",
        remote: socket.remoteAddress ?? null,
      });
      socket.end(fatalMessage("08006", "the export cannot take connections at this moment; try again"));
      return;
    }
    const session: ProxySession = new ProxySession(socket, {
      exportId,
      connectionId,
      backend: this.options.backend,
      limits,
      decider: this.options.decider,
      audit: this.options.audit,
      storedAudit: this.options.storedAudit,
      cancelKeys: this.cancelKeys,
      cancel: (keys, cancelling) => honourCancel(this.cancelKeys, keys, this.options, cancelling),
      tls: this.options.tls,
      directVerification: this.options.directVerification,
      userIds: this.userIds,
      policy: this.options.policy,
      pushdown: this.options.pushdown,
      analyses: sharedAnalyses,
      onLoggedIn: () => this.loggingIn.free(connectionId),
      onEnd: (counts, identity) => {
        this.sessions.delete(session);
        this.ended(connectionId, counts, identity);
      },
    });
    this.sessions.add(session);
  }

  /** Refuses a connection for want of a place (SQLSTATE 53300). */
  private refuse(socket: Socket, reason: string, audited: string, told: string, remote: string | null): void {
    this.totals.refused++;
    this.refusals.record(reason, audited, { exportId: this.options.exportId, component: "postgres", remote, reason });
    socket.end(fatalMessage("53300", told));
  }

  /** A connection ended (here or in a worker): its counts join the export's totals and its trace. */
  private ended(connectionId: string, counts: SessionCounts, identity: { user?: string; database?: string }): void {
    this.loggingIn.free(connectionId);
    addRowCounts(this.totals.rows, counts);
    this.totals.refused += counts.refused > 0 ? 1 : 0;
    this.options.onConnectionEnd?.(connectionId, counts, identity);
  }

  serving(): ExportServing {
    const rows = addRowCounts(this.options.workers?.live(this.options.exportId) ?? emptyRowCounts(), this.totals.rows);
    for (const session of this.sessions) addRowCounts(rows, session.counts);
    return sqlServing(
      { host: this.options.host, port: this.options.port, since: this.since },
      { open: this.open(), total: this.totals.total, refused: this.totals.refused },
      rows,
    );
  }

  /** Closes the port and every connection through it. */
  async close(): Promise<void> {
    const closed = new Promise<void>((resolve) => this.server.close(() => resolve()));
    for (const session of [...this.sessions]) session.close();
    for (const socket of this.sockets) socket.destroy();
    await this.options.workers?.detach(this.options.exportId);
    await closed;
    this.options.audit("info", "port.closed", `export ${this.options.exportId} stopped listening on ${this.options.host}:${this.options.port}`, {
      exportId: this.options.exportId,
      component: "postgres",
      host: this.options.host,
      port: this.options.port,
    });
  }
}
