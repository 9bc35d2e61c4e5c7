import { maxRememberedVerdicts } from "./verdict-lifetime";

/** What a memo keeps of one user's verdict: what it was made under, and until when it holds. */
export interface RememberedVerdict {
  /** The configuration revision or mapping the verdict was made under: a verdict made under another is stale. */
  madeUnder: string | number;
  /** When it is decided again even if nothing changed (epoch ms; Infinity for verdicts of a fixed revision). */
  expiresAt: number;
}

/** One clock per process, read twice a second: verdicts are looked up per row, and their lifetime is minutes. */
const clock = { now: Date.now(), timer: undefined as NodeJS.Timeout | undefined };

/**
 * Verdicts by user, each used while it holds: made under the current configuration and not past
 * its lifetime (a stale one is dropped when found). Bounded: past `maxEntries` the memo starts
 * over, and the users are decided (and traced) again. One rule for every door that remembers
 * verdicts: the node's export decider, the proxy workers' copies, redaction jobs.
 */
export class VerdictMemo<Entry extends RememberedVerdict> {
  private readonly entries = new Map<string, Entry>();

  constructor(private readonly maxEntries = maxRememberedVerdicts) {
    // Started with the first memo, so a process that remembers no verdicts runs no timer; a get per row only reads it.
    if (clock.timer === undefined) {
      clock.now = Date.now();
      clock.timer = setInterval(() => (clock.now = Date.now()), 500).unref();
    }
  }

  /** The user's entry while it holds under `current`; undefined (and forgotten) once stale. */
  get(userId: string, current: string | number): Entry | undefined {
    const entry = this.entries.get(userId);
    if (entry === undefined) return undefined;
    if (entry.madeUnder !== current || clock.now >= entry.expiresAt) {
      this.entries.delete(userId);
      return undefined;
    }
    return entry;
  }

  /** The user's entry as stored, stale or not (for a decision still on its way to the trace). */
  peek(userId: string): Entry | undefined {
    return this.entries.get(userId);
  }

  has(userId: string): boolean {
    return this.entries.has(userId);
  }

  set(userId: string, entry: Entry): void {
    if (this.entries.size >= this.maxEntries && !this.entries.has(userId)) this.entries.clear();
    this.entries.set(userId, entry);
  }

  /** Drops the user's entry; with `entry`, only if it is still that one (a newer decision stays). */
  forget(userId: string, entry?: Entry): void {
    if (entry === undefined || this.entries.get(userId) === entry) this.entries.delete(userId);
  }

  /** Every verdict goes (changes may have been missed). */
  forgetAll(): void {
    this.entries.clear();
  }

  get size(): number {
    return this.entries.size;
  }
}
