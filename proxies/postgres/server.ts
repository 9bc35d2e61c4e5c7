import { randomUUID } from "node:crypto";
import { createServer, type Server, type Socket } from "node:net";
import type { SecureContext } from "node:tls";
import { CancelKeys } from "./cancel-keys";
import { fatalMessage, ProxySession } from "./session";
import { UserIdMemo } from "./user-id-memo";
import type { DirectVerification, ProxyAudit, ProxyLimits, RowDecider, SessionCounts } from "./types";
import type { ExportServing } from "../types";

export interface ExportServerOptions {
  exportId: string;
  host: string;
  port: number;
  backend: { host: string; port: number };
  decider: RowDecider;
  audit: ProxyAudit;
  limits: ProxyLimits;
  tls?: SecureContext;
  /** Present when the export's component enforces authentication. */
  directVerification?: DirectVerification;
  /** Called when a connection ends, with what it counted (for the trace). */
  onConnectionEnd?(connectionId: string, counts: SessionCounts, identity: { user?: string; database?: string }): void;
}

/** What an export's listener has served since it opened. */

/** The network endpoint of one PostgreSQL export: accepts clients and runs a ProxySession for each. */
export class PostgresExportServer {
  private readonly sessions = new Set<ProxySession>();
  /** Every accepted socket until it closes (a refused one too): closing the export closes them all. */
  private readonly sockets = new Set<Socket>();
  private readonly cancelKeys = new CancelKeys();
  private readonly userIds = new UserIdMemo();
  private readonly totals = { total: 0, refused: 0, rowsIn: 0, rowsKept: 0, rowsDropped: 0, valuesNulled: 0 };
  private readonly since = new Date().toISOString();

  private constructor(
    private readonly server: Server,
    private readonly options: ExportServerOptions,
  ) {}

  /** Opens the port; rejects (EADDRINUSE, EACCES...) when it cannot be opened. */
  static async listen(options: ExportServerOptions): Promise<PostgresExportServer> {
    const server = createServer({ pauseOnConnect: false, noDelay: true });
    const endpoint = new PostgresExportServer(server, options);
    server.on("connection", (socket) => endpoint.accept(socket));
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen({ host: options.host, port: options.port, exclusive: true }, () => {
        server.off("error", reject);
        resolve();
      });
    });
    server.on("error", () => undefined);
    options.audit("info", "port.opened", `export ${options.exportId} listening on ${options.host}:${options.port}`, { exportId: options.exportId, datastore: `${options.backend.host}:${options.backend.port}`, component: "postgres", host: options.host, port: options.port });
    return endpoint;
  }

  private accept(socket: Socket): void {
    this.totals.total++;
    this.sockets.add(socket);
    socket.once("close", () => this.sockets.delete(socket));
    socket.on("error", () => socket.destroy());
    if (this.sessions.size >= this.options.limits.maxConnections) {
      this.totals.refused++;
      this.options.audit("warn", "connection.refused", `export ${this.options.exportId} is at its limit of ${this.options.limits.maxConnections} connections`, { exportId: this.options.exportId, component: "postgres", remote: socket.remoteAddress ?? null });
      socket.end(fatalMessage("53300", "too many connections to this export"));
      return;
    }
    const connectionId = randomUUID();
    const session: ProxySession = new ProxySession(socket, {
      exportId: this.options.exportId,
      connectionId,
      backend: this.options.backend,
      limits: this.options.limits,
      decider: this.options.decider,
      audit: this.options.audit,
      cancelKeys: this.cancelKeys,
      tls: this.options.tls,
      directVerification: this.options.directVerification,
      userIds: this.userIds,
      onEnd: (counts, identity) => {
        this.sessions.delete(session);
        this.totals.rowsIn += counts.rowsIn;
        this.totals.rowsKept += counts.rowsKept;
        this.totals.rowsDropped += counts.rowsDropped;
        this.totals.valuesNulled += counts.valuesNulled;
        this.totals.refused += counts.refused > 0 ? 1 : 0;
        this.options.onConnectionEnd?.(connectionId, counts, identity);
      },
    });
    this.sessions.add(session);
  }

  serving(): ExportServing {
    let rowsIn = this.totals.rowsIn;
    let rowsKept = this.totals.rowsKept;
    let rowsDropped = this.totals.rowsDropped;
    let valuesNulled = this.totals.valuesNulled;
    for (const session of this.sessions) {
      rowsIn += session.counts.rowsIn;
      rowsKept += session.counts.rowsKept;
      rowsDropped += session.counts.rowsDropped;
      valuesNulled += session.counts.valuesNulled;
    }
    return {
      host: this.options.host,
      port: this.options.port,
      since: this.since,
      connections: { open: this.sessions.size, total: this.totals.total, refused: this.totals.refused },
      rows: { in: rowsIn, kept: rowsKept, dropped: rowsDropped, valuesNulled },
    };
  }

  /** Closes the port and every connection through it. */
  async close(): Promise<void> {
    const closed = new Promise<void>((resolve) => this.server.close(() => resolve()));
    for (const session of [...this.sessions]) session.close();
    for (const socket of this.sockets) socket.destroy();
    await closed;
    this.options.audit("info", "port.closed", `export ${this.options.exportId} stopped listening on ${this.options.host}:${this.options.port}`, { exportId: this.options.exportId, component: "postgres", host: this.options.host, port: this.options.port });
  }
}
