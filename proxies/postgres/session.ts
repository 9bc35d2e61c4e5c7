import { connect as connectTcp, type Socket } from "node:net";
import { TLSSocket, type SecureContext } from "node:tls";
import { decodeBackendKeyData, encodeBackendKeyData, type BackendKeyData } from "../../protocols/postgres/backend-key-data";
import { encodeCancelRequest } from "../../protocols/postgres/cancel-request";
import { BackendCode, FrontendCode, TargetKind, TransactionStatus } from "../../protocols/postgres/codes";
import { decodeCommandComplete, encodeCommandComplete, withReturnedRows } from "../../protocols/postgres/command-complete";
import { decodeDataRow, encodeMaskedDataRow, newRowValues } from "../../protocols/postgres/data-row";
import { decodeDescribe, encodeDescribe } from "../../protocols/postgres/describe";
import { decodeErrorFields, encodeErrorResponse, encodeNoticeResponse, errorFields, ErrorField } from "../../protocols/postgres/error-response";
import { decodeExecute } from "../../protocols/postgres/execute";
import { splitFrames, startupPacketLength, type Frame } from "../../protocols/postgres/frames";
import { encodeQuery } from "../../protocols/postgres/query";
import { decodeParameterStatus } from "../../protocols/postgres/parameter-status";
import { decodeReadyForQuery } from "../../protocols/postgres/ready-for-query";
import { decodeRowDescription } from "../../protocols/postgres/row-description";
import { decodeStartup, encodeStartup } from "../../protocols/postgres/startup";
import { encodeNegotiateProtocolVersion } from "../../protocols/postgres/negotiate-protocol-version";
import { ProtocolError } from "../../protocols/postgres/wire";
import { ByteQueue } from "./byte-queue";
import type { CancelKeys } from "./cancel-keys";
import { catalogQuery, resolveColumns, type CatalogRow, type ColumnMap } from "./column-catalog";
import { maskFor, planResult, type ResultPlan } from "./result-plan";
import { sanitizeError, sanitizeNotice } from "./sanitize";
import type { ProxyAudit, ProxyLimits, RowDecider, SessionCounts } from "./types";
import { userIdFromValue } from "./user-id";

/** Startup packets are small; PostgreSQL itself refuses those over 10,000 bytes. */
const maxStartupBytes = 10_000;
const internalQueryTimeoutMs = 10_000;

export interface SessionDeps {
  exportId: string;
  connectionId: string;
  backend: { host: string; port: number };
  limits: ProxyLimits;
  decider: RowDecider;
  audit: ProxyAudit;
  cancelKeys: CancelKeys;
  /** Present when the export terminates TLS (SSLRequest answered 'S'). */
  tls?: SecureContext;
  onEnd(counts: SessionCounts, identity: { user?: string; database?: string }): void;
}

/** A query the proxy runs on the client's connection, whose answer the client never sees. */
interface InternalQuery {
  results: string[][][];
  error?: string;
  done(): void;
}

/** What the backend will answer, in order, for the messages forwarded so far (only what the proxy must tell apart). */
type Expectation =
  | { kind: "simple" }
  | { kind: "describe"; injected: boolean; statement: boolean }
  | { kind: "execute" }
  | { kind: "sync" }
  | { kind: "internal"; query: InternalQuery };

type Phase = "startup" | "authenticating" | "ready" | "closed";

/**
 * One client connection through a PostgreSQL export. The client's messages pass to the backend
 * as they are (authentication included: pass-through), except those the export refuses; the
 * backend's answers pass back with every row decided: rows whose user the purpose does not
 * allow vanish, and each value whose column's category is not allowed becomes NULL. Columns
 * are known by table OID and attribute number; the proxy learns each portal's columns by
 * sending its own Describe before every Execute, and finds the mapped columns in the catalog
 * with a query of its own on the same connection while it is idle.
 */
