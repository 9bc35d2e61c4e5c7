import { connect, type Socket } from "node:net";
import { encodeErrPacket } from "../../protocols/mysql/err-packet";
import { ProtocolError } from "../../protocols/mysql/protocol-error";
import { emptyRowCounts } from "../../exports/row-counts";
import { CommandPhase } from "./session/command-phase";
import { LoginEnded, MysqlLogin } from "./session/login";
import { ChannelClosed, PacketChannel } from "./session/packet-channel";
import { SessionFailure } from "./session/session-failure";
import { preLoginPayloadBytes, type MysqlSessionCounts, type MysqlSessionDeps } from "./session/session-deps";

/**
 * One client connection to a MySQL export: the backend connection opened for it, the login
 * (session/login.ts), then the command phase (session/command-phase.ts) until either side
 * closes. Any failure ends both connections; nothing is released on an error path.
 */
export class MysqlSession {
  readonly counts: MysqlSessionCounts = { ...emptyRowCounts(), refused: 0 };
  private readonly identity: { user?: string; database?: string } = {};
  private backendSocket?: Socket;
  private client?: PacketChannel;
  private ended = false;

  constructor(
    private readonly socket: Socket,
    private readonly deps: MysqlSessionDeps,
  ) {
    void this.run();
  }

  private async run(): Promise<void> {
    const { deps } = this;
    const backendSocket = connect({ host: deps.backend.host, port: deps.backend.port, noDelay: true });
    this.backendSocket = backendSocket;
    backendSocket.on("error", () => backendSocket.destroy());
    const client = new PacketChannel(this.socket, preLoginPayloadBytes);
    this.client = client;
    const backend = new PacketChannel(backendSocket, deps.limits.maxPayloadBytes);
    let failure: SessionFailure | undefined;
    const timer = setTimeout(() => {
      failure = new SessionFailure("login timeout", { code: 1159, sqlState: "08S01", message: "connecting and logging in took too long" });
      deps.audit("warn", "authentication.timeout", `connection to export ${deps.exportId} did not log in within ${deps.limits.loginTimeoutMs} ms`, {
        exportId: deps.exportId,
        connectionId: deps.connectionId,
        component: "mysql",
      });
      this.close(failure);
    }, deps.limits.loginTimeoutMs);
    try {
      await this.connected(backendSocket);
      const login = await new MysqlLogin(deps, client, backend).run();
      clearTimeout(timer);
      client.maxPayload = deps.limits.maxClientMessageBytes;
      deps.onLoggedIn();
      this.identity.user = login.user;
      if (login.database !== undefined) this.identity.database = login.database;
      await new CommandPhase(deps, client, backend, login.capabilities, this.counts, login.database, this.identity, login.multiStatements).run();
      this.close();
    } catch (error) {
      clearTimeout(timer);
      if (error instanceof SessionFailure) failure = error;
      else if (error instanceof ProtocolError) {
        deps.audit("warn", "protocol.invalid", `export ${deps.exportId} ended a connection: ${error.message}`, {
          exportId: deps.exportId,
          connectionId: deps.connectionId,
          component: "mysql",
          reason: error.message,
        });
        failure = new SessionFailure(error.message, { code: 1043, sqlState: "08S01", message: "malformed packet: the export ended the connection" });
      } else if (!(error instanceof LoginEnded) && !(error instanceof ChannelClosed)) {
        deps.audit("error", "connection.failed", `export ${deps.exportId} ended a connection: ${(error as Error).message}`, {
          exportId: deps.exportId,
          connectionId: deps.connectionId,
          component: "mysql",
          reason: (error as Error).message,
        });
        failure = new SessionFailure((error as Error).message, { code: 2013, sqlState: "HY000", message: "the export ended the connection" });
      }
      this.close(failure);
    }
  }

  /** The backend connection, opened within the connect timeout. */
  private connected(socket: Socket): Promise<void> {
    const { deps } = this;
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => fail(new Error("timeout")), deps.limits.connectTimeoutMs);
      const fail = (error: Error) => {
        clearTimeout(timer);
        deps.audit(
          "warn",
          "connection.backend-unreachable",
          `export ${deps.exportId} cannot reach its backend ${deps.backend.host}:${deps.backend.port}: ${error.message}`,
          {
            exportId: deps.exportId,
            connectionId: deps.connectionId,
            component: "mysql",
            endpoint: `${deps.backend.host}:${deps.backend.port}`,
            reason: error.message,
          },
        );
        reject(new SessionFailure("backend unreachable", { code: 2003, sqlState: "HY000", message: "the export cannot reach its backend now" }));
      };
      socket.once("error", fail);
      socket.once("connect", () => {
        clearTimeout(timer);
        socket.off("error", fail);
        resolve();
      });
    });
  }

  /** Ends both connections (the client gets `failure`'s error first, when there is one); counted once. */
  close(failure?: SessionFailure): void {
    if (this.ended) return;
    this.ended = true;
    const client = this.client;
    if (failure && client && !client.socket.destroyed) {
      client.push(encodeErrPacket(failure.error));
      void client.flush();
      client.socket.end();
      setTimeout(() => client.socket.destroy(), 1000).unref();
    } else this.socket.destroy();
    this.backendSocket?.destroy();
    this.deps.onEnd(this.counts, this.identity);
  }
}
