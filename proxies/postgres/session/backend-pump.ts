import { BackendCode, TransactionStatus } from "../../../protocols/postgres/codes";
import { decodeCommandComplete, encodeCommandComplete, selectCount, withReturnedRows } from "../../../protocols/postgres/command-complete";
import {
  decodeErrorFields,
  encodeErrorResponse,
  encodeNoticeResponse,
  errorFields,
  ErrorField,
  type ErrorFields,
} from "../../../protocols/postgres/error-response";
import { encodeExecuteBytes } from "../../../protocols/postgres/execute";
import { FrameList, type Frame } from "../../../protocols/postgres/frames";
import { decodeParameterStatus } from "../../../protocols/postgres/parameter-status";
import { decodeReadyForQuery } from "../../../protocols/postgres/ready-for-query";
import { encodeFlush } from "../../../protocols/postgres/sync";
import { ProtocolError } from "../../../protocols/postgres/wire";
import { originalPosition, withoutHiddenNames } from "../analysis/statement-analysis";
import { ByteQueue } from "../byte-queue";
import { OutputBuffer } from "../output-buffer";
import { sanitizeError, sanitizeNotice } from "../sanitize";
import type { Connection } from "./connection";
import type { ExpectationQueue } from "./expectation-queue";
import type { Expectation } from "./expectations";
import { bodyOf } from "./frame-body";
import type { Login } from "./login";
import type { NamedResults } from "./named-results";
import type { ParameterReports } from "./parameter-reports";
import type { RowDescriptions } from "./row-descriptions";
import type { RowFilter } from "./row-filter";
import type { SessionCatalog } from "./session-catalog";

/** Deciding the users of a run of rows may take this long; then the connection fails (closed, nothing sent). */
const decisionTimeoutMs = 15_000;
/**
 * Bytes read from the backend at a time, into one buffer per connection reused for every read:
 * no allocation (and later collection) of a buffer per read.
 */
const backendReadBytes = 65_536;

/**
 * Backend -> client: the backend's answers, each matched with the expectation at the head of
 * the queue, pass to the client with every row decided by the row filter; descriptions,
 * command tags, errors, notices and parameter reports are rewritten or withheld where they
 * could carry what the client may not see. Only messages the proxy knows cross.
 */
export class BackendPump {
  /** Where the backend's bytes are read into; what is still queued when the next read comes is copied out first. */
  readonly readBuffer = Buffer.allocUnsafeSlow(backendReadBytes);
  /** Bytes of the read buffer to handle before anything queued (set by `read` when nothing is queued). */
  private readLength = 0;
  private readonly fromBackend: ByteQueue;
  /** Handling a chunk (perhaps waiting for decisions): the backend is resumed by the pump, not by the client draining. */
  pumping = false;
  /** The messages of the chunk being handled, and the message being handled (objects reused, not one per message). */
  private readonly frames = new FrameList();
  private readonly cursor: Frame = { code: 0, start: 0, bodyStart: 0, end: 0 };
  /** A COPY TO STDOUT is running: its data is withheld, its end answered with an error. */
  private swallowingCopyOut = false;

  constructor(
    private readonly connection: Connection,
    private readonly queue: ExpectationQueue,
    private readonly catalog: SessionCatalog,
    private readonly named: NamedResults,
    private readonly descriptions: RowDescriptions,
    private readonly rows: RowFilter,
    private readonly reports: ParameterReports,
    private readonly login: Login,
  ) {
    this.fromBackend = new ByteQueue(1, connection.deps.limits.maxMessageBytes);
  }

  /** `length` bytes read into the read buffer: handled in place; whatever must wait is copied before the next read. */
  read(length: number): boolean {
    // Nothing queued before it: the pump reads the read buffer itself (no slice of it per read).
    if (!this.pumping && this.fromBackend.length === 0) this.readLength = length;
    else this.fromBackend.push(this.readBuffer.subarray(0, length));
    void this.pump();
    this.fromBackend.copyOut(this.readBuffer);
    return true;
  }

