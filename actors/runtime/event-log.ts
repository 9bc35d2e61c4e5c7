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
  private readonly pendingTraces = new Map<string, string[]>();
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
    let lines = this.pendingTraces.get(subject);
    if (!lines) this.pendingTraces.set(subject, (lines = []));
    lines.push(JSON.stringify(record));
    if (lines.length >= maxTraceBatch) this.flushSubject(subject, lines);
    else if (!this.flushScheduled) {
      this.flushScheduled = true;
      setImmediate(() => this.flushTraces());
    }
  }

  /** Publishes every pending trace batch (also called before the node stops). */
  flushTraces(): void {
    this.flushScheduled = false;
    for (const [subject, lines] of this.pendingTraces) this.flushSubject(subject, lines);
  }

  private flushSubject(subject: string, lines: string[]): void {
    this.pendingTraces.delete(subject);
    if (!this.nc.isClosed()) this.nc.publish(subject, lines.join("\n"));
  }
}

const maxTraceBatch = 256;
