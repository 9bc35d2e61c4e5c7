import { randomUUID } from "node:crypto";
import { createServer, type Server, type Socket } from "node:net";
import { encodeErrPacket } from "../../protocols/mysql/err-packet";
import { encodePacket } from "../../protocols/mysql/packets";
import type { ExportServing } from "../../api/types";
import { addRowCounts, emptyRowCounts } from "../../exports/row-counts";
import { listenExclusive, sqlServing } from "../../exports/wire-listener";
import { AnalysisCache } from "./analysis/statement-analysis";
import { MysqlSession } from "./session";
import type { MysqlSessionCounts, MysqlSessionDeps } from "./session/session-deps";

export interface MysqlServerOptions extends Omit<MysqlSessionDeps, "connectionId" | "onEnd" | "analyses"> {
  host: string;
  port: number;
  /** Called when a connection ends, with what it counted (for the trace). */
  onConnectionEnd(connectionId: string, counts: MysqlSessionCounts, identity: { user?: string; database?: string }): void;
}

/** Statement analyses, shared by every MySQL export of the process (the policy is part of the key). */
const sharedAnalyses = new AnalysisCache();

/** The network endpoint of one MySQL export: accepts clients and runs a MysqlSession for each on the node's loop. */
export class MysqlExportServer {
  private readonly sessions = new Set<MysqlSession>();
  private readonly sockets = new Set<Socket>();
  private readonly totals = { total: 0, refused: 0, rows: emptyRowCounts() };
  private readonly since = new Date().toISOString();

  private constructor(
    private readonly server: Server,
    private readonly options: MysqlServerOptions,
  ) {}

  /** Opens the port; rejects (EADDRINUSE, EACCES...) when it cannot be opened. */
  static async listen(options: MysqlServerOptions): Promise<MysqlExportServer> {
    const server = createServer({ noDelay: true });
    const endpoint = new MysqlExportServer(server, options);
    server.on("connection", (socket) => endpoint.accept(socket));
    await listenExclusive(server, options.host, options.port);
    options.audit("info", "port.opened", `export ${options.exportId} listening on ${options.host}:${options.port}`, {
      exportId: options.exportId,
      datastore: `${options.backend.host}:${options.backend.port}`,
      component: "mysql",
      host: options.host,
      port: options.port,
    });
    return endpoint;
  }

  private accept(socket: Socket): void {
    this.totals.total++;
    this.sockets.add(socket);
    socket.once("close", () => this.sockets.delete(socket));
    socket.on("error", () => socket.destroy());
    const { exportId, limits } = this.options;
    if (this.sessions.size >= limits.maxConnections) {
      this.totals.refused++;
      this.options.audit("warn", "connection.refused", `export ${exportId} is at its limit of ${limits.maxConnections} connections`, {
        exportId,
        component: "mysql",
        remote: socket.remoteAddress ?? null,
      });
      // ER_CON_COUNT_ERROR, in place of the greeting (as the server answers).
      socket.end(encodePacket(encodeErrPacket({ code: 1040, sqlState: "08004", message: "Too many connections" }), 0));
      return;
    }
    const connectionId = randomUUID();
    const session: MysqlSession = new MysqlSession(socket, {
      ...this.options,
      connectionId,
      analyses: sharedAnalyses,
      onEnd: (counts, identity) => {
        this.sessions.delete(session);
        addRowCounts(this.totals.rows, counts);
        this.totals.refused += counts.refused > 0 ? 1 : 0;
        this.options.onConnectionEnd(connectionId, counts, identity);
      },
    });
    this.sessions.add(session);
  }

  serving(): ExportServing {
    const rows = addRowCounts(emptyRowCounts(), this.totals.rows);
    for (const session of this.sessions) addRowCounts(rows, session.counts);
    return sqlServing(
      { host: this.options.host, port: this.options.port, since: this.since },
      { open: this.sessions.size, total: this.totals.total, refused: this.totals.refused },
      rows,
    );
  }

  /** Closes the port and every connection through it. */
  async close(): Promise<void> {
    const closed = new Promise<void>((resolve) => this.server.close(() => resolve()));
    for (const session of [...this.sessions]) session.close();
    for (const socket of this.sockets) socket.destroy();
    await closed;
    this.options.audit("info", "port.closed", `export ${this.options.exportId} stopped listening on ${this.options.host}:${this.options.port}`, {
      exportId: this.options.exportId,
      component: "mysql",
      host: this.options.host,
      port: this.options.port,
    });
  }
}
