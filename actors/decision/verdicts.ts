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
    const reason = decision.reasons[decision.reasons.length - 1]?.code ?? "UNKNOWN";
    const key = `${decision.allowed ? 1 : 0}|${reason}|${[...decision.categoryIds].sort().join(",")}`;
    let shared = this.interned.get(key);
    if (!shared) {
      shared = { allowed: decision.allowed, reason, categories: new Set(decision.categoryIds) };
      this.interned.set(key, shared);
    }
    return shared;
  }
}
