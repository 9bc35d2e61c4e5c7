import { connect as connectTcp, type Socket } from "node:net";
import { TLSSocket, type SecureContext } from "node:tls";
import { decodeBackendKeyData, encodeBackendKeyData, type BackendKeyData } from "../../protocols/postgres/backend-key-data";
import { BackendCode, FrontendCode, TargetKind, TransactionStatus } from "../../protocols/postgres/codes";
import { decodeCommandComplete, encodeCommandComplete, selectCount, withReturnedRows } from "../../protocols/postgres/command-complete";
import { decodeDataRow, locateValue, newRowValues } from "../../protocols/postgres/data-row";
import { ForwardBuffer } from "./forward-buffer";
import { OutputBuffer } from "./output-buffer";
import { encodeDescribeBytes, locateDescribe } from "../../protocols/postgres/describe";
import { encodeExecuteBytes, locateExecute } from "../../protocols/postgres/execute";
import { encodeFlush } from "../../protocols/postgres/sync";
import { decodeErrorFields, encodeErrorResponse, encodeNoticeResponse, errorFields, ErrorField, type ErrorFields } from "../../protocols/postgres/error-response";
import { FrameList, startupPacketLength, type Frame } from "../../protocols/postgres/frames";
import { decodeQuery, encodeQuery } from "../../protocols/postgres/query";
import { decodeParameterStatus } from "../../protocols/postgres/parameter-status";
import { decodeReadyForQuery, encodeReadyForQuery } from "../../protocols/postgres/ready-for-query";
import { decodeRowDescription, encodeRowDescription, type ColumnDescription } from "../../protocols/postgres/row-description";
import { decodeParse, encodeParse } from "../../protocols/postgres/parse";
import { decodeBind, encodeBind, locateBind } from "../../protocols/postgres/bind";
import { decodeStartup, encodeStartup } from "../../protocols/postgres/startup";
import { encodeNegotiateProtocolVersion } from "../../protocols/postgres/negotiate-protocol-version";
import { equalBytes, ProtocolError } from "../../protocols/postgres/wire";
import { decodeAuthentication, encodeAuthenticationCleartextPassword, encodeAuthenticationOk } from "../../protocols/postgres/authentication";
import { decodePasswordMessage } from "../../protocols/postgres/password";
import { BackendLogin, BackendLoginError } from "./backend-login";
import { ByteQueue } from "./byte-queue";
import type { CancelKeys } from "./cancel-keys";
import { catalogFrom, catalogQuery, columnKey, type Catalog, type CatalogRow } from "./column-catalog";
import { alignShape, maskFor, maskOf, planResult, type ResultPlan } from "./result-plan";
import { emptySchemaView } from "./analysis/schema-view";
import { originalPosition, withoutHiddenNames, type AnalysisCache, type QueryAnalysis, type ResultShape, type StatementEffect, type StatementPolicy } from "./analysis/statement-analysis";
import { sanitizeError, sanitizeNotice } from "./sanitize";
import type { DirectVerification, ProxyAudit, ProxyLimits, SessionCounts, TextDecoding } from "./types";
import type { MappingView, RowDecider, RowVerdict } from "../../exports/row-decider";
import { userIdFromValue } from "./user-id";

/** Startup packets are small; PostgreSQL itself refuses those over 10,000 bytes. */
const maxStartupBytes = 10_000;
/** Messages before the session is ready (passwords, SASL) are small; PostgreSQL caps them at 64 KiB too. */
const maxAuthenticationMessageBytes = 65_536;
/** A connection that is not ready by then is closed (PostgreSQL's authentication_timeout default). */
const authenticationTimeoutMs = 60_000;
const internalQueryTimeoutMs = 10_000;
/** Rows of the proxy's own catalog query kept at most (the mapping names far fewer columns). */
const maxCatalogRows = 100_000;
/** Deciding the users of a run of rows may take this long; then the connection fails (closed, nothing sent). */
const decisionTimeoutMs = 15_000;
/** After end(), a client that does not close is cut off after this long. */
const lingerMs = 2000;
/**
 * Bytes read from the backend at a time, into one buffer per connection reused for every read:
 * no allocation (and later collection) of a buffer per read.
 */
const backendReadBytes = 65_536;
/**
 * Descriptions remembered per connection: at most this many, and this many bytes of them (each
 * also has a plan and perhaps a rewritten copy, about twice as much again). Past either, all go.
 */
const maxDescribedResults = 256;
const maxDescribedBytes = 256 * 1024;
/** Statements of the client whose names result column labels are checked against (see `visibleColumns`). */
const keptRecentStatements = 16;

export interface SessionDeps {
  exportId: string;
  connectionId: string;
  backend: { host: string; port: number };
  limits: ProxyLimits;
  decider: RowDecider;
  audit: ProxyAudit;
  cancelKeys: CancelKeys;
  /** A CancelRequest (a connection of its own) with these keys: cancel the query of the connection they were issued to, wherever it runs. */
  cancel(proxyKeys: BackendKeyData, connectionId: string): void;
  /** Present when the export terminates TLS (SSLRequest answered 'S'). */
  tls?: SecureContext;
  /** Present when the export's component enforces authentication: the proxy verifies the client itself (spec 5.1). */
  directVerification?: DirectVerification;
  /** Reads the rows' user ids (shared by the export's connections). */
  userIds: TextDecoding;
  /** Read-only unless writes are allowed; strict predicates. */
  policy: StatementPolicy;
  /** Statement analyses by text, shared by the export's connections in this process. */
  analyses: AnalysisCache;
  onEnd(counts: SessionCounts, identity: { user?: string; database?: string }): void;
}

/** A query the proxy runs on the client's connection, whose answer the client never sees. */
interface InternalQuery {
  results: string[][][];
  error?: string;
  done(): void;
}

/**
 * A Describe forwarded to the backend. `forClient`: the client's own (its answer is forwarded),
 * otherwise the proxy's (kept from the client). `decidesRows`: the answer describes the rows of
 * the Execute right behind it: the proxy's Describe of the portal, or the client's own Describe
 * of that portal when it came just before the Execute (nothing between them can change it).
 */
interface DescribeExpectation {
  kind: "describe";
  forClient: boolean;
  decidesRows: boolean;
  /** What the described statement or portal returns (its rows' shape). */
  effect: StatementEffect | undefined;
}

/** An Execute's row limit: `rows` of `portal` (its name as sent); `finished` lets the client's next messages go. */
interface RowLimit {
  portal: Buffer;
  rows: number;
  finished?: () => void;
}

/** What the backend will answer, in order, for the messages forwarded so far (only what the proxy must tell apart). */
type Expectation =
  /** A Query: its statements' effects, in order; `index` is the one being answered. */
  | { kind: "simple"; analysis: QueryAnalysis; index: number }
  | DescribeExpectation
  /** `limit`: the client asked for at most that many rows. `effect`: what the portal's statement does. */
  | { kind: "execute"; limit?: RowLimit; effect: StatementEffect | undefined }
  | { kind: "sync" }
  /**
   * The client ended a COPY (CopyDone, CopyFail) before the proxy saw it start: the messages between
   * a COPY FROM STDIN and this reach the backend during COPY IN. Never at the head of the queue.
   */
  | { kind: "copyEnd" }
  /** ParseComplete, BindComplete, CloseComplete: tracked so the queue mirrors the backend exactly (a Parse's analysis maps error positions back). */
  | { kind: "complete"; code: number; analysis?: QueryAnalysis }
  /** A statement the export refused: its error goes to the client in turn, nothing went to the backend. */
  | { kind: "refusal"; error: Buffer; readyForQuery: boolean }
  | { kind: "internal"; query: InternalQuery };

/** Expectations with nothing of their own, one object each, shared and never changed: none made per message. */
const stateless = {
  parseComplete: { kind: "complete", code: BackendCode.ParseComplete },
  bindComplete: { kind: "complete", code: BackendCode.BindComplete },
  closeComplete: { kind: "complete", code: BackendCode.CloseComplete },
  sync: { kind: "sync" },
  copyEnd: { kind: "copyEnd" },
} as const satisfies Record<string, Expectation>;