export class ProxySession {
  private phase: Phase = "startup";
  private client: Socket;
  private backend?: Socket;
  private fromClient: ByteQueue;
  private readonly fromBackend: ByteQueue;
  private clientPumping = false;
  private backendPumping = false;
  private readonly expected: Expectation[] = [];
  /** Extended-protocol messages sent since the last Sync: the connection is not idle. */
  private extendedOpen = false;
  private copyingIn = false;
  private swallowingCopyOut = false;
  private transaction: TransactionStatus = TransactionStatus.Idle;
  private columns: ColumnMap = new Map();
  private catalogMappingKey = "";
  private newestRelation = 0;
  private catalogStale = true;
  private plan?: ResultPlan;
  private resultRowsSent = 0;
  private readonly row = newRowValues();
  private backendKeys?: BackendKeyData;
  private proxyKeys?: BackendKeyData;
  private identity: { user?: string; database?: string } = {};
  readonly counts: SessionCounts = { rowsIn: 0, rowsKept: 0, rowsDropped: 0, valuesNulled: 0, notificationsDropped: 0, refused: 0 };

  constructor(
    socket: Socket,
    private readonly deps: SessionDeps,
  ) {
    this.client = socket;
    this.fromClient = new ByteQueue(0, maxStartupBytes);
    this.fromBackend = new ByteQueue(1, deps.limits.maxMessageBytes);
    this.attachClient(socket);
  }

  /** A method, not a field test: the phase changes under awaits and callbacks. */
  private get closed(): boolean {
    return this.phase === "closed";
  }

  private attachClient(socket: Socket): void {
    socket.setNoDelay(true);
    socket.on("data", (chunk: Buffer) => {
      this.fromClient.push(chunk);
      void this.pumpClient();
    });
    socket.on("drain", () => {
      if (!this.backendPumping) this.backend?.resume();
    });
    socket.on("error", () => this.close());
    socket.on("close", () => this.close());
  }

  // ---- client -> backend ------------------------------------------------------------------

  private async pumpClient(): Promise<void> {
    if (this.clientPumping) return;
    this.clientPumping = true;
    try {
      for (;;) {
        if (this.closed) return;
        const bytes = this.fromClient.take();
        if (!bytes) return;
        if (this.phase === "startup") {
          const rest = this.startupPacket(bytes);
          // After the startup packet every message is typed (a code byte before the length).
          if (this.phase !== "startup") this.fromClient = new ByteQueue(1, this.deps.limits.maxMessageBytes);
          this.fromClient.unshift(rest);
          continue;
        }
        const { frames, consumed } = splitFrames(bytes, this.deps.limits.maxMessageBytes);
        this.fromClient.unshift(bytes.subarray(consumed));
        let out: Buffer[] = [];
        for (const frame of frames) {
          if (this.needsCatalogRefresh(frame.code)) {
            this.toBackend(out);
            out = [];
            this.client.pause();
            await this.refreshCatalog();
            this.client.resume();
          }
          if (!this.clientFrame(bytes, frame, out)) return;
        }
        this.toBackend(out);
      }
    } catch (error) {
      this.failClient(error);
    } finally {
      this.clientPumping = false;
    }
  }

  private toBackend(parts: Buffer[]): void {
    if (parts.length === 0 || !this.backend || this.phase === "closed") return;
    if (!this.backend.write(parts.length === 1 ? parts[0]! : Buffer.concat(parts))) this.client.pause();
  }

  /** One message from a connected client; false when the connection ends here. */
  private clientFrame(bytes: Buffer, frame: Frame, out: Buffer[]): boolean {
    const whole = bytes.subarray(frame.start, frame.end);
    if (this.phase === "authenticating") {
      out.push(whole);
      return true;
    }
    switch (frame.code) {
      case FrontendCode.Query:
        this.expected.push({ kind: "simple" });
        break;
      case FrontendCode.Parse:
      case FrontendCode.Bind:
      case FrontendCode.Close:
      case FrontendCode.Flush:
        this.extendedOpen = true;
        break;
      case FrontendCode.Describe: {
        this.extendedOpen = true;
        const describe = decodeDescribe(bytes.subarray(frame.bodyStart, frame.end));
        this.expected.push({ kind: "describe", injected: false, statement: describe.kind === TargetKind.Statement });
        break;
      }
      case FrontendCode.Execute: {
        this.extendedOpen = true;
        // The proxy's own Describe of the portal comes back just before the rows: each portal's columns are known even when the client never asked.
        const { portal } = decodeExecute(bytes.subarray(frame.bodyStart, frame.end));
        out.push(encodeDescribe({ kind: TargetKind.Portal, name: portal }));
        this.expected.push({ kind: "describe", injected: true, statement: false }, { kind: "execute" });
        break;
      }
      case FrontendCode.Sync:
        this.extendedOpen = false;
        this.expected.push({ kind: "sync" });
        break;
      case FrontendCode.CopyDone:
      case FrontendCode.CopyFail:
        this.copyingIn = false;
        break;
      case FrontendCode.CopyData:
        break;
      case FrontendCode.FunctionCall:
        this.refuse("0A000", "function calls (the FunctionCall message) are not allowed through this export", "function-call.refused");
        return false;
      case FrontendCode.Terminate:
        out.push(whole);
        this.toBackend(out);
        out.length = 0;
        this.close();
        return false;
      default:
        // Anything else goes to the backend, which refuses what it does not know.
        break;
    }
    out.push(whole);
    return true;
  }

