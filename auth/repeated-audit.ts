/** Repeats of one kind are written once per this window, with their count. */
const windowMs = 60_000;
/** Kinds followed at once; past this the oldest windows are written early. */
const maxKinds = 10_000;
/**
 * Kinds one source (`source` of record) may open in a window: a kind holds values a client chose
 * (a user name, a reason naming its headers), so past this its further kinds are counted together,
 * and one source cannot write a record per request by changing them.
 */
export const maxKindsPerSource = 20;
/**
 * Kinds all sources together may open in a window: a client holding many addresses (an IPv6 /48
 * has 65,536 /64s) could otherwise still write 20 records per address a minute. Past this, new
 * kinds of every source are counted together until the window ends.
 */
export const maxKindsPerWindow = 1000;

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
  /** Per source: the kinds it has open; and the source of each kind that has one. */
  private readonly openBySource = new Map<string, number>();
  private readonly sourceOf = new Map<string, string>();
  /** Kinds opened with a source in the current window, and when it began. */
  private windowOpened = 0;
  private windowStart = 0;

  constructor(private readonly write: RepeatedAuditWrite) {}

  /**
   * One event of `kind`. With `source` (where it came from: a client address), a source that has
   * `maxKindsPerSource` kinds open has its new kinds counted as one, "other refusals" of that source.
   */
  record(kind: string, message: string, details: Record<string, unknown>, source?: string): void {
    if (source !== undefined && !this.pending.has(kind)) {
      const now = Date.now();
      if (now - this.windowStart >= windowMs) {
        this.windowStart = now;
        this.windowOpened = 0;
      }
      if (this.windowOpened >= maxKindsPerWindow) {
        kind = "(more kinds, every source)";
        message = `${message} (and others, past ${maxKindsPerWindow} kinds from all sources in a minute)`;
        source = undefined;
      } else if ((this.openBySource.get(source) ?? 0) >= maxKindsPerSource) {
        kind = `${source}\0(more kinds)`;
        message = `${message} (and others from the same source, past ${maxKindsPerSource} kinds in a minute)`;
        source = undefined;
      } else this.windowOpened++;
    }
    if (this.pending.has(kind)) {
      const waiting = this.pending.get(kind);
      if (waiting) waiting.count++;
      else this.pending.set(kind, { message, details, count: 1 });
      return;
    }
    this.write(message, details, 1);
    if (source !== undefined) {
      this.sourceOf.set(kind, source);
      this.openBySource.set(source, (this.openBySource.get(source) ?? 0) + 1);
    }
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
    if (!waiting) return this.closed(kind);
    this.write(`${waiting.message} (${waiting.count} times in the last minute)`, waiting.details, waiting.count);
    // Repeats that go on keep being counted a minute at a time.
    if (reopen) this.open(kind);
    else this.closed(kind);
  }

  /** A kind's window ended with no repeats to follow: its source may open another. */
  private closed(kind: string): void {
    const source = this.sourceOf.get(kind);
    if (source === undefined) return;
    this.sourceOf.delete(kind);
    const open = (this.openBySource.get(source) ?? 1) - 1;
    if (open > 0) this.openBySource.set(source, open);
    else this.openBySource.delete(source);
  }
}

/**
 * The source a client address counts under: the address itself for IPv4 (and IPv4-mapped IPv6),
 * its /64 network for IPv6, where one host commonly holds a whole /64 and could change its address
 * per request.
 */
export function auditSource(address: string): string {
  if (!address.includes(":") || /^::ffff:\d+\.\d+\.\d+\.\d+$/i.test(address)) return address;
  const [head, tail = ""] = address.split("%")[0]!.split("::");
  const front = head ? head.split(":") : [];
  const back = tail ? tail.split(":") : [];
  const groups = address.includes("::") ? [...front, ...Array(Math.max(0, 8 - front.length - back.length)).fill("0"), ...back] : front;
  return `${groups
    .slice(0, 4)
    .map((group) => Number.parseInt(group || "0", 16).toString(16))
    .join(":")}::/64`;
}