/** A RowDescription as the proxy handles it: its plan, the newest relation it names, what the client may see of it. */
interface DescribedResult {
  plan: ResultPlan;
  /** The largest table OID among its columns: one newer than the catalog lookup makes the catalog stale. */
  newestTable: number;
  /** The RowDescription the client gets while its names stay `clientNamesVersion`: `rewritten`, or the backend's own bytes when undefined. */
  forClient?: { clientNamesVersion: number; rewritten: Buffer | undefined };
}

/** startup packet -> (direct verification: the client's password checked by the proxy) -> backend authentication -> the proxy's catalog query (client held) -> ready -> closed. */
type Phase = "startup" | "verifying" | "authenticating" | "preparing" | "ready" | "closed";

/**
 * One client connection through a PostgreSQL export. The client's messages pass to the backend
 * as they are (authentication included: pass-through), except those the export refuses; the
 * backend's answers pass back with every row decided: rows whose user the purpose does not
 * allow vanish, and each value whose column's category is not allowed becomes NULL. Columns
 * are known by table OID and attribute number; the proxy learns each portal's columns from a
 * Describe of the portal right before every Execute (the client's own, or else its own), and
 * finds the mapped columns in the catalog with a query of its own on the same connection while
 * it is idle.
 */
export class ProxySession {
  private phase: Phase = "startup";
  private client: Socket;
  private backend?: Socket;
  /** Where the backend's bytes are read into; what is still queued when the next read comes is copied out first. */
  private readonly backendReadBuffer = Buffer.allocUnsafeSlow(backendReadBytes);
  private fromClient: ByteQueue;
  /** Each direction's messages of the chunk being handled, and the message being handled (objects reused, not one per message). */
  private readonly clientFrames = new FrameList();
  private readonly backendFrames = new FrameList();
  private readonly clientCursor: Frame = { code: 0, start: 0, bodyStart: 0, end: 0 };
  private readonly backendCursor: Frame = { code: 0, start: 0, bodyStart: 0, end: 0 };
  /** The row `verdictsFor` reads, ahead of the one being handled. */
  private readonly scanCursor: Frame = { code: 0, start: 0, bodyStart: 0, end: 0 };
  private readonly fromBackend: ByteQueue;
  private clientPumping = false;
  private backendPumping = false;
  private readonly expected: Expectation[] = [];
  /** Extended-protocol messages sent since the last Sync: the connection is not idle. */
  private extendedOpen = false;
  private copyingIn = false;
  private swallowingCopyOut = false;
  private transaction: TransactionStatus = TransactionStatus.Idle;
  private catalog: Catalog = { columns: new Map(), rows: new Map(), schema: emptySchemaView };
  /** Changes whenever `catalog` does (plans made from an older catalog are dropped). */
  private catalogVersion = 0;
  private catalogMappingKey = "";
  private newestRelation = 0;
  private catalogStale = true;
  private plan?: ResultPlan;
  private resultRowsSent = 0;
  private backendKeys?: BackendKeyData;
  private proxyKeys?: BackendKeyData;
  private identity: { user?: string; database?: string } = {};
  /** Direct verification: the startup parameters wait here while the client's password is checked. */
  private startupParameters?: Map<string, string>;
  /** Direct verification: the proxy answers the backend's authentication requests itself. */
  private backendLogin?: BackendLogin;
  /** The backend skips messages until Sync after an error in the extended protocol; so does the bookkeeping. */
  private backendSkipsToSync = false;
  private pendingInternal?: { timer: NodeJS.Timeout; fail(error: Error): void };
  private readonly authenticationTimer: NodeJS.Timeout;
  /** The client's recent statements: a column label it wrote in one of them may cross. */
  private readonly recentStatements: QueryAnalysis[] = [];
  /** Changes whenever `recentStatements` does. */
  private clientNamesVersion = 0;
  /** Prepared statements by name (Parse and PREPARE share one namespace), with what they return. */
  private readonly statements = new Map<string, StatementEffect>();
  /** Portals by name, with what their statement returns. */
  private readonly portals = new Map<string, StatementEffect>();
  /** Cursors (DECLARE) by name, with what they return. */
  private readonly cursors = new Map<string, ResultShape | undefined>();
  /** After a refused extended-protocol message, the client's messages are dropped until its Sync, as the backend does after an error. */
  private skipsToSync = false;
  /** What the client asked application_name to be at startup. */
  private clientApplicationName?: string;
  /** The role the backend session logs in as. */
  private loginUser?: string;
  private clientHolds = 0;
  /**
   * The client's last message when it was a Describe of a portal: an Execute of that portal right
   * behind it is described by it (libpq, node-postgres) and needs no Describe of the proxy's.
   * The portal's name is chunk[nameStart, nameEnd), a chunk the client socket handed over (never reused).
   */
  private portalDescribed?: { chunk: Buffer; nameStart: number; nameEnd: number; expectation: DescribeExpectation };
  /** Set by an Execute with a row limit: resolves when its rows are all sent. */
  private limitedExecute?: Promise<void>;
  /** Resolves once the session is ready for queries (catalog known), or closed. */
  private readonly sessionReady: Promise<void>;
  private markReady!: () => void;
  readonly counts: SessionCounts = { rowsIn: 0, rowsKept: 0, rowsDropped: 0, valuesNulled: 0, statements: 0, statementsParsed: 0, notificationsDropped: 0, refused: 0 };

