import { connect as connectTcp, type Socket } from "node:net";
import { connectionNotAuditedMessage } from "../../../exports/door";
import { TLSSocket } from "node:tls";
import { decodeAuthentication, encodeAuthenticationCleartextPassword, encodeAuthenticationOk } from "../../../protocols/postgres/authentication";
import { decodeBackendKeyData, encodeBackendKeyData, type BackendKeyData } from "../../../protocols/postgres/backend-key-data";
import { BackendCode } from "../../../protocols/postgres/codes";
import { decodeErrorFields, encodeErrorResponse, encodeNoticeResponse } from "../../../protocols/postgres/error-response";
import { startupPacketLength, type Frame } from "../../../protocols/postgres/frames";
import { encodeNegotiateProtocolVersion } from "../../../protocols/postgres/negotiate-protocol-version";
import { decodeParameterStatus } from "../../../protocols/postgres/parameter-status";
import { decodeReadyForQuery } from "../../../protocols/postgres/ready-for-query";
import { decodeStartup, encodeStartup } from "../../../protocols/postgres/startup";
import { ProtocolError } from "../../../protocols/postgres/wire";
import { BackendLogin, BackendLoginError } from "../backend-login";
import type { OutputBuffer } from "../output-buffer";
import { sanitizeError, sanitizeNotice } from "../sanitize";
import type { Connection } from "./connection";
import type { ExpectationQueue } from "./expectation-queue";
import { BackendTlsFailure, connectWithTls, type BackendEndpoint, type BackendTls } from "./backend-tls";
import { bodyOf } from "./frame-body";
import type { ParameterReports } from "./parameter-reports";
import type { SessionCatalog } from "./session-catalog";

/** Startup packets are small; PostgreSQL itself refuses those over 10,000 bytes. */
export const maxStartupBytes = 10_000;

/** Where the backend's bytes go: read into `readBuffer`, `length` bytes at a time, handled by `read` (plain TCP), or handed to `received`. */
export interface BackendReads {
  readonly readBuffer: Buffer;
  read(length: number): boolean;
  /** Bytes handed over by the socket (TLS: decrypted records), not read into `readBuffer`. */
  received(chunk: Buffer): void;
}

/** What login needs of the session's other parts, wired by the session. */
export interface LoginHooks {
  /** The client's socket changed (TLS): listen to the new one. */
  attachClient(socket: Socket): void;
  /** The backend pump (made after login: asked for when the backend is connected). */
  backendReads(): BackendReads;
  /** The backend's socket closed. */
  backendClosed(): void;
  /** The session is ready for queries: the client may send full-size messages. */
  ready(): void;
}

/**
 * A session's login, up to its first ReadyForQuery: the startup packet (SSLRequest and TLS,
 * GSSENCRequest, CancelRequest, protocol version, parameters), direct verification of the
 * client's password when the export enforces it, the backend connection, and the backend's
 * authentication exchange (relayed, or answered by the proxy with the back-end identity),
 * ended by the proxy's catalog lookup before the client's first query.
 */
export class Login {
  /** Resolves once the session is ready for queries (catalog known), or closed. */
  readonly sessionReady: Promise<void>;
  private markReady!: () => void;
  private readonly authenticationTimer: NodeJS.Timeout;
  /** Direct verification: the startup parameters wait here while the client's password is checked. */
  private startupParameters?: Map<string, string>;
  /** Direct verification: the proxy answers the backend's authentication requests itself. */
  private backendLogin?: BackendLogin;
  private backendKeys?: BackendKeyData;
  private proxyKeys?: BackendKeyData;
  /** The backend's TCP socket while TLS is negotiated on it (before it is the session's backend). */
  private negotiating?: Socket;
  /** Whether the audit log stored the connection's outgoing (and pass-through) records: the client is served only once it did. */
  private audited?: Promise<boolean>;

  constructor(
    private readonly connection: Connection,
    private readonly queue: ExpectationQueue,
    private readonly catalog: SessionCatalog,
    private readonly reports: ParameterReports,
    private readonly hooks: LoginHooks,
  ) {
    this.sessionReady = new Promise((resolve) => (this.markReady = resolve));
    // Held open by a client that says nothing, a connection would keep a place others need to log in.
    const timeoutMs = connection.deps.limits.loginTimeoutMs;
    this.authenticationTimer = setTimeout(() => {
      if (connection.phase !== "ready")
        connection.refuse(
          "08006",
          `the connection was not ready in time (startup and authentication take at most ${timeoutMs / 1000} s)`,
          "authentication.timeout",
        );
    }, timeoutMs);
  }

  /** Direct verification: the proxy logs in to the backend itself, so the client has nothing to say during authentication. */
  get logsInItself(): boolean {
    return this.backendLogin !== undefined;
  }

