import { encodeBind, decodeBind, locateBind } from "../../../protocols/postgres/bind";
import { BackendCode, FrontendCode, TargetKind } from "../../../protocols/postgres/codes";
import { encodeDescribeBytes, locateDescribe } from "../../../protocols/postgres/describe";
import { encodeErrorResponse, errorFields, ErrorField } from "../../../protocols/postgres/error-response";
import { locateExecute } from "../../../protocols/postgres/execute";
import { FrameList, type Frame } from "../../../protocols/postgres/frames";
import { decodeParse, encodeParse } from "../../../protocols/postgres/parse";
import { decodePasswordMessage } from "../../../protocols/postgres/password";
import { decodeQuery, encodeQuery } from "../../../protocols/postgres/query";
import { encodeFlush } from "../../../protocols/postgres/sync";
import { equalBytes } from "../../../protocols/postgres/wire";
import type { QueryAnalysis, ResultShape } from "../analysis/statement-analysis";
import { ByteQueue } from "../byte-queue";
import { ByteStringMemo } from "../byte-string-memo";
import { ForwardBuffer } from "../forward-buffer";
import { OutputBuffer } from "../output-buffer";
import { alignShape } from "../result-plan";
import type { Connection } from "./connection";
import type { ExpectationQueue } from "./expectation-queue";
import { stateless, type DescribeExpectation } from "./expectations";
import { maxStartupBytes, type Login } from "./login";
import type { NamedResults } from "./named-results";
import type { VerdictWatch } from "../verdict-watch";
import type { RecentStatements } from "./recent-statements";
import type { SessionCatalog } from "./session-catalog";

/** Messages before the session is ready (passwords, SASL) are small; PostgreSQL caps them at 64 KiB too. */
const maxAuthenticationMessageBytes = 65_536;

/**
 * Client -> backend: the client's messages pass to the backend as they are, except those the
 * export refuses or rewrites (statements with hidden columns added, a Describe of the portal
 * before each Execute, top-ups of row-limited Executes); each forwarded message's answer is
 * pushed on the expectation queue. The client is held while login, a catalog lookup or a
 * row-limited Execute is under way.
 */
export class ClientPump {
  private fromClient = new ByteQueue(0, maxStartupBytes);
  private pumping = false;
  /** The messages of the chunk being handled, and the message being handled (objects reused, not one per message). */
  private readonly frames = new FrameList();
  private readonly cursor: Frame = { code: 0, start: 0, bodyStart: 0, end: 0 };
  /** What goes to the backend for the chunk being handled (reused: `toBackend` empties it). */
  private readonly out = new ForwardBuffer();
  /**
   * The client's last message when it was a Describe of a portal: an Execute of that portal right
   * behind it is described by it (libpq, node-postgres) and needs no Describe of the proxy's.
   * The portal's name is chunk[nameStart, nameEnd), a chunk the client socket handed over (never reused).
   */
  private portalDescribed?: { chunk: Buffer; nameStart: number; nameEnd: number; expectation: DescribeExpectation };
  /** Set by an Execute with a row limit: resolves when its rows are all sent. */
  private limitedExecute?: Promise<void>;
  /** Pushdown: the verdict table of the session's database (asked for with the first statement). */
  private verdicts?: VerdictWatch;
  /** Statement and portal names as sent (latin1: each byte one character, so distinct names stay distinct), read once per distinct name. */
  private readonly names = new ByteStringMemo(64, "latin1", 64);

  constructor(
    private readonly connection: Connection,
    private readonly queue: ExpectationQueue,
    private readonly catalog: SessionCatalog,
    private readonly named: NamedResults,
    private readonly recent: RecentStatements,
    private readonly login: Login,
  ) {}

  /** Bytes from the client. */
  received(chunk: Buffer): void {
    this.fromClient.push(chunk);
    void this.pump();
  }

  /** The session is ready for queries: messages up to the export's limit are taken. */
  sessionReady(): void {
    this.fromClient.limit(this.connection.deps.limits.maxClientMessageBytes);
  }

