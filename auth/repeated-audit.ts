/** Repeats of one kind are written once per this window, with their count. */
const windowMs = 60_000;
/** Kinds followed at once; past this the oldest windows are written early. */
const maxKinds = 10_000;

interface Pending {
  message: string;
  details: Record<string, unknown>;
  count: number;
}

/** Writes one audit record: the message and details of the repeats, and how many they were. */
export type RepeatedAuditWrite = (message: string, details: Record<string, unknown>, count: number) => void;

/**
 * Audit of events that repeat (refused connections, denied logins): the first of a kind (a
 * source, a subject, a reason...) is written at once; the repeats of the next minute become one
 * record with their `count` when the minute ends. A flood cannot push the audit history out, and
 * no event goes uncounted.
 */
export class RepeatedAudit {
  private readonly pending = new Map<string, Pending | null>();

  constructor(private readonly write: RepeatedAuditWrite) {}

  record(kind: string, message: string, details: Record<string, unknown>): void {
    if (this.pending.has(kind)) {
      const waiting = this.pending.get(kind);
      if (waiting) waiting.count++;
      else this.pending.set(kind, { message, details, count: 1 });
      return;
    }
    this.write(message, details, 1);
    this.open(kind);
  }

  private open(kind: string): void {
    this.pending.set(kind, null);
    if (this.pending.size > maxKinds) this.flush(this.pending.keys().next().value!, false);
    setTimeout(() => this.flush(kind, true), windowMs).unref();
  }

  private flush(kind: string, reopen: boolean): void {
    if (!this.pending.has(kind)) return;
    const waiting = this.pending.get(kind);
    this.pending.delete(kind);
    if (!waiting) return;
    this.write(`${waiting.message} (${waiting.count} times in the last minute)`, waiting.details, waiting.count);
    // Repeats that go on keep being counted a minute at a time.
    if (reopen) this.open(kind);
  }
}