  /** Handles one startup packet; returns the bytes after it. */
  startupPacket(bytes: Buffer): Buffer {
    const length = startupPacketLength(bytes, maxStartupBytes);
    if (length === undefined || bytes.length < length) return bytes;
    const packet = decodeStartup(bytes.subarray(0, length));
    const rest = bytes.subarray(length);
    switch (packet.kind) {
      case "ssl":
        if (!this.connection.deps.tls) {
          this.connection.client.write("N");
          return rest;
        }
        // Bytes sent before the handshake would be read as if they came over TLS (CVE-2021-23214).
        if (rest.length > 0) throw new ProtocolError("data sent before the TLS handshake");
        this.connection.client.write("S");
        this.upgradeToTls();
        return rest;
      case "gssenc":
        this.connection.client.write("N");
        return rest;
      case "cancel":
        this.forwardCancel({ processId: packet.processId, secretKey: packet.secretKey });
        return Buffer.alloc(0);
      case "startup":
        this.startBackend(packet.major, packet.minor, packet.parameters);
        return rest;
    }
  }

  /** Direct verification: the client's password (or bearer token) is checked before any byte reaches the backend. */
  async verifyClient(password: string): Promise<void> {
    const { connection } = this;
    const direct = connection.deps.directVerification!;
    const user = connection.identity.user ?? "";
    const outcome = await direct.verify(user, password, connection.deps.connectionId);
    if (connection.closed) return;
    if (!outcome.ok) {
      connection.counts.refused++;
      connection.fatal(outcome.sqlState, outcome.message);
      return;
    }
    const login = direct.backendIdentity ?? { user, password };
    this.reports.loginUser = login.user;
    this.backendLogin = new BackendLogin(login.user, login.password);
    const parameters = this.startupParameters!;
    this.startupParameters = undefined;
    parameters.set("user", login.user);
    // A caller without postgres:write has a read-only session, even on an export that allows writes: the statement checks and the backend's setting.
    if (!outcome.writes && connection.deps.policy.allowWrites) {
      connection.deps.policy = { ...connection.deps.policy, allowWrites: false };
      parameters.delete("default_transaction_read_only");
      parameters.set("default_transaction_read_only", "on");
    }
    this.connectBackend(parameters);
  }

  /** One message of the backend while it authenticates the session. */
  authenticationFrame(bytes: Buffer, frame: Frame, out: OutputBuffer): void {
    const { connection } = this;
    const { deps } = connection;
    switch (frame.code) {
      case BackendCode.Authentication: {
        // Pass-through: the client answers. Direct verification: the proxy logs in with the back-end identity.
        if (!this.backendLogin) {
          out.pushRange(bytes, frame.start, frame.end);
          return;
        }
        let answer: Buffer | undefined;
        try {
          answer = this.backendLogin.answer(decodeAuthentication(bodyOf(bytes, frame)));
        } catch (error) {
          if (!(error instanceof BackendLoginError)) throw error;
          deps.audit("warn", "connection.backend-login-failed", `export ${deps.exportId} could not log in to its backing store: ${error.message}`, {
            exportId: deps.exportId,
            connectionId: deps.connectionId,
            endpoint: `${deps.backend.host}:${deps.backend.port}`,
          });
          connection.toClient(out);
          connection.fatal("28000", "the export could not log in to its backing store");
          return;
        }
        if (answer === undefined) out.push(encodeAuthenticationOk());
        else if (answer.length > 0) connection.backend?.write(answer);
        return;
      }
      case BackendCode.ParameterStatus: {
        // The same allow-list as after login: a role's stored settings (ALTER ROLE ... SET) are reported here.
        const { name, value } = decodeParameterStatus(bodyOf(bytes, frame));
        if (this.reports.forwards(name, value)) out.pushRange(bytes, frame.start, frame.end);
        return;
      }
      case BackendCode.BackendKeyData:
        this.backendKeys = decodeBackendKeyData(bodyOf(bytes, frame));
        this.proxyKeys = deps.cancelKeys.issue(this.backendKeys);
        out.push(encodeBackendKeyData(this.proxyKeys));
        return;
      case BackendCode.ReadyForQuery: {
        // Authenticated: learn the mapped columns before the client may send its first query.
        connection.phase = "preparing";
        this.queue.transaction = decodeReadyForQuery(bytes, frame.bodyStart, frame.end);
        const ready = Buffer.from(bytes.subarray(frame.start, frame.end));
        connection.toClient(out);
        connection.holdClient();
        // Direct verification: the proxy logged in by itself, perhaps before the outgoing record was stored; ready only once it is.
        Promise.all([this.audited ?? false, this.catalog.refresh()]).then(
          ([stored]) => {
            if (connection.closed) return;
            if (!stored) return this.auditUnavailable();
            connection.phase = "ready";
            this.hooks.ready();
            clearTimeout(this.authenticationTimer);
            if (!connection.client.write(ready)) connection.backend?.pause();
            this.markReady();
            connection.releaseClient();
          },
          (error: unknown) => connection.failBackend(error),
        );
        return;
      }
      case BackendCode.ErrorResponse:
        out.push(encodeErrorResponse(sanitizeError(decodeErrorFields(bodyOf(bytes, frame)))));
        return;
      case BackendCode.NoticeResponse:
        out.push(encodeNoticeResponse(sanitizeNotice(decodeErrorFields(bodyOf(bytes, frame)))));
        return;
      default:
        out.pushRange(bytes, frame.start, frame.end);
    }
  }

