import type { Socket } from "node:net";
import { encodeErrorResponse, errorFields } from "../../protocols/postgres/error-response";
import type { SessionCounts } from "./types";
import { BackendPump } from "./session/backend-pump";
import { ClientPump } from "./session/client-pump";
import { Connection } from "./session/connection";
import { ExpectationQueue } from "./session/expectation-queue";
import { Login } from "./session/login";
import { NamedResults } from "./session/named-results";
import { ParameterReports } from "./session/parameter-reports";
import { RecentStatements } from "./session/recent-statements";
import { RowDescriptions } from "./session/row-descriptions";
import { RowFilter } from "./session/row-filter";
import { SessionCatalog } from "./session/session-catalog";
import type { SessionDeps } from "./session/session-deps";

export type { SessionDeps } from "./session/session-deps";

/**
 * One client connection through a PostgreSQL export. The client's messages pass to the backend
 * as they are (authentication included: pass-through), except those the export refuses; the
 * backend's answers pass back with every row decided: rows whose user the purpose does not
 * allow vanish, and each value whose column's category is not allowed becomes NULL. Columns
 * are known by table OID and attribute number; the proxy learns each portal's columns from a
 * Describe of the portal right before every Execute (the client's own, or else its own), and
 * finds the mapped columns in the catalog with a query of its own on the same connection while
 * it is idle.
 *
 * The parts, each in `session/`: the connection (sockets, phase, endings), login, the
 * expectation queue, the catalog, the row filter and row descriptions, and the two pumps.
 * This class only wires them together.
 */
export class ProxySession {
  private readonly connection: Connection;
  private readonly clientPump: ClientPump;
  private readonly backendPump: BackendPump;

  constructor(socket: Socket, deps: SessionDeps) {
    const connection = (this.connection = new Connection(deps, socket));
    const queue = new ExpectationQueue();
    const catalog = new SessionCatalog(deps.decider, queue, connection);
    const reports = new ParameterReports(connection);
    const named = new NamedResults();
    const recent = new RecentStatements();
    const login = new Login(connection, queue, catalog, reports, {
      attachClient: (secure) => this.attachClient(secure),
      backendReads: () => this.backendPump,
      backendClosed: () => this.backendPump.backendClosed(),
      ready: () => {
        this.clientPump.sessionReady();
        deps.onLoggedIn?.();
      },
    });
    const rows = new RowFilter(deps.decider, deps.userIds, connection.counts);
    const descriptions = new RowDescriptions(deps.decider, catalog, recent);
    this.backendPump = new BackendPump(connection, queue, catalog, named, descriptions, rows, reports, login);
    this.clientPump = new ClientPump(connection, queue, catalog, named, recent, login);
    connection.whenClosed(() => catalog.close());
    connection.whenClosed(() => login.close());
    connection.whenClosed(() => queue.releaseWaiting());
    this.attachClient(socket);
  }

  get counts(): SessionCounts {
    return this.connection.counts;
  }

  /** Ends the connection with a FATAL error the client reads (the connection's trace is recorded as usual). */
  fatal(sqlState: string, message: string): void {
    this.connection.fatal(sqlState, message);
  }

  close(destroyClient = true): void {
    this.connection.close(destroyClient);
  }

  /** Bytes from the client: its socket's `'data'`, or its reads into a buffer (client-reads.ts). */
  clientBytes(chunk: Buffer): void {
    const { idle } = this.connection;
    if (idle) idle.traffic = true;
    this.clientPump.received(chunk);
  }

  private attachClient(socket: Socket): void {
    socket.setNoDelay(true);
    socket.on("data", (chunk: Buffer) => this.clientBytes(chunk));
    socket.on("drain", () => {
      if (!this.backendPump.pumping) this.connection.backend?.resume();
    });
    socket.on("error", () => this.close());
    socket.on("close", () => this.close());
  }
}

/** Bytes of an ErrorResponse, for callers outside a session (connection limit reached). */
export function fatalMessage(sqlState: string, message: string): Buffer {
  return encodeErrorResponse(errorFields("FATAL", sqlState, message));
}
