import { randomUUID } from "node:crypto";
import { inject, injectable } from "tsyringe";
import { jetstream, type JetStreamClient } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import type { Logger } from "pino";
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
 * systems can subscribe live or replay. Audit records are published with a JetStream
 * acknowledgement: `audit()` resolves only once the record is stored.
 */
@injectable()
export class EventLog {
  private readonly js: JetStreamClient;
  private readonly pendingTraces = new Map<string, TraceBatch>();
  private flushScheduled = false;

  constructor(
    @inject(Tokens.Nats) private readonly nc: NatsConnection,
    @inject(Tokens.Options) private readonly options: RuntimeOptions,
    @inject(Tokens.Logger) private readonly log: Logger,
  ) {
    this.js = jetstream(nc);
  }

  async audit(entry: Omit<AuditRecord, "id" | "time" | "nodeId">): Promise<AuditRecord> {
    if (!subjectToken.test(entry.category)) throw new Error(`audit category '${entry.category}' is not a subject token`);
    const record: AuditRecord = { id: randomUUID(), time: new Date().toISOString(), nodeId: this.options.nodeId, ...entry };
    this.log[entry.level]({ audit: record }, entry.message);
    await this.js.publish(Subjects.audit(entry.category, entry.level), JSON.stringify(record));
    return record;
  }

  /**
   * Trace records are high-volume: published without waiting (the stream captures them), and
   * batched per subject: every message carries one or more records, one JSON object per line
   * (NDJSON). A batch leaves at the end of the current turn of the event loop, or at 256 records.
   */
  trace(door: string, flow: string, record: Record<string, unknown>): void {
    const subject = Subjects.trace(door, flow);
    const line = JSON.stringify(record);
    let batch = this.pendingTraces.get(subject);
    if (batch && (batch.lines.length >= maxTraceBatch || batch.bytes + line.length > maxTraceBytes)) {
      this.flushSubject(subject, batch);
      batch = undefined;
    }
    if (!batch) this.pendingTraces.set(subject, (batch = { lines: [], bytes: 0 }));
    batch.lines.push(line);
    batch.bytes += line.length + 1;
    if (!this.flushScheduled) {
      this.flushScheduled = true;
      setImmediate(() => this.flushTraces());
    }
  }

  /** Publishes every pending trace batch (also called before the node stops). */
  flushTraces(): void {
    this.flushScheduled = false;
    for (const [subject, batch] of this.pendingTraces) this.flushSubject(subject, batch);
  }

  /** Never throws: a batch that cannot be published is logged and counted, and the node goes on. */
  private flushSubject(subject: string, batch: TraceBatch): void {
    this.pendingTraces.delete(subject);
    try {
      this.nc.publish(subject, batch.lines.join("\n"));
    } catch (error) {
      this.lostTraceRecords += batch.lines.length;
      this.log.error({ err: error, subject, records: batch.lines.length, lostTotal: this.lostTraceRecords }, "trace records could not be published");
    }
  }

  /** Trace records that could not be published since the node started. */
  lostTraceRecords = 0;
}

interface TraceBatch {
  lines: string[];
  bytes: number;
}

const maxTraceBatch = 256;
/** Well under the smallest max_payload a NATS server is commonly run with (1 MiB by default). */
const maxTraceBytes = 256 * 1024;
