import { randomUUID } from "node:crypto";
import { inject, injectable } from "tsyringe";
import { jetstream, type JetStreamClient } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import type { Logger } from "pino";
import { Counter, type Registry } from "prom-client";
import { AuditUnavailableError, TraceUnavailableError } from "./errors";
import { Subjects } from "./addressing";
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

  async audit(entry: Omit<AuditRecord, "id" | "time" | "nodeId">): Promise<AuditRecord> {
    if (!subjectToken.test(entry.category)) throw new Error(`audit category '${entry.category}' is not a subject token`);
    const record: AuditRecord = { id: randomUUID(), time: new Date().toISOString(), nodeId: this.options.nodeId, ...entry };
    this.log[entry.level]({ audit: record }, entry.message);
    try {
      await this.js.publish(Subjects.audit(entry.category, entry.level), JSON.stringify(record));
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

/** How long one publish attempt waits for its acknowledgement before the batch is sent again. */
const traceAttemptMs = 1000;
const traceRetryPauseMs = 100;

const maxTraceBatch = 256;
/** Well under the smallest max_payload a NATS server is commonly run with (1 MiB by default). */
const maxTraceBytes = 256 * 1024;