  /** The catalog is looked up again only when the connection is idle, outside a transaction, before new work. */
  private needsCatalogRefresh(code: number): boolean {
    if (this.phase !== "ready" || (code !== FrontendCode.Query && code !== FrontendCode.Parse)) return false;
    if (this.expected.length > 0 || this.extendedOpen || this.copyingIn || this.transaction !== TransactionStatus.Idle) return false;
    return this.catalogStale || this.catalogMappingKey !== this.deps.decider.mapping().key;
  }

  private async refreshCatalog(): Promise<void> {
    const mapping = this.deps.decider.mapping();
    const sql = catalogQuery(mapping);
    const results = await this.internalQuery(sql);
    this.applyCatalog(results, mapping);
  }

  private applyCatalog(results: string[][][], mapping: ReturnType<RowDecider["mapping"]>): void {
    const rows: CatalogRow[] = (results.length > 1 ? results[0]! : []).map((r) => ({ tableOid: Number(r[0]), attributeNumber: Number(r[1]), schema: r[2]!, table: r[3]!, column: r[4]! }));
    this.columns = resolveColumns(rows, mapping);
    this.newestRelation = Number(results[results.length - 1]?.[0]?.[0] ?? 0);
    this.catalogMappingKey = mapping.key;
    this.catalogStale = false;
  }