  private async pump(): Promise<void> {
    if (this.pumping) return;
    this.pumping = true;
    const { connection } = this;
    try {
      for (;;) {
        if (connection.closed) return;
        const bytes = this.fromClient.take();
        if (!bytes) return;
        if (connection.phase === "startup") {
          const rest = this.login.startupPacket(bytes);
          // After the startup packet every message is typed (a code byte before the length).
          if (connection.phase !== "startup") this.fromClient = new ByteQueue(1, maxAuthenticationMessageBytes);
          this.fromClient.unshift(rest);
          continue;
        }
        const frames = this.frames;
        const consumed = frames.split(bytes, connection.phase === "ready" ? connection.deps.limits.maxClientMessageBytes : maxAuthenticationMessageBytes);
        if (consumed < bytes.length) this.fromClient.unshift(bytes.subarray(consumed));
        // Only part of a message: wait for the rest.
        if (frames.count === 0) return;
        const out = this.out;
        for (let i = 0; i < frames.count; i++) {
          const frame = frames.read(i, this.cursor);
          if (connection.phase === "verifying") {
            this.fromClient.unshift(bytes.subarray(frame.end, consumed));
            if (frame.code !== FrontendCode.Password) {
              connection.refuse("08P01", "expected a password message", "protocol.violation");
              return;
            }
            connection.holdClient();
            await this.login.verifyClient(decodePasswordMessage(bytes.subarray(frame.bodyStart, frame.end)));
            if (connection.closed) return;
            connection.releaseClient();
            break;
          }
          if ((connection.phase === "authenticating" && frame.code !== FrontendCode.Password) || connection.phase === "preparing") {
            // Anything but authentication waits until the session is ready: the catalog query must be answered first.
            connection.toBackend(out);
            this.fromClient.unshift(bytes.subarray(frame.start, consumed));
            connection.holdClient();
            await this.login.sessionReady;
            if (connection.closed) return;
            connection.releaseClient();
            break;
          }
          if (this.catalog.needsRefresh(frame.code)) {
            connection.toBackend(out);
            connection.holdClient();
            await this.catalog.refresh();
            connection.releaseClient();
          }
          const verdicts = this.verdictsToWaitFor(frame.code);
          if (verdicts) {
            // Pushdown: a statement runs only once every change the node knows of is in the verdict table.
            connection.toBackend(out);
            connection.holdClient();
            const current = await verdicts.whenCurrent().then(
              () => true,
              (error: Error) => {
                connection.refuse("55000", error.message, "pushdown.verdicts-unavailable");
                return false;
              },
            );
            if (!current || connection.closed) return;
            connection.releaseClient();
          }
          // Pushdown: named results made under older verdicts are no longer trusted (named-results.ts).
          if (this.verdicts) this.named.verdictVersion = this.verdicts.state().version;
          if (!this.clientFrame(bytes, frame, out)) return;
          const limited = this.limitedExecute;
          if (limited) {
            this.limitedExecute = undefined;
            connection.toBackend(out);
            this.fromClient.unshift(bytes.subarray(frame.end, consumed));
            connection.holdClient();
            await limited;
            if (connection.closed) return;
            connection.releaseClient();
            break;
          }
        }
        connection.toBackend(out);
      }
    } catch (error) {
      connection.failClient(error);
    } finally {
      this.pumping = false;
    }
  }