  constructor(
    socket: Socket,
    private readonly deps: SessionDeps,
  ) {
    this.client = socket;
    this.fromClient = new ByteQueue(0, maxStartupBytes);
    this.sessionReady = new Promise((resolve) => (this.markReady = resolve));
    this.authenticationTimer = setTimeout(() => {
      if (this.phase !== "ready") this.refuse("08006", "the connection was not ready in time (startup and authentication take at most a minute)", "authentication.timeout");
    }, authenticationTimeoutMs);
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
          if (this.phase !== "startup") this.fromClient = new ByteQueue(1, maxAuthenticationMessageBytes);
          this.fromClient.unshift(rest);
          continue;
        }
        const frames = this.clientFrames;
        const consumed = frames.split(bytes, this.phase === "ready" ? this.deps.limits.maxMessageBytes : maxAuthenticationMessageBytes);
        if (consumed < bytes.length) this.fromClient.unshift(bytes.subarray(consumed));
        // Only part of a message: wait for the rest.
        if (frames.count === 0) return;
        const out = new ForwardBuffer();
        for (let i = 0; i < frames.count; i++) {
          const frame = frames.read(i, this.clientCursor);
          if (this.phase === "verifying") {
            this.fromClient.unshift(bytes.subarray(frame.end, consumed));
            if (frame.code !== FrontendCode.Password) {
              this.refuse("08P01", "expected a password message", "protocol.violation");
              return;
            }
            this.holdClient();
            await this.verifyClient(decodePasswordMessage(bytes.subarray(frame.bodyStart, frame.end)));
            if (this.closed) return;
            this.releaseClient();
            break;
          }
          if ((this.phase === "authenticating" && frame.code !== FrontendCode.Password) || this.phase === "preparing") {
            // Anything but authentication waits until the session is ready: the catalog query must be answered first.
            this.toBackend(out);
            this.fromClient.unshift(bytes.subarray(frame.start, consumed));
            this.holdClient();
            await this.sessionReady;
            if (this.closed) return;
            this.releaseClient();
            break;
          }
          if (this.needsCatalogRefresh(frame.code)) {
            this.toBackend(out);
            this.holdClient();
            await this.refreshCatalog();
            this.releaseClient();
          }
          if (!this.clientFrame(bytes, frame, out)) return;
          const limited = this.limitedExecute;
          if (limited) {
            this.limitedExecute = undefined;
            this.toBackend(out);
            this.fromClient.unshift(bytes.subarray(frame.end, consumed));
            this.holdClient();
            await limited;
            if (this.closed) return;
            this.releaseClient();
            break;
          }
        }
        this.toBackend(out);
      }
    } catch (error) {
      this.failClient(error);
    } finally {
      this.clientPumping = false;
    }
  }

  /** Holds reading from the client (while the session prepares, the catalog is read, a limited Execute runs). */
  private holdClient(): void {
    this.clientHolds++;
    this.client.pause();
  }

  /** Ends one hold (`released` 0: none, the backend drained); reads again only when nothing else holds or waits. */
  private releaseClient(released = 1): void {
    this.clientHolds -= released;
    if (this.clientHolds === 0 && !this.backend?.writableNeedDrain) this.client.resume();
  }

  private toBackend(out: ForwardBuffer): void {
    const bytes = out.take();
    if (!bytes || !this.backend || this.phase === "closed") return;
    if (!this.backend.write(bytes)) this.client.pause();
  }

  /** One message from a connected client; false when the connection ends here. */
  private clientFrame(bytes: Buffer, frame: Frame, out: ForwardBuffer): boolean {
    if (this.phase === "authenticating") {
      // Direct verification: the proxy logs in to the backend itself; the client has nothing to say to it.
      if (this.backendLogin) {
        this.refuse("08P01", "unexpected message during authentication", "protocol.invalid");
        return false;
      }
      out.forward(bytes, frame.start, frame.end);
      return true;
    }
    const described = this.portalDescribed;
    this.portalDescribed = undefined;
    if (this.skipsToSync && frame.code !== FrontendCode.Sync && frame.code !== FrontendCode.Terminate) return true;
    // During COPY IN, and for messages the backend will skip (an error earlier in this extended-protocol batch): no answer expected.
    if (this.copyingIn || (this.backendSkipsToSync && frame.code !== FrontendCode.Sync && frame.code !== FrontendCode.Terminate && frame.code !== FrontendCode.FunctionCall)) {
      if (!this.copyingIn || this.copyInFrame(frame.code)) out.forward(bytes, frame.start, frame.end);
      return true;
    }
    switch (frame.code) {
      case FrontendCode.Query: {
        const sql = decodeQuery(bytes.subarray(frame.bodyStart, frame.end));
        const analysis = this.analyse(sql);
        if (analysis.refusal) {
          this.refuseStatement(analysis, true);
          return true;
        }
        this.expected.push({ kind: "simple", analysis, index: 0 });
        if (analysis.text !== sql) {
          out.push(encodeQuery(analysis.text));
          return true;
        }
        break;
      }
      case FrontendCode.Parse: {
        this.extendedOpen = true;
        const parse = decodeParse(bytes.subarray(frame.bodyStart, frame.end));
        const analysis = this.analyse(parse.sql);
        if (analysis.refusal) {
          this.refuseStatement(analysis, false);
          this.skipsToSync = true;
          return true;
        }
        // One statement per Parse (the backend refuses more): its effect is the prepared statement's.
        this.statements.set(parse.statement, analysis.statements[0] ?? { kind: "other" });
        this.expected.push(analysis.insertions.length > 0 ? { kind: "complete", code: BackendCode.ParseComplete, analysis } : stateless.parseComplete);
        if (analysis.text !== parse.sql) {
          out.push(encodeParse({ ...parse, sql: analysis.text }));
          return true;
        }
        break;
      }
      case FrontendCode.Bind: {
        this.extendedOpen = true;
        const { portalEnd, statementStart, statementEnd } = locateBind(bytes, frame.bodyStart, frame.end);
        const effect = this.statements.get(bytes.toString("latin1", statementStart, statementEnd));
        this.portals.set(bytes.toString("latin1", frame.bodyStart, portalEnd), effect ?? { kind: "other" });
        this.expected.push(stateless.bindComplete);
        const rebound = effect ? withHiddenResultFormats(bytes.subarray(frame.bodyStart, frame.end), this.shapeOf(effect)) : undefined;
        if (rebound) {
          out.push(rebound);
          return true;
        }
        break;
      }
      case FrontendCode.Close: {
        this.extendedOpen = true;
        const target = locateDescribe(bytes, frame.bodyStart, frame.end);
        const name = bytes.toString("latin1", frame.bodyStart + 1, target.nameEnd);
        if (target.kind === TargetKind.Portal) this.portals.delete(name);
        else this.statements.delete(name);
        this.expected.push(stateless.closeComplete);
        break;
      }
      case FrontendCode.Flush:
        this.extendedOpen = true;
        break;
      case FrontendCode.Describe: {
        this.extendedOpen = true;
        const target = locateDescribe(bytes, frame.bodyStart, frame.end);
        const name = bytes.toString("latin1", frame.bodyStart + 1, target.nameEnd);
        const effect = target.kind === TargetKind.Portal ? this.portals.get(name) : this.statements.get(name);
        const expectation: DescribeExpectation = { kind: "describe", forClient: true, decidesRows: false, effect };
        this.expected.push(expectation);
        if (target.kind === TargetKind.Portal) this.portalDescribed = { chunk: bytes, nameStart: frame.bodyStart + 1, nameEnd: target.nameEnd, expectation };
        break;
      }
      case FrontendCode.Execute: {
        this.extendedOpen = true;
        // The portal's columns must be known when its rows come: from the client's own Describe of
        // the portal just before (still unanswered, so nothing came between), otherwise from the
        // proxy's own Describe, whose answer comes back just before the rows and is kept from the client.
        const { portalEnd, maxRows: limit } = locateExecute(bytes, frame.bodyStart, frame.end);
        const effect = this.portals.get(bytes.toString("latin1", frame.bodyStart, portalEnd));
        // Still the last expectation: not answered yet (nor cleared by an error).
        if (described && this.expected[this.expected.length - 1] === described.expectation && equalBytes(described.chunk, described.nameStart, described.nameEnd, bytes, frame.bodyStart, portalEnd)) described.expectation.decidesRows = true;
        else {
          out.push(encodeDescribeBytes(TargetKind.Portal, bytes.subarray(frame.bodyStart, portalEnd)));
          this.expected.push({ kind: "describe", forClient: false, decidesRows: true, effect });
        }
        if (limit <= 0) {
          this.expected.push({ kind: "execute", effect });
          break;
        }
        // A row limit counts the rows the client receives: dropped rows are made up for with more
        // Executes of the portal, so the client's next messages (its Sync) wait until this one is done.
        // The portal's name is copied: the top-ups name it.
        const portal = Buffer.from(bytes.subarray(frame.bodyStart, portalEnd));
        this.limitedExecute = new Promise((resolve) => this.expected.push({ kind: "execute", limit: { portal, rows: limit, finished: resolve }, effect }));
        out.forward(bytes, frame.start, frame.end);
        out.push(encodeFlush());
        return true;
      }
      case FrontendCode.Sync:
        this.extendedOpen = false;
        this.backendSkipsToSync = false;
        this.skipsToSync = false;
        this.expected.push(stateless.sync);
        break;
      case FrontendCode.CopyData:
        // Outside COPY IN the backend ignores it (copy data after a failed COPY).
        break;
      case FrontendCode.CopyDone:
      case FrontendCode.CopyFail:
        // A COPY FROM STDIN still unanswered may be what it ends (see `enterCopyIn`).
        if (this.expected.length > 0) this.expected.push(stateless.copyEnd);
        break;
      case FrontendCode.FunctionCall:
        this.refuse("0A000", "function calls (the FunctionCall message) are not allowed through this export", "function-call.refused");
        return false;
      case FrontendCode.Terminate:
        out.forward(bytes, frame.start, frame.end);
        this.toBackend(out);
        this.close();
        return false;
      default:
        // Anything else goes to the backend, which refuses what it does not know.
        break;
    }
    out.forward(bytes, frame.start, frame.end);
    return true;
  }

  /** The analysis of a client text (cached by text); its names join those labels may use. */
  private analyse(sql: string): QueryAnalysis {
    const parsedBefore = this.deps.analyses.misses;
    const analysis = this.deps.analyses.get(sql, this.catalog.schema, this.deps.policy);
    this.counts.statements++;
    this.counts.statementsParsed += this.deps.analyses.misses - parsedBefore;
    if (!this.recentStatements.includes(analysis)) {
      if (this.recentStatements.length >= keptRecentStatements) this.recentStatements.shift();
      this.recentStatements.push(analysis);
      this.clientNamesVersion++;
    }
    return analysis;
  }

  /** Whether the client wrote `name` in one of its recent statements. */
  private clientWrote(name: string): boolean {
    return this.recentStatements.some((analysis) => analysis.identifiers().has(name));
  }

  /**
   * A statement the export does not run: its error reaches the client in the order of the
   * answers (after everything sent before it), audited; nothing goes to the backend. A Query's
   * refusal ends with ReadyForQuery as the backend's would; a Parse's waits for the client's Sync.
   */
  private refuseStatement(analysis: QueryAnalysis, readyForQuery: boolean): void {
    const refusal = analysis.refusal!;
    this.counts.refused++;
    const fields = errorFields("ERROR", refusal.sqlState, refusal.message);
    if (refusal.position) fields.set(ErrorField.Position, String(refusal.position));
    this.deps.audit("warn", "statement.refused", `statement refused: ${refusal.message}`, { exportId: this.deps.exportId, connectionId: this.deps.connectionId, component: "postgres", identity: this.identity.user ?? null, sqlState: refusal.sqlState });
    this.expected.push({ kind: "refusal", error: encodeErrorResponse(fields), readyForQuery });
    if (this.expected.length === 1) {
      const out = new OutputBuffer(256);
      this.answerRefusals(out);
      this.toClient(out);
    }
  }

  /** Answers the refusals at the head of the queue (their turn has come). */
  private answerRefusals(out: OutputBuffer): void {
    for (let head = this.head(); head?.kind === "refusal"; head = this.head()) {
      this.shiftExpectation();
      out.push(head.error);
      if (head.readyForQuery) out.push(encodeReadyForQuery(this.transaction));
    }
  }

  /**
   * The columns as the client may see them: hidden ones left out; a column whose values are
   * always NULL (unmapped, or whose instance is not known) described as text with no table,
   * attribute, size or modifier, so data cannot choose its metadata. A label crosses when the
   * client wrote it (a whole name in its statements), it is the name of a mapped column, or
   * `?column?`: server-side code can prepare a statement whose alias is a data value.
   */
  private visibleColumns(plan: ResultPlan): { columns: ColumnDescription[] | undefined; askedClient: boolean } {
    let changed = false;
    let askedClient = false;
    const visible: ColumnDescription[] = [];
    plan.columns.forEach((column, index) => {
      if (plan.hidden[index]) {
        changed = true;
        return;
      }
      const recordField = column.tableOid === 0 ? undefined : this.catalog.columns.get(columnKey(column.tableOid, column.attributeNumber));
      const mappedName = recordField !== undefined && recordField.slice(recordField.lastIndexOf(".") + 1) === column.name;
      if (!mappedName && column.name !== "?column?") askedClient = true;
      const labelOk = mappedName || column.name === "?column?" || this.clientWrote(column.name);
      const name = labelOk ? column.name : "?column?";
      const emptied = plan.categories[index] === undefined;
      if (!emptied && labelOk) {
        visible.push(column);
        return;
      }
      changed = true;
      visible.push(emptied ? { name, tableOid: 0, attributeNumber: 0, typeOid: textTypeOid, typeSize: -1, typeModifier: -1, format: column.format } : { ...column, name });
    });
    return { columns: changed ? visible : undefined, askedClient };
  }

  /**
   * During COPY IN only copy messages, Flush and Sync may come. A Sync is not forwarded: the backend
   * ignores it in COPY IN but answers it once an error has ended the COPY, and which of the two
   * happens depends on timing the proxy cannot see. Returns whether the message is forwarded.
   */
  private copyInFrame(code: number): boolean {
    switch (code) {
      case FrontendCode.CopyDone:
      case FrontendCode.CopyFail:
        this.copyingIn = false;
        return true;
      case FrontendCode.CopyData:
      case FrontendCode.Flush:
        return true;
      case FrontendCode.Sync:
        return false;
      default:
        throw new ProtocolError(`message '${String.fromCharCode(code)}' during COPY IN`);
    }
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

  private applyCatalog(results: string[][][], mapping: MappingView): void {
    const rows: CatalogRow[] = (results.length > 1 ? results[0]! : []).map((r) => ({ tableOid: Number(r[0]), attributeNumber: Number(r[1]), schema: r[2]!, table: r[3]!, column: r[4]! }));
    this.catalog = catalogFrom(rows, mapping);
    this.catalogVersion++;
    this.newestRelation = Number(results[results.length - 1]?.[0]?.[0] ?? 0);
    this.catalogMappingKey = mapping.key;
    this.catalogStale = false;
  }

  private internalQuery(sql: string): Promise<string[][][]> {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new ProtocolError("the backend did not answer the export's catalog query in time")), internalQueryTimeoutMs);
      this.pendingInternal = { timer, fail: reject };
      const query: InternalQuery = {
        results: [],
        done: () => {
          clearTimeout(timer);
          this.pendingInternal = undefined;
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
    this.close();
    this.deps.cancel(proxyKeys, this.deps.connectionId);
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
    this.clientApplicationName = parameters.get("application_name");
    // Read-only unless the export allows writes: a second layer under the statement checks (the client cannot override it: this parameter comes last).
    if (!this.deps.policy.allowWrites) {
      parameters.delete("default_transaction_read_only");
      parameters.set("default_transaction_read_only", "on");
    }
    // Protocol options (_pq_.*) and minor versions above 0 are declined the way PostgreSQL does.
    const options = [...parameters.keys()].filter((name) => name.startsWith("_pq_."));
    for (const option of options) parameters.delete(option);
    if (minor > 0 || options.length > 0) this.client.write(encodeNegotiateProtocolVersion(0, options));
    this.identity = { user: parameters.get("user"), database: parameters.get("database") ?? parameters.get("user") };
    this.loginUser = this.identity.user;
    if (this.deps.directVerification) {
      // A password in cleartext: only over TLS.
      if (!(this.client instanceof TLSSocket)) {
        this.refuse("28000", "this export verifies passwords itself and takes them only over TLS: connect with sslmode=require", "connection.tls-required");
        return;
      }
      this.phase = "verifying";
      this.startupParameters = parameters;
      this.client.write(encodeAuthenticationCleartextPassword());
      return;
    }
    this.connectBackend(parameters);
  }

  /** Direct verification: the client's password (or bearer token) is checked before any byte reaches the backend. */
  private async verifyClient(password: string): Promise<void> {
    const direct = this.deps.directVerification!;
    const user = this.identity.user ?? "";
    const outcome = await direct.verify(user, password, this.deps.connectionId);
    if (this.closed) return;
    if (!outcome.ok) {
      this.counts.refused++;
      this.fatal(outcome.sqlState, outcome.message);
      return;
    }
    const login = direct.backendIdentity ?? { user, password };
    this.loginUser = login.user;
    this.backendLogin = new BackendLogin(login.user, login.password);
    const parameters = this.startupParameters!;
    this.startupParameters = undefined;
    parameters.set("user", login.user);
    this.connectBackend(parameters);
  }

  private connectBackend(parameters: Map<string, string>): void {
    this.phase = "authenticating";
    this.client.pause();
    const { host, port } = this.deps.backend;
    const backendUser = parameters.get("user") ?? "";
    const backend = connectTcp({ host, port, onread: { buffer: this.backendReadBuffer, callback: (length) => this.backendRead(length) } });
    this.backend = backend;
    backend.setNoDelay(true);
    backend.setTimeout(this.deps.limits.connectTimeoutMs, () => {
      if (backend.connecting) backend.destroy(new Error("connect timeout"));
    });
    // Written now: the socket holds writes until connected, so nothing the client sends can overtake it.
    backend.write(encodeStartup(parameters));
    backend.once("connect", () => {
      backend.setTimeout(0);
      this.deps.audit("info", "connection.outgoing", `export ${this.deps.exportId} connected to ${host}:${port} as '${backendUser}'`, { exportId: this.deps.exportId, connectionId: this.deps.connectionId, endpoint: `${host}:${port}`, identity: backendUser, database: this.identity.database ?? null, identitySource: this.backendLogin ? (this.deps.directVerification?.backendIdentity ? "export" : "client") : "client (pass-through)" });
      if (!this.backendLogin) this.deps.audit("debug", "connection.pass-through", `connection ${this.deps.connectionId} passed through to the backing store for authentication`, { exportId: this.deps.exportId, connectionId: this.deps.connectionId, component: "postgres", identity: this.identity.user ?? null });
      this.client.resume();
    });
    backend.on("drain", () => this.releaseClient(0));
    backend.on("error", (error) => {
      if (this.phase === "authenticating" && !this.backendKeys && backend.bytesRead === 0) {
        this.deps.audit("warn", "connection.backend-unreachable", `export ${this.deps.exportId} cannot reach ${host}:${port}`, { exportId: this.deps.exportId, connectionId: this.deps.connectionId, endpoint: `${host}:${port}`, error: (error as NodeJS.ErrnoException).code ?? error.message });
        this.fatal("08006", "the export cannot reach its backing store");
      } else this.close();
    });
    backend.on("close", () => this.endAfterBackend());
  }

  // ---- backend -> client ------------------------------------------------------------------

  /** `length` bytes read into the backend read buffer: handled in place; whatever must wait is copied before the next read. */
  private backendRead(length: number): boolean {
    this.fromBackend.push(this.backendReadBuffer.subarray(0, length));
    void this.pumpBackend();
    this.fromBackend.copyOut(this.backendReadBuffer);
    return true;
  }

  private async pumpBackend(): Promise<void> {
    if (this.backendPumping) return;
    this.backendPumping = true;
    try {
      for (;;) {
        if (this.closed) return;
        let bytes = this.fromBackend.take();
        if (!bytes) return;
        const frames = this.backendFrames;
        const consumed = frames.split(bytes, this.deps.limits.maxMessageBytes);
        if (consumed < bytes.length) this.fromBackend.unshift(bytes.subarray(consumed));
        if (frames.count === 0) return;
        const out = new OutputBuffer(bytes.length);
        if (this.loadedVerdicts.size > 0) this.loadedVerdicts.clear();
        this.chunkUsers.length = 0;
        this.chunkRowVerdicts.length = 0;
        let scannedThrough = -1;
        for (let i = 0; i < frames.count; i++) {
          if (i > scannedThrough && frames.code(i) === BackendCode.DataRow && this.plan && !this.swallowingCopyOut && this.head()?.kind !== "internal") {
            // Once per run of rows in this chunk: the verdicts they need, loading the missing ones together.
            scannedThrough = this.verdictsFor(bytes, frames, i);
            if (this.missingUsers.size > 0) {
              const missing = [...this.missingUsers];
              this.toClient(out);
              this.backend?.pause();
              // The read buffer may be read into again before these rows are handled.
              if (bytes.buffer === this.backendReadBuffer.buffer) bytes = Buffer.from(bytes);
              await withTimeout(this.deps.decider.load(missing), decisionTimeoutMs, "deciding the rows' users took too long");
              if (this.closed) return;
              for (const userId of missing) {
                const verdict = this.deps.decider.verdict(userId);
                if (verdict) this.loadedVerdicts.set(userId, verdict);
              }
              if (!this.client.writableNeedDrain) this.backend?.resume();
            }
          }
          this.frameIndex = i;
          this.backendFrame(bytes, frames.read(i, this.backendCursor), out);
          if (this.closed) return;
          if (this.expected[0]?.kind === "refusal") this.answerRefusals(out);
        }
        this.toClient(out);
      }
    } catch (error) {
      this.failBackend(error);
    } finally {
      this.backendPumping = false;
    }
  }

  private toClient(out: OutputBuffer): void {
    if (out.size === 0 || this.closed) return;
    if (!this.client.write(out.take())) this.backend?.pause();
  }

  private head(): Expectation | undefined {
    return this.expected[0];
  }

  /** Removes the head expectation, and the ends of COPYs that turned out not to be running behind it. */
  private shiftExpectation(): Expectation | undefined {
    const done = this.expected.shift();
    while (this.expected[0]?.kind === "copyEnd") this.expected.shift();
    return done;
  }

  /** Removes the head expectation; a row-limited Execute lets the client's next messages go. */
  private finishExecute(): void {
    const done = this.shiftExpectation();
    if (done?.kind === "execute") done.limit?.finished?.();
  }

  /**
   * The backend entered COPY IN for the head expectation (a Query or an Execute). It reads the
   * client's next messages as part of the COPY, until a CopyDone or CopyFail: the Syncs among them
   * it ignores, so they are answered by nothing. Returns false when the client sent anything else
   * there (PostgreSQL would fail the COPY on it; the proxy ends the connection instead of guessing).
   */
  private enterCopyIn(): boolean {
    let end = 1;
    while (end < this.expected.length && this.expected[end]!.kind === "sync") end++;
    const ended = this.expected[end]?.kind === "copyEnd";
    if (end < this.expected.length && !ended) return false;
    this.expected.splice(1, ended ? end : end - 1);
    this.copyingIn = !ended;
    return true;
  }

  /**
   * Verdicts for the rows from `from` on, until the next message that is not a DataRow: those
   * in memory beside each row (so they cannot expire before their rows are sent), the users of
   * the others into `missingUsers`, to be loaded. One look-up per row. Returns the last row's index.
   */
  private verdictsFor(bytes: Buffer, frames: FrameList, from: number): number {
    const plan = this.plan!;
    const missing = this.missingUsers;
    missing.clear();
    let i = from;
    for (; i < frames.count && frames.code(i) === BackendCode.DataRow; i++) {
      if (plan.groups.length === 0) continue;
      const row = frames.read(i, this.scanCursor);
      if (plan.groups.length > 1) {
        for (const group of plan.groups) {
          const userId = this.userOf(bytes, row, plan, group);
          if (userId !== undefined && !this.deps.decider.verdict(userId)) missing.add(userId);
        }
        continue;
      }
      const userId = this.userOf(bytes, row, plan, plan.groups[0]!);
      this.chunkUsers[i] = userId ?? "";
      if (userId === undefined) continue;
      const verdict = this.deps.decider.verdict(userId);
      this.chunkRowVerdicts[i] = verdict;
      if (!verdict) missing.add(userId);
    }
    return i - 1;
  }

  /** Users of the rows `verdictsFor` scanned last whose verdicts are not in memory. */
  private readonly missingUsers = new Set<string>();

  /** Verdicts loaded for the chunk's `missingUsers`, kept until its rows are sent. */
  private readonly loadedVerdicts = new Map<string, RowVerdict>();
  /** Per frame of the chunk being handled: the row's user as `verdictsFor` read it ("" for none). */
  private readonly chunkUsers: string[] = [];
  /** Per frame of the chunk being handled: the row's verdict when `verdictsFor` found it in memory. */
  private readonly chunkRowVerdicts: Array<RowVerdict | undefined> = [];
  private frameIndex = -1;
  /** RowDescriptions by their bytes: a statement run again (pgbench, prepared statements) reuses its plan and masks. */
  private readonly described = new Map<string, DescribedResult>();
  private describedBytes = 0;
  /** The last RowDescription's bytes: compared first, before a look-up that would read them into a string. */
  private lastDescribed?: { bytes: Buffer; shape: ResultShape | undefined; result: DescribedResult };
  /** The mapping and column map the described results were made with; either changing clears them. */
  private describedMappingKey = "";
  private describedCatalogVersion = -1;

  private describedResult(bytes: Buffer, frame: Frame, shape: ResultShape | undefined): DescribedResult {
    const mapping = this.deps.decider.mapping();
    if (mapping.key !== this.describedMappingKey || this.catalogVersion !== this.describedCatalogVersion) {
      this.described.clear();
      this.describedBytes = 0;
      this.lastDescribed = undefined;
      this.describedMappingKey = mapping.key;
      this.describedCatalogVersion = this.catalogVersion;
    }
    const last = this.lastDescribed;
    if (last && (last.shape === shape || (last.shape !== undefined && shape !== undefined && last.shape.key === shape.key)) && equalBytes(last.bytes, 0, last.bytes.length, bytes, frame.bodyStart, frame.end)) return last.result;
    const key = shapeKey(shape) + bytes.toString("latin1", frame.bodyStart, frame.end);
    let result = this.described.get(key);
    if (!result) {
      const plan = planResult(decodeRowDescription(bodyOf(bytes, frame)), shape, this.catalog, mapping);
      result = { plan, newestTable: plan.columns.reduce((newest, column) => Math.max(newest, column.tableOid), 0) };
      if (this.described.size >= maxDescribedResults || this.describedBytes + key.length > maxDescribedBytes) {
        this.described.clear();
        this.describedBytes = 0;
      }
      if (key.length <= maxDescribedBytes) {
        this.described.set(key, result);
        this.describedBytes += key.length;
      }
    }
    this.lastDescribed = { bytes: Buffer.from(bodyOf(bytes, frame)), shape, result };
    return result;
  }

  /** The RowDescription as the client may see it (hidden columns left out, labels and metadata it may not see replaced), remembered until the client's recent statements change (for good when no label depends on them). */
  private pushRowDescription(bytes: Buffer, frame: Frame, result: DescribedResult, out: OutputBuffer): void {
    let forClient = result.forClient;
    if (forClient === undefined || (forClient.clientNamesVersion !== this.clientNamesVersion && forClient.clientNamesVersion !== -1)) {
      const visible = this.visibleColumns(result.plan);
      // Labels that are mapped column names or ?column? do not depend on what the client wrote: kept for good (-1).
      forClient = result.forClient = { clientNamesVersion: visible.askedClient ? this.clientNamesVersion : -1, rewritten: visible.columns ? encodeRowDescription(visible.columns) : undefined };
    }
    if (forClient.rewritten) out.push(forClient.rewritten);
    else out.pushRange(bytes, frame.start, frame.end);
  }

  /** The user a row names in one group's resource-context columns (first non-empty). */
  private userOf(bytes: Buffer, frame: Frame, plan: ResultPlan, columns: readonly number[]): string | undefined {
    for (const column of columns) {
      const value = locateValue(bytes, frame.bodyStart, frame.end, column);
      if (!value) continue;
      const description = plan.columns[column]!;
      const userId = userIdFromValue(bytes, value.start, value.length, description.typeOid, description.format, this.deps.userIds);
      if (userId !== undefined && userId !== "") return userId;
    }
    return undefined;
  }

  private backendFrame(bytes: Buffer, frame: Frame, out: OutputBuffer): void {
    const head = this.head();

    if (head?.kind === "internal") {
      this.internalFrame(head.query, frame.code, bodyOf(bytes, frame));
      return;
    }
    if (this.phase === "authenticating") {
      this.authenticationFrame(bytes, frame, out);
      return;
    }
    if (this.swallowingCopyOut && (frame.code === BackendCode.CopyData || frame.code === BackendCode.CopyDone)) return;

    switch (frame.code) {
      case BackendCode.DataRow:
        // Rows belong to an Execute or a simple query; anywhere else the bookkeeping is out of step: drop.
        if (head?.kind !== "execute" && head?.kind !== "simple") {
          this.counts.rowsIn++;
          this.counts.rowsDropped++;
          return;
        }
        this.dataRow(bytes, frame, out);
        return;
      case BackendCode.RowDescription: {
        const effect = head?.kind === "describe" ? head.effect : head?.kind === "simple" ? head.analysis.statements[head.index] : undefined;
        const result = this.describedResult(bytes, frame, effect ? this.shapeOf(effect) : undefined);
        if (result.newestTable > this.newestRelation) this.catalogStale = true;
        // Only a Describe of the portal right before its Execute and a simple query's description decide rows.
        this.plan = (head?.kind === "describe" && head.decidesRows) || head?.kind === "simple" ? result.plan : undefined;
        this.resultRowsSent = 0;
        if (head?.kind === "describe") {
          this.shiftExpectation();
          if (!head.forClient) return;
        }
        this.pushRowDescription(bytes, frame, result, out);
        return;
      }
      case BackendCode.ParseComplete:
      case BackendCode.BindComplete:
      case BackendCode.CloseComplete:
        if (head?.kind !== "complete" || head.code !== frame.code) throw new ProtocolError("the export lost track of the extended protocol");
        this.shiftExpectation();
        out.pushRange(bytes, frame.start, frame.end);
        return;
      case BackendCode.NoData:
        this.plan = undefined;
        if (head?.kind === "describe") {
          this.shiftExpectation();
          if (!head.forClient) return;
        }
        out.pushRange(bytes, frame.start, frame.end);
        return;
      case BackendCode.CommandComplete: {
        if (this.swallowingCopyOut) {
          this.swallowingCopyOut = false;
          out.push(encodeErrorResponse(errorFields("ERROR", "42501", "COPY TO STDOUT is not allowed through this export: its rows would bypass the purpose's filter")));
        } else if (this.plan && selectCount(bytes, frame.bodyStart, frame.end) === this.resultRowsSent) {
          // The common answer to a query with rows: its count already is the rows the client received.
          out.pushRange(bytes, frame.start, frame.end);
        } else {
          const tag = decodeCommandComplete(bodyOf(bytes, frame));
          // New or changed relations (CREATE TABLE AS and SELECT INTO answer "SELECT n" without rows).
          if (changesRelations(tag) || (!this.plan && /^SELECT \d+$/.test(tag))) this.catalogStale = true;
          // Without a plan no row was sent: a count (CREATE TABLE AS, MOVE) would count rows the client may not see.
          const rewritten = withReturnedRows(tag, this.plan ? this.resultRowsSent : 0);
          if (rewritten === tag) out.pushRange(bytes, frame.start, frame.end);
          else out.push(encodeCommandComplete(rewritten));
        }
        this.plan = undefined;
        this.copyingIn = false;
        if (head?.kind === "simple") this.applyEffect(head.analysis.statements[head.index++]);
        if (head?.kind === "execute") {
          this.applyEffect(head.effect);
          this.finishExecute();
        }
        return;
      }
      case BackendCode.PortalSuspended:
        if (head?.kind === "execute" && head.limit && this.resultRowsSent < head.limit.rows) {
          // Rows were dropped: ask the portal for as many more as the client is still owed (all the
          // rest when no row of this result can name a user: none will ever be sent).
          const owed = this.plan && this.plan.groups.length > 0 ? head.limit.rows - this.resultRowsSent : 0;
          this.backend?.write(Buffer.concat([encodeExecuteBytes(head.limit.portal, owed), encodeFlush()]));
          return;
        }
        this.plan = undefined;
        if (head?.kind === "execute") this.finishExecute();
        out.pushRange(bytes, frame.start, frame.end);
        return;
      case BackendCode.EmptyQueryResponse:
        this.plan = undefined;
        if (head?.kind === "execute") this.finishExecute();
        out.pushRange(bytes, frame.start, frame.end);
        return;
      case BackendCode.ErrorResponse:
        this.plan = undefined;
        this.swallowingCopyOut = false;
        this.copyingIn = false;
        // After an error in the extended protocol the backend skips every message (a Query too) until the next Sync.
        if ((head && head.kind !== "simple") || (!head && this.extendedOpen)) {
          while (this.expected.length > 0 && this.head()!.kind !== "sync") this.finishExecute();
          if (this.expected.length === 0) this.backendSkipsToSync = true;
        }
        out.push(encodeErrorResponse(this.clientError(decodeErrorFields(bodyOf(bytes, frame)), head)));
        return;
      case BackendCode.ReadyForQuery:
        if (head?.kind !== "sync" && head?.kind !== "simple") throw new ProtocolError("the export lost track of the protocol");
        this.transaction = decodeReadyForQuery(bytes, frame.bodyStart, frame.end);
        this.shiftExpectation();
        this.plan = undefined;
        this.copyingIn = false;
        out.pushRange(bytes, frame.start, frame.end);
        return;
      case BackendCode.NoticeResponse:
        out.push(encodeNoticeResponse(sanitizeNotice(decodeErrorFields(bodyOf(bytes, frame)))));
        return;
      case BackendCode.ParameterStatus: {
        // set_config() can make the backend report any value (application_name, TimeZone...): after startup only known values cross.
        const { name, value } = decodeParameterStatus(bodyOf(bytes, frame));
        if (!this.encodingSupported(name, value)) return;
        if (this.reportMayCross(name, value)) out.pushRange(bytes, frame.start, frame.end);
        return;
      }
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
        if (head?.kind !== "simple" && head?.kind !== "execute") throw new ProtocolError("the export lost track of the protocol");
        if (!this.enterCopyIn()) {
          this.failClient(new ProtocolError("messages other than copy data, Flush and Sync sent during COPY FROM STDIN"));
          return;
        }
        // A COPY FROM STDIN run by a row-limited Execute: the client's copy data must flow now.
        if (head?.kind === "execute" && head.limit?.finished) {
          head.limit.finished();
          head.limit.finished = undefined;
        }
        out.pushRange(bytes, frame.start, frame.end);
        return;
      case BackendCode.ParameterDescription:
        out.pushRange(bytes, frame.start, frame.end);
        return;
      default:
        // Only messages the proxy knows cross: anything else could carry what it cannot check.
        throw new ProtocolError(`unexpected message '${String.fromCharCode(frame.code)}' from the backend`);
    }
  }

  /** Whether an object name is in the catalog snapshot (a relation, schema or column the mapping names). */
  private knowsName(field: number, name: string): boolean {
    for (const row of this.catalog.rows.values()) {
      if (field === ErrorField.Table && row.table === name) return true;
      if (field === ErrorField.Schema && row.schema === name) return true;
      if (field === ErrorField.Column && row.column === name) return true;
    }
    return false;
  }

  /** What a statement's or portal's rows look like: a cursor's or prepared statement's as declared. */
  private shapeOf(effect: StatementEffect): ResultShape | undefined {
    switch (effect.kind) {
      case "rows":
        return effect.shape;
      case "fetch":
        return this.cursors.get(effect.cursor);
      case "execute": {
        const prepared = this.statements.get(effect.name);
        return prepared?.kind === "rows" ? prepared.shape : undefined;
      }
      default:
        return undefined;
    }
  }

  /** A statement completed: cursors and SQL-level prepared statements it made or removed. */
  private applyEffect(effect: StatementEffect | undefined): void {
    switch (effect?.kind) {
      case "declare":
        this.cursors.set(effect.cursor, effect.shape);
        return;
      case "prepare":
        this.statements.set(effect.name, { kind: "rows", shape: effect.shape });
        return;
      case "close":
        if (effect.cursor === undefined) this.cursors.clear();
        else this.cursors.delete(effect.cursor);
        return;
      case "deallocate":
        if (effect.name === undefined) this.statements.clear();
        else this.statements.delete(effect.name);
        return;
      case "discard":
        this.statements.clear();
        this.cursors.clear();
        return;
      default:
        return;
    }
  }

  /** An error as the client may see it: sanitized, its position mapped back to the client's own text, no hidden column's name. */
  private clientError(fields: ErrorFields, head: Expectation | undefined): ErrorFields {
    const analysis = head?.kind === "simple" ? head.analysis : head?.kind === "complete" ? head.analysis : undefined;
    const clean = sanitizeError(fields, (field, name) => this.knowsName(field, name));
    const position = clean.get(ErrorField.Position);
    if (position !== undefined && analysis && analysis.insertions.length > 0) {
      const mapped = originalPosition(analysis, Number(position));
      if (mapped === undefined) clean.delete(ErrorField.Position);
      else clean.set(ErrorField.Position, String(mapped));
    }
    for (const [field, value] of clean) clean.set(field, withoutHiddenNames(value));
    return clean;
  }

  /**
   * Whether a reported parameter crosses: values of a known form, and those only the client
   * could have chosen (its own application_name, the user it logged in as).
   */
  private reportMayCross(name: string, value: string): boolean {
    if (name === "application_name") return value === (this.clientApplicationName ?? "");
    if (name === "session_authorization") return value === this.loginUser;
    return reportedValueIsSafe(name, value);
  }

  /** User ids are read as UTF-8: a client encoding that converts text is refused. */
  private encodingSupported(name: string, value: string): boolean {
    if (name !== "client_encoding" || clientEncodings.has(value.toUpperCase())) return true;
    this.refuse("0A000", `client_encoding ${value} is not supported through this export: use UTF8`, "client-encoding.refused");
    return false;
  }

  private authenticationFrame(bytes: Buffer, frame: Frame, out: OutputBuffer): void {
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
          this.deps.audit("warn", "connection.backend-login-failed", `export ${this.deps.exportId} could not log in to its backing store: ${error.message}`, { exportId: this.deps.exportId, connectionId: this.deps.connectionId, endpoint: `${this.deps.backend.host}:${this.deps.backend.port}` });
          this.toClient(out);
          this.fatal("28000", "the export could not log in to its backing store");
          return;
        }
        if (answer === undefined) out.push(encodeAuthenticationOk());
        else if (answer.length > 0) this.backend?.write(answer);
        return;
      }
      case BackendCode.ParameterStatus: {
        // The same allow-list as after login: a role's stored settings (ALTER ROLE ... SET) are reported here.
        const { name, value } = decodeParameterStatus(bodyOf(bytes, frame));
        if (this.encodingSupported(name, value) && this.reportMayCross(name, value)) out.pushRange(bytes, frame.start, frame.end);
        return;
      }
      case BackendCode.BackendKeyData:
        this.backendKeys = decodeBackendKeyData(bodyOf(bytes, frame));
        this.proxyKeys = this.deps.cancelKeys.issue(this.backendKeys);
        out.push(encodeBackendKeyData(this.proxyKeys));
        return;
      case BackendCode.ReadyForQuery: {
        // Authenticated: learn the mapped columns before the client may send its first query.
        this.phase = "preparing";
        this.transaction = decodeReadyForQuery(bytes, frame.bodyStart, frame.end);
        const ready = Buffer.from(bytes.subarray(frame.start, frame.end));
        this.toClient(out);
        this.holdClient();
        this.refreshCatalog().then(
          () => {
            if (this.closed) return;
            this.phase = "ready";
            this.fromClient.limit(this.deps.limits.maxMessageBytes);
            clearTimeout(this.authenticationTimer);
            if (!this.client.write(ready)) this.backend?.pause();
            this.markReady();
            this.releaseClient();
          },
          (error: unknown) => this.failBackend(error),
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

  private internalFrame(query: InternalQuery, code: number, body: Buffer): void {
    switch (code) {
      case BackendCode.RowDescription:
        query.results.push([]);
        return;
      case BackendCode.DataRow: {
        const row = decodeDataRow(body, 0, body.length, newRowValues(8));
        const values: string[] = [];
        for (let i = 0; i < row.count; i++) values.push(row.lengths[i]! < 0 ? "" : body.toString("utf8", row.starts[i]!, row.starts[i]! + row.lengths[i]!));
        const rows = query.results[query.results.length - 1];
        if (!rows) throw new ProtocolError("a row without a description in the export's catalog query");
        if (rows.length >= maxCatalogRows) throw new ProtocolError("the export's catalog query returned too many rows");
        rows.push(values);
        return;
      }
      case BackendCode.ErrorResponse:
        query.error = decodeErrorFields(body).get(ErrorField.Code) ?? "unknown";
        return;
      case BackendCode.ReadyForQuery:
        this.transaction = decodeReadyForQuery(body);
        this.shiftExpectation();
        query.done();
        return;
      default:
        // CommandComplete, notices, parameter changes: not the client's business.
        return;
    }
  }

  private dataRow(bytes: Buffer, frame: Frame, out: OutputBuffer): void {
    this.counts.rowsIn++;
    const plan = this.plan;
    // A row whose shape is not the plan's is not decided by it; a result no instance's user decides is not shown.
    if (!plan || plan.groups.length === 0 || frame.end - frame.bodyStart < 2 || bytes.readInt16BE(frame.bodyStart) !== plan.columns.length) {
      this.counts.rowsDropped++;
      return;
    }
    const mask = plan.groups.length === 1 ? this.oneGroupMask(bytes, frame, plan) : this.groupsMask(bytes, frame, plan);
    if (!mask) {
      this.counts.rowsDropped++;
      return;
    }
    this.counts.rowsKept++;
    this.resultRowsSent++;
    if (mask.whole) {
      out.pushRange(bytes, frame.start, frame.end);
      return;
    }
    this.counts.valuesNulled += mask.nulled;
    out.pushMaskedRow(bytes, frame.start, frame.end, mask.keep);
  }

  /** The verdict of a user this chunk needs: read ahead with its row, loaded for the chunk, or in memory. */
  private verdictOf(userId: string): RowVerdict | undefined {
    return this.loadedVerdicts.get(userId) ?? this.deps.decider.verdict(userId);
  }

  /** One instance decides every value: the row goes if its user may be used. */
  private oneGroupMask(bytes: Buffer, frame: Frame, plan: ResultPlan) {
    const scanned = this.chunkUsers[this.frameIndex];
    const userId = scanned !== undefined ? scanned || undefined : this.userOf(bytes, frame, plan, plan.groups[0]!);
    const verdict = userId === undefined ? undefined : (this.chunkRowVerdicts[this.frameIndex] ?? this.verdictOf(userId));
    if (!verdict || !verdict.allowed) return undefined;
    return maskFor(plan, verdict);
  }

  /**
   * Several instances (a join): each value is decided by its own instance's user. The row goes
   * only if every instance that names a user may use it, and at least one does. An instance that
   * names no one is the missing side of an outer join when all its values are NULL (they stay
   * NULL); otherwise it is a row without a user, and the row is dropped (policy-semantics 4).
   */
  private groupsMask(bytes: Buffer, frame: Frame, plan: ResultPlan) {
    const verdicts: Array<RowVerdict | undefined> = [];
    let allowed = false;
    for (let group = 0; group < plan.groups.length; group++) {
      const userId = this.userOf(bytes, frame, plan, plan.groups[group]!);
      const verdict = userId === undefined ? undefined : this.verdictOf(userId);
      if (userId !== undefined && (!verdict || !verdict.allowed)) return undefined;
      if (userId === undefined && !this.groupAllNull(bytes, frame, plan, group)) return undefined;
      if (verdict) allowed = true;
      verdicts.push(verdict);
    }
    return allowed ? maskOf(plan, verdicts) : undefined;
  }

  /** Whether every value of one instance in this row is NULL. */
  private groupAllNull(bytes: Buffer, frame: Frame, plan: ResultPlan, group: number): boolean {
    for (let column = 0; column < plan.groupOf.length; column++) {
      if (plan.groupOf[column] !== group) continue;
      const value = locateValue(bytes, frame.bodyStart, frame.end, column);
      if (!value || value.length !== -1) return false;
    }
    return true;
  }

  // ---- ending -----------------------------------------------------------------------------

  /** Refuses what the export does not allow with a FATAL error, audits it, and ends the connection. */
  private refuse(sqlState: string, message: string, event: string): void {
    this.counts.refused++;
    this.deps.audit("warn", event, message, { exportId: this.deps.exportId, connectionId: this.deps.connectionId, component: "postgres", identity: this.identity.user ?? null });
    this.fatal(sqlState, message);
  }

  /** Ends the connection with a FATAL error the client reads (the connection's trace is recorded as usual). */
  fatal(sqlState: string, message: string): void {
    if (this.closed) return;
    this.endClient(encodeErrorResponse(errorFields("FATAL", sqlState, message)));
    this.close(false);
  }

  /** Ends the client's side after sending `last`; a client that does not close in turn is cut off. */
  private endClient(last?: Buffer): void {
    const client = this.client;
    if (last) client.end(last);
    else client.end();
    setTimeout(() => client.destroy(), lingerMs).unref();
  }

  private failClient(error: unknown): void {
    if (this.closed) return;
    if (error instanceof ProtocolError) {
      this.deps.audit("warn", "protocol.invalid", `invalid message from the client: ${error.message}`, { exportId: this.deps.exportId, connectionId: this.deps.connectionId, component: "postgres" });
      this.fatal("08P01", `invalid message from the client: ${error.message}`);
    } else this.failInternally(error);
  }

  private failBackend(error: unknown): void {
    if (this.closed) return;
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
      if (!this.closed) this.endClient();
      this.close(false);
    };
    if (this.backendPumping) setImmediate(finish);
    else finish();
  }

  close(destroyClient = true): void {
    if (this.closed) return;
    this.phase = "closed";
    clearTimeout(this.authenticationTimer);
    if (this.pendingInternal) {
      clearTimeout(this.pendingInternal.timer);
      this.pendingInternal.fail(new Error("connection closed"));
    }
    this.markReady();
    for (const pending of this.expected) if (pending.kind === "execute") pending.limit?.finished?.();
    if (destroyClient) this.client.destroy();
    this.backend?.destroy();
    if (this.proxyKeys) this.deps.cancelKeys.revoke(this.proxyKeys);
    this.deps.onEnd(this.counts, this.identity);
  }
}