  /** Bytes the backend socket handed over (a TLS connection's decrypted records): never the read buffer, so nothing to copy out. */
  received(chunk: Buffer): void {
    this.fromBackend.push(chunk);
    void this.pump();
  }

  /** The backend closed: whatever it said is flushed to the client, then the client is ended. */
  backendClosed(): void {
    const { connection } = this;
    if (connection.closed) return;
    const finish = () => {
      if (!connection.closed) connection.endClient();
      connection.close(false);
    };
    if (this.pumping) setImmediate(finish);
    else finish();
  }

  private async pump(): Promise<void> {
    if (this.pumping) return;
    this.pumping = true;
    const { connection, rows } = this;
    try {
      for (;;) {
        if (connection.closed) return;
        let bytes: Buffer;
        /** The bytes to handle are bytes[0, limit). */
        let limit: number;
        if (this.readLength > 0) {
          bytes = this.readBuffer;
          limit = this.readLength;
          this.readLength = 0;
        } else {
          const taken = this.fromBackend.take();
          if (!taken) return;
          bytes = taken;
          limit = taken.length;
        }
        const frames = this.frames;
        const consumed = frames.split(bytes, connection.deps.limits.maxMessageBytes, limit);
        if (consumed < limit) this.fromBackend.unshift(bytes.subarray(consumed, limit));
        if (frames.count === 0) return;
        const out = new OutputBuffer(limit);
        rows.startChunk();
        let scannedThrough = -1;
        for (let i = 0; i < frames.count; i++) {
          if (i > scannedThrough && frames.code(i) === BackendCode.DataRow && rows.plan && !this.swallowingCopyOut && this.queue.head()?.kind !== "internal") {
            // Once per run of rows in this chunk: the verdicts they need, loading the missing ones together.
            scannedThrough = rows.scan(bytes, frames, i);
            if (rows.missingUsers.size > 0) {
              const missing = [...rows.missingUsers];
              connection.toClient(out);
              connection.backend?.pause();
              // The read buffer may be read into again before these rows are handled.
              if (bytes.buffer === this.readBuffer.buffer) bytes = Buffer.from(bytes.subarray(0, limit));
              await withTimeout(connection.deps.decider.load(missing), decisionTimeoutMs, "deciding the rows' users took too long");
              if (connection.closed) return;
              rows.keepLoaded(missing);
              if (!connection.client.writableNeedDrain) connection.backend?.resume();
            }
          }
          this.backendFrame(bytes, frames.read(i, this.cursor), i, out);
          if (connection.closed) return;
          if (this.queue.items[0]?.kind === "refusal") this.queue.answerRefusals(out);
        }
        connection.toClient(out);
      }
    } catch (error) {
      connection.failBackend(error);
    } finally {
      this.pumping = false;
    }
  }