  /** One message from a connected client; false when the connection ends here. */
  private clientFrame(bytes: Buffer, frame: Frame, out: ForwardBuffer): boolean {
    const { connection, queue, named } = this;
    if (connection.phase === "authenticating") {
      // Direct verification: the proxy logs in to the backend itself; the client has nothing to say to it.
      if (this.login.logsInItself) {
        connection.refuse("08P01", "unexpected message during authentication", "protocol.invalid");
        return false;
      }
      out.forward(bytes, frame.start, frame.end);
      return true;
    }
    const described = this.portalDescribed;
    this.portalDescribed = undefined;
    if (queue.clientSkipsToSync && frame.code !== FrontendCode.Sync && frame.code !== FrontendCode.Terminate) return true;
    // During COPY IN, and for messages the backend will skip (an error earlier in this extended-protocol batch): no answer expected.
    if (
      queue.copyingIn ||
      (queue.backendSkipsToSync && frame.code !== FrontendCode.Sync && frame.code !== FrontendCode.Terminate && frame.code !== FrontendCode.FunctionCall)
    ) {
      if (!queue.copyingIn || queue.copyInFrame(frame.code)) out.forward(bytes, frame.start, frame.end);
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
        queue.push({ kind: "simple", analysis, index: 0 });
        for (const statement of analysis.statements) named.sent(statement);
        if (analysis.text !== sql) {
          out.push(encodeQuery(this.withVerdictVersion(analysis.text)));
          return true;
        }
        break;
      }
      case FrontendCode.Parse: {
        queue.extendedOpen = true;
        const parse = decodeParse(bytes.subarray(frame.bodyStart, frame.end));
        const analysis = this.analyse(parse.sql);
        if (analysis.refusal) {
          this.refuseStatement(analysis, false);
          queue.clientSkipsToSync = true;
          return true;
        }
        // One statement per Parse (the backend refuses more): its effect is the prepared statement's, once the backend confirms it.
        const change = named.parse(parse.statement, analysis.statements[0] ?? { kind: "other" });
        queue.push({ kind: "complete", code: BackendCode.ParseComplete, analysis: analysis.insertions.length > 0 ? analysis : undefined, change });
        if (analysis.text !== parse.sql) {
          out.push(encodeParse({ ...parse, sql: this.withVerdictVersion(analysis.text) }));
          return true;
        }
        break;
      }
      case FrontendCode.Bind: {
        queue.extendedOpen = true;
        const { portalEnd, statementStart, statementEnd } = locateBind(bytes, frame.bodyStart, frame.end);
        const statement = this.names.text(bytes, statementStart, statementEnd);
        // The portal returns what its statement does once the backend confirms the Bind; the result formats are written now, for the statement expected.
        const change = named.bind(this.names.text(bytes, frame.bodyStart, portalEnd), statement);
        queue.push({ kind: "complete", code: BackendCode.BindComplete, change });
        const shape = named.shapeOf(change.effect);
        const rebound = shape && shape.hiddenCount > 0 ? withHiddenResultFormats(bytes.subarray(frame.bodyStart, frame.end), shape) : undefined;
        if (rebound) {
          out.push(rebound);
          return true;
        }
        break;
      }
      case FrontendCode.Close: {
        queue.extendedOpen = true;
        const target = locateDescribe(bytes, frame.bodyStart, frame.end);
        const name = this.names.text(bytes, frame.bodyStart + 1, target.nameEnd);
        queue.push({ kind: "complete", code: BackendCode.CloseComplete, change: named.close(target.kind === TargetKind.Portal, name) });
        break;
      }
      case FrontendCode.Flush:
        queue.extendedOpen = true;
        break;
      case FrontendCode.Describe: {
        queue.extendedOpen = true;
        const target = locateDescribe(bytes, frame.bodyStart, frame.end);
        const name = this.names.text(bytes, frame.bodyStart + 1, target.nameEnd);
        const expectation: DescribeExpectation = { kind: "describe", forClient: true, decidesRows: false, portal: target.kind === TargetKind.Portal, name };
        queue.push(expectation);
        if (target.kind === TargetKind.Portal) this.portalDescribed = { chunk: bytes, nameStart: frame.bodyStart + 1, nameEnd: target.nameEnd, expectation };
        break;
      }
      case FrontendCode.Execute: {
        queue.extendedOpen = true;
        // The portal's columns must be known when its rows come: from the client's own Describe of
        // the portal just before (still unanswered, so nothing came between), otherwise from the
        // proxy's own Describe, whose answer comes back just before the rows and is kept from the client.
        const { portalEnd, maxRows: limit } = locateExecute(bytes, frame.bodyStart, frame.end);
        const name = this.names.text(bytes, frame.bodyStart, portalEnd);
        // What the portal will run, as expected now (the rows are read with what the backend confirmed, when they come).
        named.sent(named.expectedPortal(name));
        // Still the last expectation: not answered yet (nor cleared by an error).
        if (
          described &&
          queue.last() === described.expectation &&
          equalBytes(described.chunk, described.nameStart, described.nameEnd, bytes, frame.bodyStart, portalEnd)
        )
          described.expectation.decidesRows = true;
        else {
          out.push(encodeDescribeBytes(TargetKind.Portal, bytes.subarray(frame.bodyStart, portalEnd)));
          queue.push({ kind: "describe", forClient: false, decidesRows: true, portal: true, name });
        }
        if (limit <= 0) {
          queue.push({ kind: "execute", portal: name });
          break;
        }
        // A row limit counts the rows the client receives: dropped rows are made up for with more
        // Executes of the portal, so the client's next messages (its Sync) wait until this one is done.
        // The portal's name is copied: the top-ups name it.
        const portal = Buffer.from(bytes.subarray(frame.bodyStart, portalEnd));
        this.limitedExecute = new Promise((resolve) => queue.push({ kind: "execute", limit: { portal, rows: limit, finished: resolve }, portal: name }));
        out.forward(bytes, frame.start, frame.end);
        out.push(encodeFlush());
        return true;
      }
      case FrontendCode.Sync:
        queue.sync();
        break;
      case FrontendCode.CopyData:
        // Outside COPY IN the backend ignores it (copy data after a failed COPY).
        break;
      case FrontendCode.CopyDone:
      case FrontendCode.CopyFail:
        // A COPY FROM STDIN still unanswered may be what it ends (see `ExpectationQueue.enterCopyIn`).
        if (queue.length > 0) queue.push(stateless.copyEnd);
        break;
      case FrontendCode.FunctionCall:
        connection.refuse("0A000", "function calls (the FunctionCall message) are not allowed through this export", "function-call.refused");
        return false;
      case FrontendCode.Terminate:
        out.forward(bytes, frame.start, frame.end);
        connection.toBackend(out);
        connection.close();
        return false;
      default:
        // Anything else goes to the backend, which refuses what it does not know.
        break;
    }
    out.forward(bytes, frame.start, frame.end);
    return true;
  }

  /** Pushdown: the verdicts a Query, Parse or Execute must wait for, when they are not current. */
  private verdictsToWaitFor(code: number): VerdictWatch | undefined {
    const { deps, identity } = this.connection;
    if (!deps.pushdown || (code !== FrontendCode.Query && code !== FrontendCode.Parse && code !== FrontendCode.Execute)) return undefined;
    this.verdicts ??= deps.pushdown.of(identity.database ?? identity.user ?? "");
    return this.verdicts.state().current ? undefined : this.verdicts;
  }

  /** A rewritten text with the verdict version it needs in place of the analysis's marker. */
  private withVerdictVersion(text: string): string {
    const marker = this.connection.deps.policy.pushdown?.versionMarker;
    if (!marker || !this.verdicts) return text;
    return text.replaceAll(marker, String(this.verdicts.state().version).padStart(marker.length, "0"));
  }

  /** The analysis of a client text (cached by text); its names join those labels may use. */
  private analyse(sql: string): QueryAnalysis {
    const { deps, counts } = this.connection;
    const parsedBefore = deps.analyses.misses;
    const analysis = deps.analyses.get(sql, this.catalog.current.schema, deps.policy);
    counts.statements++;
    counts.statementsParsed += deps.analyses.misses - parsedBefore;
    this.recent.note(analysis);
    return analysis;
  }

  /**
   * A statement the export does not run: its error reaches the client in the order of the
   * answers (after everything sent before it), audited; nothing goes to the backend. A Query's
   * refusal ends with ReadyForQuery as the backend's would; a Parse's waits for the client's Sync.
   */
  private refuseStatement(analysis: QueryAnalysis, readyForQuery: boolean): void {
    const { connection } = this;
    const { deps } = connection;
    const refusal = analysis.refusal!;
    connection.counts.refused++;
    const fields = errorFields("ERROR", refusal.sqlState, refusal.message);
    if (refusal.position) fields.set(ErrorField.Position, String(refusal.position));
    deps.audit("warn", "statement.refused", `statement refused: ${refusal.message}`, {
      exportId: deps.exportId,
      connectionId: deps.connectionId,
      component: "postgres",
      identity: connection.identity.user ?? null,
      sqlState: refusal.sqlState,
    });
    this.queue.push({ kind: "refusal", error: encodeErrorResponse(fields), readyForQuery });
    if (this.queue.length === 1) {
      const out = new OutputBuffer(256);
      this.queue.answerRefusals(out);
      connection.toClient(out);
    }
  }
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