/** The body of the message `frame` (a slice, no copy). */
function bodyOf(bytes: Buffer, frame: Frame): Buffer {
  return bytes.subarray(frame.bodyStart, frame.end);
}

function withTimeout<T>(work: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const expired = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(what)), ms)));
  return Promise.race([work, expired]).finally(() => clearTimeout(timer));
}

/** Whether a command tag says relations were created, changed or dropped. */
function changesRelations(tag: string): boolean {
  const first = tag.charCodeAt(0);
  // C(REATE), A(LTER), D(ROP), I(MPORT): most tags (SELECT, INSERT 0 1, UPDATE 1) are ruled out by one comparison.
  if (first !== 0x43 && first !== 0x41 && first !== 0x44 && first !== 0x49) return false;
  return /^(CREATE|ALTER|DROP|IMPORT)\b/.test(tag);
}

/** text: what a column whose values are always NULL is described as. */
const textTypeOid = 25;

/** A RowDescription's plan is remembered per statement shape as well as per bytes. */
function shapeKey(shape: ResultShape | undefined): string {
  return shape ? shape.key + "\u0000" : "-\u0000";
}

/**
 * A Bind that names one result format per column must name the hidden columns' too (text):
 * the Bind with those added at their places, or undefined when it needs no change (or the
 * places cannot be told: the backend then refuses the count, and nothing is shown).
 */
