import type { ExportAudit } from "./door";

/** Refusals are audited once per reason in this window, with their count. */
const windowMs = 10_000;

interface Pending {
  message: string;
  details: Record<string, unknown>;
  count: number;
}

/**
 * Audit of connections a door refuses for want of a place: the first refusal of a reason is
 * written at once, those that follow within ten seconds as one record with their count when
 * the window ends. A flood of refused connections cannot push the audit history out, and no
 * refusal goes uncounted.
 */
export class RefusalAudit {
  private readonly pending = new Map<string, Pending | null>();

  constructor(private readonly audit: ExportAudit) {}

  refused(reason: string, message: string, details: Record<string, unknown>): void {
    if (this.pending.has(reason)) {
      const waiting = this.pending.get(reason);
      if (waiting) waiting.count++;
      else this.pending.set(reason, { message, details, count: 1 });
      return;
    }
    this.audit("warn", "connection.refused", message, { ...details, reason, count: 1 });
    this.pending.set(reason, null);
    setTimeout(() => this.flush(reason), windowMs).unref();
  }

  private flush(reason: string): void {
    const waiting = this.pending.get(reason);
    this.pending.delete(reason);
    if (!waiting) return;
    this.audit("warn", "connection.refused", `${waiting.message} (${waiting.count} refusals in ${windowMs / 1000} s)`, { ...waiting.details, reason, count: waiting.count });
    // The next refusals of this reason open a new window.
    this.pending.set(reason, null);
    setTimeout(() => this.flush(reason), windowMs).unref();
  }
}