  private internalQuery(sql: string): Promise<string[][][]> {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new ProtocolError("the backend did not answer the export's catalog query in time")), internalQueryTimeoutMs);
      const query: InternalQuery = {
        results: [],
        done: () => {
          clearTimeout(timer);
          if (query.error !== undefined) reject(new ProtocolError(`the export's catalog query failed (${query.error})`));
          else resolve(query.results);
        },
      };
      this.expected.push({ kind: "internal", query });
      this.backend?.write(encodeQuery(sql));
    });
  }

  // ---- startup ----------------------------------------------------------------------------

  /** Handles one startup packet; returns the bytes after it. */
  private startupPacket(bytes: Buffer): Buffer {
    const length = startupPacketLength(bytes, maxStartupBytes);
    if (length === undefined || bytes.length < length) return bytes;
    const packet = decodeStartup(bytes.subarray(0, length));
    const rest = bytes.subarray(length);
    switch (packet.kind) {
      case "ssl":
        if (!this.deps.tls) {
          this.client.write("N");
          return rest;
        }
        // Bytes sent before the handshake would be read as if they came over TLS (CVE-2021-23214).
        if (rest.length > 0) throw new ProtocolError("data sent before the TLS handshake");
        this.client.write("S");
        this.upgradeToTls();
        return rest;
      case "gssenc":
        this.client.write("N");
        return rest;
      case "cancel":
        this.forwardCancel({ processId: packet.processId, secretKey: packet.secretKey });
        return Buffer.alloc(0);
      case "startup":
        this.startBackend(packet.major, packet.minor, packet.parameters);
        return rest;
    }
  }

  private upgradeToTls(): void {
    const raw = this.client;
    raw.removeAllListeners("data");
    raw.removeAllListeners("drain");
    raw.removeAllListeners("close");
    raw.removeAllListeners("error");
    const secure = new TLSSocket(raw, { isServer: true, secureContext: this.deps.tls });
    this.client = secure;
    this.attachClient(secure);
  }

  private forwardCancel(proxyKeys: BackendKeyData): void {
    const backendKeys = this.deps.cancelKeys.backendFor(proxyKeys);
    this.phase = "closed";
    this.client.destroy();
    if (!backendKeys) {
      this.deps.audit("warn", "cancel.refused", "cancel request with keys this export did not issue", { exportId: this.deps.exportId, connectionId: this.deps.connectionId });
      return;
    }
    const socket = connectTcp({ host: this.deps.backend.host, port: this.deps.backend.port }, () => socket.end(encodeCancelRequest(backendKeys.processId, backendKeys.secretKey)));
    socket.on("error", () => socket.destroy());
    socket.setTimeout(this.deps.limits.connectTimeoutMs, () => socket.destroy());
  }

  private startBackend(major: number, minor: number, parameters: Map<string, string>): void {
    if (major !== 3) {
      this.refuse("0A000", `unsupported frontend protocol ${major}.${minor}: this export speaks 3.0`, "protocol.unsupported");
      return;
    }
    const replication = parameters.get("replication");
    if (replication !== undefined && !["false", "off", "no", "0"].includes(replication.toLowerCase())) {
      this.refuse("0A000", "replication connections are not allowed through this export", "replication.refused");
      return;
    }
    // Protocol options (_pq_.*) and minor versions above 0 are declined the way PostgreSQL does.
    const options = [...parameters.keys()].filter((name) => name.startsWith("_pq_."));
    for (const option of options) parameters.delete(option);
    if (minor > 0 || options.length > 0) this.client.write(encodeNegotiateProtocolVersion(0, options));
    this.identity = { user: parameters.get("user"), database: parameters.get("database") ?? parameters.get("user") };
    this.phase = "authenticating";
    this.client.pause();
    const { host, port } = this.deps.backend;
    const backend = connectTcp({ host, port });
    this.backend = backend;
    backend.setNoDelay(true);
    backend.setTimeout(this.deps.limits.connectTimeoutMs, () => {
      if (backend.connecting) backend.destroy(new Error("connect timeout"));
    });
    // Written now: the socket holds writes until connected, so nothing the client sends can overtake it.
    backend.write(encodeStartup(parameters));
    backend.once("connect", () => {
      backend.setTimeout(0);
      this.deps.audit("info", "connection.outgoing", `export ${this.deps.exportId} connected to ${host}:${port} as '${this.identity.user ?? ""}'`, { exportId: this.deps.exportId, connectionId: this.deps.connectionId, endpoint: `${host}:${port}`, identity: this.identity.user ?? null, database: this.identity.database ?? null });
      this.deps.audit("debug", "connection.pass-through", `connection ${this.deps.connectionId} passed through to the backing store for authentication`, { exportId: this.deps.exportId, connectionId: this.deps.connectionId, component: "postgres", identity: this.identity.user ?? null });
      this.client.resume();
    });
    backend.on("data", (chunk: Buffer) => {
      this.fromBackend.push(chunk);
      void this.pumpBackend();
    });
    backend.on("drain", () => this.client.resume());
    backend.on("error", (error) => {
      if (this.phase === "authenticating" && !this.backendKeys && backend.bytesRead === 0) {
        this.deps.audit("warn", "connection.backend-unreachable", `export ${this.deps.exportId} cannot reach ${host}:${port}`, { exportId: this.deps.exportId, connectionId: this.deps.connectionId, endpoint: `${host}:${port}`, error: (error as NodeJS.ErrnoException).code ?? error.message });
        this.fatal("08006", "the export cannot reach its backing store");
      } else this.close();
    });
    backend.on("close", () => this.endAfterBackend());
  }

  // ---- backend -> client ------------------------------------------------------------------

  private async pumpBackend(): Promise<void> {
    if (this.backendPumping) return;
    this.backendPumping = true;
    try {
      for (;;) {
        if (this.closed) return;
        const bytes = this.fromBackend.take();
        if (!bytes) return;
        const { frames, consumed } = splitFrames(bytes, this.deps.limits.maxMessageBytes);
        this.fromBackend.unshift(bytes.subarray(consumed));
        let out: Buffer[] = [];
        for (let i = 0; i < frames.length; i++) {
          const frame = frames[i]!;
          if (frame.code === BackendCode.DataRow && this.plan && !this.swallowingCopyOut && this.head()?.kind !== "internal") {
            const missing = this.undecidedUsers(bytes, frames, i);
            if (missing.length > 0) {
              this.toClient(out);
              out = [];
              this.backend?.pause();
              await this.deps.decider.load(missing);
              if (this.closed) return;
              if (!this.client.writableNeedDrain) this.backend?.resume();
            }
          }
          this.backendFrame(bytes, frame, out);
          if (this.closed) return;
        }
        this.toClient(out);
      }
    } catch (error) {
      this.failBackend(error);
    } finally {
      this.backendPumping = false;
    }
  }

  private toClient(parts: Buffer[]): void {
    if (parts.length === 0 || this.phase === "closed") return;
    const ok = this.client.write(parts.length === 1 ? parts[0]! : Buffer.concat(parts));
    if (!ok) this.backend?.pause();
  }

  private head(): Expectation | undefined {
    return this.expected[0];
  }

  /** Users of the rows from `from` on (until the next RowDescription) that have no verdict in memory yet. */
  private undecidedUsers(bytes: Buffer, frames: Frame[], from: number): string[] {
    const plan = this.plan!;
    if (plan.userColumns.length === 0) return [];
    const missing = new Set<string>();
    for (let i = from; i < frames.length; i++) {
      const frame = frames[i]!;
      if (frame.code === BackendCode.RowDescription) break;
      if (frame.code !== BackendCode.DataRow) continue;
      const userId = this.userOf(bytes, frame, plan);
      if (userId !== undefined && !this.deps.decider.verdict(userId)) missing.add(userId);
    }
    return [...missing];
  }

  private userOf(bytes: Buffer, frame: Frame, plan: ResultPlan): string | undefined {
    const row = decodeDataRow(bytes, frame.bodyStart, frame.end, this.row);
    for (const column of plan.userColumns) {
      if (column >= row.count) continue;
      const description = plan.columns[column]!;
      const userId = userIdFromValue(bytes, row.starts[column]!, row.lengths[column]!, description.typeOid, description.format);
      if (userId !== undefined && userId !== "") return userId;
    }
    return undefined;
  }

  private backendFrame(bytes: Buffer, frame: Frame, out: Buffer[]): void {
    const body = () => bytes.subarray(frame.bodyStart, frame.end);
    const whole = () => bytes.subarray(frame.start, frame.end);
    const head = this.head();

    if (head?.kind === "internal") {
      this.internalFrame(head.query, frame.code, body());
      return;
    }
    if (this.phase === "authenticating") {
      this.authenticationFrame(frame.code, body, whole, out);
      return;
    }
    if (this.swallowingCopyOut && (frame.code === BackendCode.CopyData || frame.code === BackendCode.CopyDone)) return;

    switch (frame.code) {
      case BackendCode.DataRow:
        this.dataRow(bytes, frame, out);
        return;
      case BackendCode.RowDescription: {
        const columns = decodeRowDescription(body());
        this.plan = planResult(columns, this.columns, this.deps.decider.mapping());
        this.resultRowsSent = 0;
        if (columns.some((c) => c.tableOid > this.newestRelation)) this.catalogStale = true;
        if (head?.kind === "describe") {
          this.expected.shift();
          if (head.injected) return;
        }
        out.push(whole());
        return;
      }
      case BackendCode.NoData:
        if (head?.kind === "describe") {
          this.expected.shift();
          if (head.injected) {
            this.plan = undefined;
            return;
          }
        }
        out.push(whole());
        return;
      case BackendCode.CommandComplete: {
        if (this.swallowingCopyOut) {
          this.swallowingCopyOut = false;
          out.push(encodeErrorResponse(errorFields("ERROR", "42501", "COPY TO STDOUT is not allowed through this export: its rows would bypass the purpose's filter")));
        } else {
          const tag = decodeCommandComplete(body());
          // New or changed relations (CREATE TABLE AS and SELECT INTO answer "SELECT n" without rows).
          if (/^(CREATE|ALTER|DROP|IMPORT)\b/.test(tag) || (!this.plan && /^SELECT \d+$/.test(tag))) this.catalogStale = true;
          const rewritten = this.plan ? withReturnedRows(tag, this.resultRowsSent) : tag;
          out.push(rewritten === tag ? whole() : encodeCommandComplete(rewritten));
        }
        this.plan = undefined;
        if (head?.kind === "execute") this.expected.shift();
        return;
      }
      case BackendCode.PortalSuspended:
      case BackendCode.EmptyQueryResponse:
        this.plan = undefined;
        if (head?.kind === "execute") this.expected.shift();
        out.push(whole());
        return;
      case BackendCode.ErrorResponse:
        this.plan = undefined;
        this.swallowingCopyOut = false;
        this.copyingIn = false;
        // After an error in the extended protocol the backend skips to the next Sync.
        if (head && head.kind !== "simple") while (this.expected.length > 0 && this.head()!.kind !== "sync" && this.head()!.kind !== "simple") this.expected.shift();
        out.push(encodeErrorResponse(sanitizeError(decodeErrorFields(body()))));
        return;
      case BackendCode.ReadyForQuery:
        this.transaction = decodeReadyForQuery(body());
        if (head && (head.kind === "sync" || head.kind === "simple")) this.expected.shift();
        this.plan = undefined;
        out.push(whole());
        return;
      case BackendCode.NoticeResponse:
        out.push(encodeNoticeResponse(sanitizeNotice(decodeErrorFields(body()))));
        return;
      case BackendCode.ParameterStatus:
        // set_config('application_name', <any value>) would report the value: only the startup's report crosses.
        if (decodeParameterStatus(body()).name === "application_name") return;
        out.push(whole());
        return;
      case BackendCode.NotificationResponse:
        // A payload and a channel name can both carry any value: notifications do not cross the export.
        this.counts.notificationsDropped++;
        return;
      case BackendCode.CopyOutResponse:
        this.swallowingCopyOut = true;
        this.counts.refused++;
        this.deps.audit("warn", "copy-out.refused", "COPY TO STDOUT refused: its rows would bypass the purpose's filter", { exportId: this.deps.exportId, connectionId: this.deps.connectionId, component: "postgres", identity: this.identity.user ?? null });
        return;
      case BackendCode.CopyBothResponse:
        this.refuse("0A000", "COPY BOTH (streaming replication) is not allowed through this export", "copy-both.refused");
        return;
      case BackendCode.CopyInResponse:
        this.copyingIn = true;
        out.push(whole());
        return;
      case BackendCode.BackendKeyData:
      case BackendCode.FunctionCallResponse:
        throw new ProtocolError(`unexpected message '${String.fromCharCode(frame.code)}' from the backend`);
      default:
        out.push(whole());
    }
  }

  private authenticationFrame(code: number, body: () => Buffer, whole: () => Buffer, out: Buffer[]): void {
    switch (code) {
      case BackendCode.BackendKeyData:
        this.backendKeys = decodeBackendKeyData(body());
        this.proxyKeys = this.deps.cancelKeys.issue(this.backendKeys);
        out.push(encodeBackendKeyData(this.proxyKeys));
        return;
      case BackendCode.ReadyForQuery: {
        // Authenticated: learn the mapped columns before the client may send its first query.
        this.phase = "ready";
        this.transaction = decodeReadyForQuery(body());
        const ready = Buffer.from(whole());
        const mapping = this.deps.decider.mapping();
        this.toClient(out);
        out.length = 0;
        this.client.pause();
        this.internalQuery(catalogQuery(mapping)).then(
          (results) => {
            this.applyCatalog(results, mapping);
            this.toClient([ready]);
            this.client.resume();
          },
          (error: unknown) => this.failBackend(error),
        );
        return;
      }
      case BackendCode.ErrorResponse:
        out.push(encodeErrorResponse(sanitizeError(decodeErrorFields(body()))));
        return;
      case BackendCode.NoticeResponse:
        out.push(encodeNoticeResponse(sanitizeNotice(decodeErrorFields(body()))));
        return;
      default:
        out.push(whole());
    }
  }

  private internalFrame(query: InternalQuery, code: number, body: Buffer): void {
    switch (code) {
      case BackendCode.RowDescription:
        query.results.push([]);
        return;
      case BackendCode.DataRow: {
        const row = decodeDataRow(body, 0, body.length, newRowValues(8));
        const values: string[] = [];
        for (let i = 0; i < row.count; i++) values.push(row.lengths[i]! < 0 ? "" : body.toString("utf8", row.starts[i]!, row.starts[i]! + row.lengths[i]!));
        query.results[query.results.length - 1]?.push(values);
        return;
      }
      case BackendCode.ErrorResponse:
        query.error = decodeErrorFields(body).get(ErrorField.Code) ?? "unknown";
        return;
      case BackendCode.ReadyForQuery:
        this.transaction = decodeReadyForQuery(body);
        this.expected.shift();
        query.done();
        return;
      default:
        // CommandComplete, notices, parameter changes: not the client's business.
        return;
    }
  }

  private dataRow(bytes: Buffer, frame: Frame, out: Buffer[]): void {
    this.counts.rowsIn++;
    const plan = this.plan;
    const userId = plan ? this.userOf(bytes, frame, plan) : undefined;
    const verdict = userId === undefined ? undefined : this.deps.decider.verdict(userId);
    if (!plan || !verdict || !verdict.allowed) {
      this.counts.rowsDropped++;
      return;
    }
    const mask = maskFor(plan, verdict);
    this.counts.rowsKept++;
    this.resultRowsSent++;
    if (mask.nulled === 0) {
      out.push(bytes.subarray(frame.start, frame.end));
      return;
    }
    this.counts.valuesNulled += mask.nulled;
    out.push(encodeMaskedDataRow(bytes, this.row, mask.keep));
  }

  // ---- ending -----------------------------------------------------------------------------

  /** Refuses what the export does not allow with a FATAL error, audits it, and ends the connection. */
  private refuse(sqlState: string, message: string, event: string): void {
    this.counts.refused++;
    this.deps.audit("warn", event, message, { exportId: this.deps.exportId, connectionId: this.deps.connectionId, component: "postgres", identity: this.identity.user ?? null });
    this.fatal(sqlState, message);
  }

  private fatal(sqlState: string, message: string): void {
    if (this.closed) return;
    this.client.end(encodeErrorResponse(errorFields("FATAL", sqlState, message)));
    this.close(false);
  }

  private failClient(error: unknown): void {
    if (error instanceof ProtocolError) {
      this.deps.audit("warn", "protocol.invalid", `invalid message from the client: ${error.message}`, { exportId: this.deps.exportId, connectionId: this.deps.connectionId, component: "postgres" });
      this.fatal("08P01", `invalid message from the client: ${error.message}`);
    } else this.failInternally(error);
  }

  private failBackend(error: unknown): void {
    if (error instanceof ProtocolError) {
      this.deps.audit("error", "protocol.backend-invalid", `the backend broke the protocol: ${error.message}`, { exportId: this.deps.exportId, connectionId: this.deps.connectionId });
      this.fatal("08P01", "the export lost its backing store connection");
    } else this.failInternally(error);
  }

  /** An unexpected failure: the client learns only that the export failed (no internal text). */
  private failInternally(error: unknown): void {
    this.deps.audit("error", "connection.failed", `connection ${this.deps.connectionId} failed inside the export`, { exportId: this.deps.exportId, connectionId: this.deps.connectionId, error: String((error as Error)?.message ?? error) });
    this.fatal("XX000", "the export failed to process this connection");
  }

  /** The backend closed: whatever it said is flushed to the client, then the client is ended. */
  private endAfterBackend(): void {
    if (this.closed) return;
    const finish = () => {
      if (this.phase !== "closed") this.client.end();
      this.close(false);
    };
    if (this.backendPumping) setImmediate(finish);
    else finish();
  }

  close(destroyClient = true): void {
    if (this.closed) return;
    this.phase = "closed";
    if (destroyClient) this.client.destroy();
    this.backend?.destroy();
    if (this.proxyKeys) this.deps.cancelKeys.revoke(this.proxyKeys);
    this.deps.onEnd(this.counts, this.identity);
  }
}

/** Bytes of an ErrorResponse, for callers outside a session (connection limit reached). */
export function fatalMessage(sqlState: string, message: string): Buffer {
  return encodeErrorResponse(errorFields("FATAL", sqlState, message));
}