  /** One message of the backend, the chunk's `frameIndex`th. */
  private backendFrame(bytes: Buffer, frame: Frame, frameIndex: number, out: OutputBuffer): void {
    const { connection, queue, rows } = this;
    const head = queue.head();

    if (head?.kind === "internal") {
      this.catalog.internalFrame(head.query, frame.code, bodyOf(bytes, frame));
      return;
    }
    if (connection.phase === "authenticating") {
      this.login.authenticationFrame(bytes, frame, out);
      return;
    }
    if (this.swallowingCopyOut && (frame.code === BackendCode.CopyData || frame.code === BackendCode.CopyDone)) return;

    switch (frame.code) {
      case BackendCode.DataRow:
        // Rows belong to an Execute or a simple query; anywhere else the bookkeeping is out of step: drop.
        if (head?.kind !== "execute" && head?.kind !== "simple") {
          connection.counts.rowsIn++;
          connection.counts.rowsDropped++;
          return;
        }
        rows.dataRow(bytes, frame, frameIndex, out);
        return;
      case BackendCode.RowDescription: {
        const effect =
          head?.kind === "describe"
            ? head.portal
              ? this.named.portal(head.name)
              : this.named.statement(head.name)
            : head?.kind === "simple"
              ? head.analysis.statements[head.index]
              : undefined;
        const result = this.descriptions.resultOf(bytes, frame, effect ? this.named.shapeOf(effect) : undefined);
        this.catalog.noteRelation(result.newestTable);
        // Only a Describe of the portal right before its Execute and a simple query's description decide rows.
        rows.plan = (head?.kind === "describe" && head.decidesRows) || head?.kind === "simple" ? result.plan : undefined;
        rows.rowsSent = 0;
        if (head?.kind === "describe") {
          queue.shift();
          if (!head.forClient) return;
        }
        this.descriptions.push(bytes, frame, result, out);
        return;
      }
      case BackendCode.ParseComplete:
      case BackendCode.BindComplete:
      case BackendCode.CloseComplete:
        if (head?.kind !== "complete" || head.code !== frame.code) throw new ProtocolError("the export lost track of the extended protocol");
        if (head.change) this.named.confirmed(head.change);
        queue.shift();
        out.pushRange(bytes, frame.start, frame.end);
        return;
      case BackendCode.NoData:
        rows.plan = undefined;
        if (head?.kind === "describe") {
          queue.shift();
          if (!head.forClient) return;
        }
        out.pushRange(bytes, frame.start, frame.end);
        return;
      case BackendCode.CommandComplete: {
        if (this.swallowingCopyOut) {
          this.swallowingCopyOut = false;
          out.push(
            encodeErrorResponse(errorFields("ERROR", "42501", "COPY TO STDOUT is not allowed through this export: its rows would bypass the purpose's filter")),
          );
        } else if (rows.plan && selectCount(bytes, frame.bodyStart, frame.end) === rows.rowsSent) {
          // The common answer to a query with rows: its count already is the rows the client received.
          out.pushRange(bytes, frame.start, frame.end);
        } else {
          const tag = decodeCommandComplete(bodyOf(bytes, frame));
          // The transaction's cursors WITH HOLD end with it (ROLLBACK, a COMMIT of a failed one, ROLLBACK TO SAVEPOINT: all say ROLLBACK).
          if (tag === "ROLLBACK") this.named.rolledBack();
          // New or changed relations (CREATE TABLE AS and SELECT INTO answer "SELECT n" without rows).
          if (changesRelations(tag) || (!rows.plan && /^SELECT \d+$/.test(tag))) this.catalog.markStale();
          // Without a plan no row was sent: a count (CREATE TABLE AS, MOVE) would count rows the client may not see.
          const rewritten = withReturnedRows(tag, rows.plan ? rows.rowsSent : 0);
          if (rewritten === tag) out.pushRange(bytes, frame.start, frame.end);
          else out.push(encodeCommandComplete(rewritten));
        }
        rows.plan = undefined;
        queue.copyingIn = false;
        if (head?.kind === "simple") this.named.applyEffect(head.analysis.statements[head.index++]);
        if (head?.kind === "execute") {
          this.named.applyEffect(this.named.portal(head.portal));
          queue.finishExecute();
        }
        return;
      }
      case BackendCode.PortalSuspended:
        if (head?.kind === "execute" && head.limit && rows.rowsSent < head.limit.rows) {
          // Rows were dropped: ask the portal for as many more as the client is still owed (all the
          // rest when no row of this result can name a user: none will ever be sent).
          const owed = rows.plan && rows.plan.groups.length > 0 ? head.limit.rows - rows.rowsSent : 0;
          connection.backend?.write(Buffer.concat([encodeExecuteBytes(head.limit.portal, owed), encodeFlush()]));
          return;
        }
        rows.plan = undefined;
        if (head?.kind === "execute") queue.finishExecute();
        out.pushRange(bytes, frame.start, frame.end);
        return;
      case BackendCode.EmptyQueryResponse:
        rows.plan = undefined;
        if (head?.kind === "execute") queue.finishExecute();
        out.pushRange(bytes, frame.start, frame.end);
        return;
      case BackendCode.ErrorResponse:
        rows.plan = undefined;
        this.swallowingCopyOut = false;
        queue.copyingIn = false;
        // After an error in the extended protocol the backend skips every message (a Query too) until the next Sync.
        // A Parse, Bind or Close refused or skipped changes nothing (named-results.ts).
        if ((head && head.kind !== "simple") || (!head && queue.extendedOpen)) queue.skipToSync(this.skipped);
        this.named.failed();
        out.push(encodeErrorResponse(this.clientError(decodeErrorFields(bodyOf(bytes, frame)), head)));
        return;
      case BackendCode.ReadyForQuery:
        if (head?.kind !== "sync" && head?.kind !== "simple") throw new ProtocolError("the export lost track of the protocol");
        queue.transaction = decodeReadyForQuery(bytes, frame.bodyStart, frame.end);
        if (queue.transaction === TransactionStatus.Idle) this.named.transactionEnded();
        queue.shift();
        rows.plan = undefined;
        queue.copyingIn = false;
        out.pushRange(bytes, frame.start, frame.end);
        return;
      case BackendCode.NoticeResponse:
        out.push(encodeNoticeResponse(sanitizeNotice(decodeErrorFields(bodyOf(bytes, frame)))));
        return;
      case BackendCode.ParameterStatus: {
        // set_config() can make the backend report any value (application_name, TimeZone...): after startup only known values cross.
        const { name, value } = decodeParameterStatus(bodyOf(bytes, frame));
        if (this.reports.forwards(name, value)) out.pushRange(bytes, frame.start, frame.end);
        return;
      }
      case BackendCode.NotificationResponse:
        // A payload and a channel name can both carry any value: notifications do not cross the export.
        connection.counts.notificationsDropped++;
        return;
      case BackendCode.CopyOutResponse: {
        this.swallowingCopyOut = true;
        connection.counts.refused++;
        const { deps } = connection;
        deps.audit("warn", "copy-out.refused", "COPY TO STDOUT refused: its rows would bypass the purpose's filter", {
          exportId: deps.exportId,
          connectionId: deps.connectionId,
          component: "postgres",
          identity: connection.identity.user ?? null,
        });
        return;
      }
      case BackendCode.CopyBothResponse:
        connection.refuse("0A000", "COPY BOTH (streaming replication) is not allowed through this export", "copy-both.refused");
        return;
      case BackendCode.CopyInResponse:
        if (head?.kind !== "simple" && head?.kind !== "execute") throw new ProtocolError("the export lost track of the protocol");
        if (!queue.enterCopyIn()) {
          connection.failClient(new ProtocolError("messages other than copy data, Flush and Sync sent during COPY FROM STDIN"));
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

  /** An expectation the backend will not answer (an error came before it): a change it carried is not applied. */
  private readonly skipped = (expectation: Expectation): void => {
    if (expectation.kind === "complete" && expectation.change) this.named.dropped(expectation.change);
  };

  /** An error as the client may see it: sanitized, its position mapped back to the client's own text, no hidden column's name. */
  private clientError(fields: ErrorFields, head: Expectation | undefined): ErrorFields {
    const analysis = head?.kind === "simple" ? head.analysis : head?.kind === "complete" ? head.analysis : undefined;
    const clean = sanitizeError(fields, (field, name) => this.catalog.knowsName(field, name));
    const position = clean.get(ErrorField.Position);
    if (position !== undefined && analysis && analysis.insertions.length > 0) {
      const mapped = originalPosition(analysis, Number(position));
      if (mapped === undefined) clean.delete(ErrorField.Position);
      else clean.set(ErrorField.Position, String(mapped));
    }
    for (const [field, value] of clean) clean.set(field, withoutHiddenNames(value));
    return clean;
  }
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