  /** The connection closed: no timeout left, nobody waits for readiness, the proxy's cancel keys are void. */
  close(): void {
    clearTimeout(this.authenticationTimer);
    this.markReady();
    if (this.proxyKeys) this.connection.deps.cancelKeys.revoke(this.proxyKeys);
    this.negotiating?.destroy();
  }

  private upgradeToTls(): void {
    const raw = this.connection.client;
    raw.removeAllListeners("data");
    raw.removeAllListeners("drain");
    raw.removeAllListeners("close");
    raw.removeAllListeners("error");
    const secure = new TLSSocket(raw, { isServer: true, secureContext: this.connection.deps.tls });
    this.connection.client = secure;
    this.hooks.attachClient(secure);
  }

  private forwardCancel(proxyKeys: BackendKeyData): void {
    this.connection.close();
    this.connection.deps.cancel(proxyKeys, this.connection.deps.connectionId);
  }

  private startBackend(major: number, minor: number, parameters: Map<string, string>): void {
    const { connection } = this;
    if (major !== 3) {
      connection.refuse("0A000", `unsupported frontend protocol ${major}.${minor}: this export speaks 3.0`, "protocol.unsupported");
      return;
    }
    const replication = parameters.get("replication");
    if (replication !== undefined && !["false", "off", "no", "0"].includes(replication.toLowerCase())) {
      connection.refuse("0A000", "replication connections are not allowed through this export", "replication.refused");
      return;
    }
    this.reports.clientApplicationName = parameters.get("application_name");
    // Read-only unless the export allows writes: a second layer under the statement checks (the client cannot override it: this parameter comes last).
    if (!connection.deps.policy.allowWrites) {
      parameters.delete("default_transaction_read_only");
      parameters.set("default_transaction_read_only", "on");
    }
    // Protocol options (_pq_.*) and minor versions above 0 are declined the way PostgreSQL does.
    const options = [...parameters.keys()].filter((name) => name.startsWith("_pq_."));
    for (const option of options) parameters.delete(option);
    if (minor > 0 || options.length > 0) connection.client.write(encodeNegotiateProtocolVersion(0, options));
    connection.identity = { user: parameters.get("user"), database: parameters.get("database") ?? parameters.get("user") };
    this.reports.loginUser = connection.identity.user;
    if (connection.deps.directVerification) {
      // A password in cleartext: only over TLS.
      if (!(connection.client instanceof TLSSocket)) {
        connection.refuse(
          "28000",
          "this export verifies passwords itself and takes them only over TLS: connect with sslmode=require",
          "connection.tls-required",
        );
        return;
      }
      connection.phase = "verifying";
      this.startupParameters = parameters;
      connection.client.write(encodeAuthenticationCleartextPassword());
      return;
    }
    this.connectBackend(parameters);
  }

  private connectBackend(parameters: Map<string, string>): void {
    const { connection } = this;
    connection.phase = "authenticating";
    // Released once the connection's records are stored (backendConnected): nothing the client says reaches the backend before.
    connection.holdClient();
    const endpoint = connection.deps.backend;
    if (endpoint.tls) this.connectBackendTls({ ...endpoint, tls: endpoint.tls }, parameters);
    else this.connectBackendTcp(parameters);
  }

  /** Plain TCP: read into the backend pump's one buffer (no buffer allocated per read). */
  private connectBackendTcp(parameters: Map<string, string>): void {
    const { connection } = this;
    const { deps } = connection;
    const { host, port } = deps.backend;
    const backendUser = parameters.get("user") ?? "";
    const reads = this.hooks.backendReads();
    const backend = connectTcp({ host, port, onread: { buffer: reads.readBuffer, callback: (length) => reads.read(length) } });
    connection.backend = backend;
    backend.setNoDelay(true);
    backend.setTimeout(deps.limits.connectTimeoutMs, () => {
      if (backend.connecting) backend.destroy(new Error("connect timeout"));
    });
    // Written now: the socket holds writes until connected, so nothing the client sends can overtake it.
    backend.write(encodeStartup(parameters));
    backend.once("connect", () => {
      backend.setTimeout(0);
      this.backendConnected(backendUser);
    });
    backend.on("drain", () => connection.releaseClient(0));
    backend.on("error", (error) => {
      if (connection.phase === "authenticating" && !this.backendKeys && backend.bytesRead === 0) this.backendUnreachable(error);
      else connection.close();
    });
    backend.on("close", () => this.hooks.backendClosed());
  }

