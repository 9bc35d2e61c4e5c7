import { randomUUID } from "node:crypto";
import { createServer, type Server, type Socket } from "node:net";
import { encodeErrPacket } from "../../protocols/mysql/err-packet";
import { encodePacket } from "../../protocols/mysql/packets";
import type { ExportServing } from "../../api/types";
import { addRowCounts, emptyRowCounts } from "../../exports/row-counts";
import { LoginSlots, loginSlotMessage } from "../../exports/login-slots";
import { listenExclusive, sqlServing } from "../../exports/wire-listener";
import { announceWirePort } from "../../exports/door";
import { RepeatedAudit } from "../../auth/repeated-audit";
import { AnalysisCache } from "./analysis/statement-analysis";
import { MysqlSession } from "./session";
import type { MysqlSessionCounts, MysqlSessionDeps } from "./session/session-deps";

export interface MysqlServerOptions extends Omit<MysqlSessionDeps, "connectionId" | "onEnd" | "onLoggedIn" | "analyses"> {
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
  /** Connections still logging in have places of their own (exports/login-slots.ts): unauthenticated clients cannot fill the sessions'. */
  private readonly loggingIn: LoginSlots;
  private readonly refusals: RepeatedAudit;

  private constructor(
    private readonly server: Server,
    private readonly options: MysqlServerOptions,
  ) {
    this.loggingIn = new LoginSlots(options.limits);
    this.refusals = new RepeatedAudit((message, details, count) => options.audit("warn", "connection.refused", message, { ...details, count }));
  }

  /** Opens the port; rejects (EADDRINUSE, EACCES...) when it cannot be opened. */
  static async listen(options: MysqlServerOptions): Promise<MysqlExportServer> {
    const server = createServer({ noDelay: true });
    const endpoint = new MysqlExportServer(server, options);
    server.on("connection", (socket) => endpoint.accept(socket));
    await listenExclusive(server, options.host, options.port);
    await announceWirePort(options, "mysql", () => endpoint.close());
    return endpoint;
  }

  private accept(socket: Socket): void {
    this.totals.total++;
    this.sockets.add(socket);
    socket.once("close", () => this.sockets.delete(socket));
    socket.on("error", () => socket.destroy());
    const { exportId, limits } = this.options;
    const remote = socket.remoteAddress ?? null;
    if (this.sessions.size - this.loggingIn.size >= limits.maxConnections) {
      this.refuse(socket, "sessions", `export ${exportId} is at its limit of ${limits.maxConnections} connections`, "Too many connections", remote);
      return;
    }
    const connectionId = randomUUID();
    const refusal = this.loggingIn.take(connectionId, socket.remoteAddress);
    if (refusal) {
      this.refuse(socket, refusal, `export ${exportId}: ${loginSlotMessage(refusal, limits)}`, loginSlotMessage(refusal, limits), remote);
      return;
    }
    const session: MysqlSession = new MysqlSession(socket, {
      ...this.options,
      connectionId,
      analyses: sharedAnalyses,
      onLoggedIn: () => this.loggingIn.free(connectionId),
      onEnd: (counts, identity) => {
        this.loggingIn.free(connectionId);
        this.sessions.delete(session);
        addRowCounts(this.totals.rows, counts);
        this.totals.refused += counts.refused > 0 ? 1 : 0;
        this.options.onConnectionEnd(connectionId, counts, identity);
      },
    });
    this.sessions.add(session);
  }

  /** Refuses a connection for want of a place: ER_CON_COUNT_ERROR in place of the greeting (as the server answers); repeats audited as counts. */
  private refuse(socket: Socket, reason: string, audited: string, told: string, remote: string | null): void {
    this.totals.refused++;
    this.refusals.record(reason, audited, { exportId: this.options.exportId, component: "mysql", remote, reason });
    socket.end(encodePacket(encodeErrPacket({ code: 1040, sqlState: "08004", message: told }), 0));
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