function withHiddenResultFormats(body: Buffer, shape: ResultShape | undefined): Buffer | undefined {
  const hidden = shape?.hiddenCount ?? 0;
  if (!shape || hidden === 0) return undefined;
  const bind = decodeBind(body);
  if (bind.resultFormats.length <= 1) return undefined;
  const total = bind.resultFormats.length + hidden;
  const positions = alignShape(shape, total);
  if (!positions) return undefined;
  const hiddenAt = new Set<number>();
  shape.entries.forEach((entry, index) => {
    if (entry.kind === "column" && entry.column.hidden && positions[index] !== undefined) hiddenAt.add(positions[index]!);
  });
  if (hiddenAt.size !== hidden) return undefined;
  const formats: number[] = [];
  let next = 0;
  for (let i = 0; i < total; i++) formats.push(hiddenAt.has(i) ? 0 : bind.resultFormats[next++]!);
  return encodeBind({ ...bind, resultFormats: formats });
}

/** Client encodings whose text is the database's UTF-8 bytes (user ids are read as UTF-8). */
const clientEncodings = new Set(["UTF8", "UTF-8", "UNICODE", "SQL_ASCII"]);

/** Parameters whose later reports cross the export, with the values they may have. */
const reportedParameters: Record<string, RegExp> = {
  client_encoding: /^[A-Za-z0-9_-]{1,20}$/,
  DateStyle: /^(ISO|Postgres|SQL|German), (DMY|MDY|YMD)$/,
  IntervalStyle: /^(postgres|postgres_verbose|sql_standard|iso_8601)$/,
  integer_datetimes: /^(on|off)$/,
  standard_conforming_strings: /^(on|off)$/,
  is_superuser: /^(on|off)$/,
  in_hot_standby: /^(on|off)$/,
  default_transaction_read_only: /^(on|off)$/,
  // Fixed by the server binary and the database at creation: no session can choose them.
  server_version: /^[0-9][0-9A-Za-z.+~()_ -]{0,80}$/,
  server_encoding: /^[A-Za-z0-9_-]{1,20}$/,
};

function reportedValueIsSafe(name: string, value: string): boolean {
  return Object.hasOwn(reportedParameters, name) && reportedParameters[name]!.test(value);
}

/** Bytes of an ErrorResponse, for callers outside a session (connection limit reached). */
export function fatalMessage(sqlState: string, message: string): Buffer {
  return encodeErrorResponse(errorFields("FATAL", sqlState, message));
}
