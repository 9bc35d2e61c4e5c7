import type { Decision } from "./types";

/** What a decision lets through a row or record: shared by every user with the same outcome, so it can serve as a key. */
export interface Verdict {
  readonly allowed: boolean;
  /** Reason code of a drop, or of the grant. */
  readonly reason: string;
  readonly categories: ReadonlySet<string>;
}

/** Hands out one Verdict object per distinct outcome (allowed, last reason, categories). */
export class VerdictInterner {
  private readonly interned = new Map<string, Verdict>();

  of(decision: Decision): Verdict {
    return this.intern(decision.allowed, decision.reasons[decision.reasons.length - 1]?.code ?? "UNKNOWN", decision.categoryIds);
  }

  /** The shared Verdict for this outcome (a verdict made elsewhere, e.g. received from another process). */
  intern(allowed: boolean, reason: string, categories: Iterable<string>): Verdict {
    const sorted = [...categories].sort();
    const key = `${allowed ? 1 : 0}|${reason}|${sorted.join(",")}`;
    let shared = this.interned.get(key);
    if (!shared) {
      shared = { allowed, reason, categories: new Set(sorted) };
      this.interned.set(key, shared);
    }
    return shared;
  }
}