  /**
   * TLS as the export asks (SSLRequest, then the handshake): nothing of the session, the startup
   * packet included, reaches the backend before the connection is what the mode requires, and the
   * client is not read meanwhile. TLS records are read as the socket hands them over.
   */
  private connectBackendTls(endpoint: BackendEndpoint & { tls: BackendTls }, parameters: Map<string, string>): void {
    const { connection } = this;
    const { deps } = connection;
    const backendUser = parameters.get("user") ?? "";
    const { raw, ready } = connectWithTls(endpoint, deps.limits.connectTimeoutMs);
    this.negotiating = raw;
    ready.then(
      ({ socket, encrypted }) => {
        this.negotiating = undefined;
        if (connection.closed) {
          socket.destroy();
          return;
        }
        connection.backend = socket;
        const reads = this.hooks.backendReads();
        socket.on("data", (chunk: Buffer) => reads.received(chunk));
        socket.on("drain", () => connection.releaseClient(0));
        socket.on("error", () => connection.close());
        socket.on("close", () => this.hooks.backendClosed());
        // Flowing in every case (the plain socket of `prefer` had a reader before).
        socket.resume();
        socket.write(encodeStartup(parameters));
        this.backendConnected(backendUser, { backendTls: endpoint.tls.mode, encrypted });
      },
      (error: Error) => {
        this.negotiating = undefined;
        raw.destroy();
        if (connection.closed) return;
        if (!(error instanceof BackendTlsFailure)) {
          this.backendUnreachable(error);
          return;
        }
        deps.audit(
          "warn",
          error.auditEvent,
          `export ${deps.exportId} could not connect to ${endpoint.host}:${endpoint.port} as its backendTls (${endpoint.tls.mode}) requires: ${error.message}`,
          {
            exportId: deps.exportId,
            connectionId: deps.connectionId,
            endpoint: `${endpoint.host}:${endpoint.port}`,
            backendTls: endpoint.tls.mode,
            error: error.message,
          },
        );
        connection.fatal(error.sqlState, error.clientMessage);
      },
    );
  }

  /**
   * The backend connection is up (and as protected as the export asks): audited, and the client is
   * read again once the audit log stored the records (spec 6 items 4 and 8); when it did not (a full
   * audit stream), the login ends with FATAL 08006 before the client's password or any query
   * reaches the backend.
   */
  private backendConnected(backendUser: string, tls?: { backendTls: string; encrypted: boolean }): void {
    const { connection } = this;
    const { deps } = connection;
    const { host, port } = deps.backend;
    const records: Array<Promise<boolean>> = [];
    records.push(
      deps.storedAudit("info", "connection.outgoing", `export ${deps.exportId} connected to ${host}:${port} as '${backendUser}'`, {
        exportId: deps.exportId,
        connectionId: deps.connectionId,
        endpoint: `${host}:${port}`,
        identity: backendUser,
        database: connection.identity.database ?? null,
        identitySource: this.backendLogin ? (deps.directVerification?.backendIdentity ? "export" : "client") : "client (pass-through)",
        ...(tls ?? {}),
      }),
    );
    if (!this.backendLogin)
      records.push(
        deps.storedAudit("debug", "connection.pass-through", `connection ${deps.connectionId} passed through to the backing store for authentication`, {
          exportId: deps.exportId,
          connectionId: deps.connectionId,
          component: "postgres",
          identity: connection.identity.user ?? null,
        }),
      );
    this.audited = Promise.all(records).then(
      (stored) => stored.every(Boolean),
      () => false,
    );
    void this.audited.then((stored) => {
      if (connection.closed) return;
      if (stored) connection.releaseClient();
      else this.auditUnavailable();
    });
  }

  /** The audit log did not store what the connection needs (a full audit stream): it is not served. */
  private auditUnavailable(): void {
    this.connection.refuse("08006", connectionNotAuditedMessage, "connection.audit-unavailable");
  }

  private backendUnreachable(error: Error): void {
    const { connection } = this;
    const { deps } = connection;
    const { host, port } = deps.backend;
    deps.audit("warn", "connection.backend-unreachable", `export ${deps.exportId} cannot reach ${host}:${port}`, {
      exportId: deps.exportId,
      connectionId: deps.connectionId,
      endpoint: `${host}:${port}`,
      error: (error as NodeJS.ErrnoException).code ?? error.message,
    });
    connection.fatal("08006", "the export cannot reach its backing store");
  }
}
