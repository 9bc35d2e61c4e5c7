import { randomUUID } from "node:crypto";
import { inject, injectable } from "tsyringe";
import { jetstream, type JetStreamClient, type JetStreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import type { Logger } from "pino";
import { Counter, type Registry } from "prom-client";
import { AuditUnavailableError, TraceUnavailableError } from "./errors";
import { Streams, Subjects } from "./addressing";
import { Tokens } from "./tokens";
import type { RuntimeOptions } from "./types";

export type AuditLevel = "debug" | "info" | "warn" | "error";

/** One audit record, as published on `warden.audit.<category>.<level>` and kept in WARDEN_AUDIT. */
export interface AuditRecord {
  id: string;
  time: string;
  level: AuditLevel;
  /** The component type or name the record belongs to (spec 6: connection attempts go to a category named after it). */
  category: string;
  /** Machine-readable kind of record, e.g. `config.active`, `port.opened`, `connection.denied`. */
  event: string;
  message: string;
  nodeId: string;
  /** Correlates the records of one client connection with its trace records. */
  connectionId?: string;
  details?: Record<string, unknown>;
}

const subjectToken = /^[A-Za-z0-9_-]+$/;

/**
 * Publishes audit and trace records on NATS subjects captured by JetStream streams, so outside
 * systems can subscribe live or replay. Both are published with a JetStream acknowledgement:
 * `audit()` and `trace()` resolve only once the record is stored.
 */
@injectable()
export class EventLog {
  private readonly js: JetStreamClient;
  private readonly pendingTraces = new Map<string, TraceBatch>();
  private flushScheduled = false;
  private readonly inFlight = new Set<Promise<void>>();
  private readonly batchIdPrefix: string;
  private batchSeq = 0;
  private readonly tracesStored: Counter;
  private readonly tracesFailed: Counter;
  private readonly auditsFailed: Counter;

  constructor(
    @inject(Tokens.Nats) nc: NatsConnection,
    @inject(Tokens.Options) private readonly options: RuntimeOptions,
    @inject(Tokens.Logger) private readonly log: Logger,
    @inject(Tokens.Metrics) metrics: Registry,
  ) {
    this.js = jetstream(nc);
    this.batchIdPrefix = `${options.nodeId}.${randomUUID()}`;
    this.tracesStored = new Counter({ name: "warden_trace_records_stored_total", help: "Trace records JetStream acknowledged", registers: [metrics] });
    this.tracesFailed = new Counter({
      name: "warden_trace_records_failed_total",
      help: "Trace records JetStream did not acknowledge within their deadline (their answers failed closed)",
      registers: [metrics],
    });
    this.auditsFailed = new Counter({
      name: "warden_audit_records_failed_total",
      help: "Audit records JetStream did not store (the audit stream full or unreachable): what needed them failed closed",
      registers: [metrics],
    });
  }

  /** The last audit publish of this node: the next one waits for it. */
  private auditTail: Promise<unknown> = Promise.resolve();
  /** The audit stream's limit and fill as last read from JetStream, plus what this node stored since. */
  private auditFill?: { maxBytes: number; bytes: number; readAt: number };
  private manager?: Promise<JetStreamManager>;

  /**
   * Whether a record of `size` bytes fits the audit stream with headroom to spare. nats-server 2.9.10
   * enforces a discard-new stream's byte limit late: a stream at its limit took a few records more and
   * dropped its oldest instead (measured). So the node stops short of the limit itself, reading the
   * stream's fill again at most each second: its own count only grows in between, so a full stream
   * costs no JetStream request per refused record (a flood is what fills it).
   */
  private async auditHasRoom(size: number): Promise<boolean> {
    const stored = size + auditRecordOverhead;
    let fill = this.auditFill;
    if (!fill || performance.now() - fill.readAt > auditFillRefreshMs) {
      const info = await (await (this.manager ??= this.js.jetstreamManager())).streams.info(Streams.audit.name);
      fill = this.auditFill = { maxBytes: info.config.max_bytes, bytes: info.state.bytes, readAt: performance.now() };
    }
    if (fill.maxBytes > 0 && fill.bytes + stored > fill.maxBytes - auditHeadroom(fill.maxBytes)) return false;
    fill.bytes += stored;
    return true;
  }

  async audit(entry: Omit<AuditRecord, "id" | "time" | "nodeId">): Promise<AuditRecord> {
    if (!subjectToken.test(entry.category)) throw new Error(`audit category '${entry.category}' is not a subject token`);
    const record: AuditRecord = { id: randomUUID(), time: new Date().toISOString(), nodeId: this.options.nodeId, ...entry };
    this.log[entry.level]({ audit: record }, entry.message);
    // One audit publish in flight per node: nats-server 2.9.10 checks a discard-new stream's limit racily, and concurrent
    // publishes at the limit made it drop the oldest records (measured: 30 at a time dropped 7 of 141; one at a time, none).
    const subject = Subjects.audit(entry.category, entry.level);
    const payload = JSON.stringify(record);
    const publishing = this.auditTail.then(async () => {
      if (!(await this.auditHasRoom(subject.length + Buffer.byteLength(payload))))
        throw new Error("the audit stream is within its headroom of AUDIT_MAX_BYTES: new records are refused");
      await this.js.publish(subject, payload);
    });
    this.auditTail = publishing.catch(() => undefined);
    try {
      await publishing;
    } catch (error) {
      // The audit stream refuses new records when full (it never drops old ones): whatever needed this record fails closed.
      this.auditsFailed.inc();
      this.log.error(
        { err: error, audit: record },
        "audit record not stored by JetStream (audit stream full or unreachable): the request it accounts for fails",
      );
      throw new AuditUnavailableError(`JetStream did not store the audit record ${entry.event}: ${(error as Error).message}`, { cause: error });
    }
    return record;
  }

  /**
   * A change that is in the audit log before it is made: `requested` is stored first (a log that cannot take it refuses the
   * change with nothing made, instead of it being made and then answered 503), then the change is applied, then its
   * outcome's record (`done`, none when it returns undefined) is written best effort: the change stands, named by its
   * request's record, and a failure is logged and counted by `audit`.
   */
  async auditedChange<T>(
    requested: Omit<AuditRecord, "id" | "time" | "nodeId">,
    apply: () => Promise<T>,
    done: (result: T) => Omit<AuditRecord, "id" | "time" | "nodeId"> | undefined,
  ): Promise<T> {
    await this.audit(requested);
    const result = await apply();
    const record = done(result);
    if (record) await this.audit(record).catch(() => undefined);
    return result;
  }

  /**
   * Queues a trace record; the promise settles once JetStream has stored it. Records are batched
   * per subject (NDJSON, one record a line) and a batch leaves at the end of the current turn of
   * the event loop, or at 256 records: one acknowledged publish covers every record in it (group
   * commit). Fails closed with TraceUnavailableError when no acknowledgement comes within the
   * deadline: whoever awaits it must not answer. Awaiting is optional (a rejection nobody awaits
   * is not an unhandled one), but answering before it resolves breaks rule 8.
   */
  trace(door: string, flow: string, record: Record<string, unknown>): Promise<void> {
    const subject = Subjects.trace(door, flow);
    const line = JSON.stringify(record);
    let batch = this.pendingTraces.get(subject);
    if (batch && (batch.lines.length >= maxTraceBatch || batch.bytes + line.length > maxTraceBytes)) {
      this.flushSubject(subject, batch);
      batch = undefined;
    }
    if (!batch) this.pendingTraces.set(subject, (batch = newBatch()));
    batch.lines.push(line);
    batch.bytes += line.length + 1;
    if (!this.flushScheduled) {
      this.flushScheduled = true;
      setImmediate(this.flushPending);
    }
    return batch.stored.promise;
  }

  /** Batches waiting for the end of the event loop's turn. */
  get pendingBatches(): number {
    return this.pendingTraces.size;
  }

  private readonly flushPending = (): void => {
    this.flushTraces();
  };

  /** Publishes every pending trace batch; resolves once every batch in flight has settled (the node awaits it before it stops). */
  flushTraces(): Promise<void> {
    this.flushScheduled = false;
    for (const [subject, batch] of this.pendingTraces) this.flushSubject(subject, batch);
    return Promise.allSettled([...this.inFlight]).then(() => undefined);
  }

  private flushSubject(subject: string, batch: TraceBatch): void {
    this.pendingTraces.delete(subject);
    // One id per batch, unique across nodes and restarts: a batch sent again after a lost acknowledgement is stored once.
    const msgID = `${this.batchIdPrefix}.${++this.batchSeq}`;
    const publishing = this.publishBatch(subject, batch.lines.join("\n"), msgID).then(
      () => {
        this.tracesStored.inc(batch.lines.length);
        batch.stored.resolve();
      },
      (error: unknown) => {
        this.lostTraceRecords += batch.lines.length;
        this.tracesFailed.inc(batch.lines.length);
        this.log.error(
          { err: error, subject, msgID, records: batch.lines.length, failedTotal: this.lostTraceRecords },
          "trace records not acknowledged by JetStream: their answers fail closed",
        );
        batch.stored.reject(new TraceUnavailableError(`JetStream did not store the trace records on ${subject}`, { cause: error }));
      },
    );
    this.inFlight.add(publishing);
    void publishing.finally(() => this.inFlight.delete(publishing));
  }

  /**
   * Publishes until JetStream acknowledges, within the trace deadline: each attempt waits at most
   * a second, so a server that restarts or a stream leader that moves is retried with the same id.
   */
  private async publishBatch(subject: string, payload: string, msgID: string): Promise<void> {
    const deadline = performance.now() + this.options.callTimeoutMs;
    for (;;) {
      const left = deadline - performance.now();
      try {
        await this.js.publish(subject, payload, { msgID, timeout: Math.max(1, Math.min(left, traceAttemptMs)) });
        return;
      } catch (error) {
        if (deadline - performance.now() < traceRetryPauseMs) throw error;
        await new Promise((resolve) => setTimeout(resolve, traceRetryPauseMs));
      }
    }
  }

  /** Trace records JetStream did not acknowledge within their deadline since the node started (their answers failed closed). */
  lostTraceRecords = 0;
}

interface TraceBatch {
  lines: string[];
  bytes: number;
  stored: Deferred;
}

interface Deferred {
  promise: Promise<void>;
  resolve: () => void;
  reject: (error: Error) => void;
}

function newBatch(): TraceBatch {
  let resolve!: () => void;
  let reject!: (error: Error) => void;
  const promise = new Promise<void>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  // Callers that do not await (a connection's closing summary) must not turn a failure into an unhandled rejection; those that await still see it.
  promise.catch(() => undefined);
  return { lines: [], bytes: 0, stored: { promise, resolve, reject } };
}

/** What JetStream's file store adds to each record (sequence, time, lengths, checksum), rounded up. */
const auditRecordOverhead = 64;
/** How often the audit stream's fill is read again while records flow (other nodes write to it too). */
const auditFillRefreshMs = 1000;
/** Room kept free below the audit stream's limit: 2 %, at least 4 KiB (a burst from other nodes within a refresh). */
const auditHeadroom = (maxBytes: number) => Math.max(4096, Math.ceil(maxBytes * 0.02));

/** How long one publish attempt waits for its acknowledgement before the batch is sent again. */
const traceAttemptMs = 1000;
const traceRetryPauseMs = 100;

const maxTraceBatch = 256;
/** Well under the smallest max_payload a NATS server is commonly run with (1 MiB by default). */
const maxTraceBytes = 256 * 1024;
