import { createHash } from "node:crypto";

/** How many failed logins a client address and a user name may have before they wait. */
export interface FailureBudgetLimits {
  /** Failures from one client address before it must wait. */
  perAddress: number;
  /** Failures for one user name before it must wait. */
  perUser: number;
  /** The first wait once a budget is spent; it doubles with each further failure. */
  baseBackoffMs: number;
  /** The longest wait. */
  maxBackoffMs: number;
  /** Failures are forgotten after this long without one. */
  forgetAfterMs: number;
  /** A rejected token is refused again without asking its verifier for this long. */
  rejectedTokenMs: number;
}

export const defaultFailureBudgetLimits: FailureBudgetLimits = {
  perAddress: 20,
  perUser: 10,
  baseBackoffMs: 1_000,
  maxBackoffMs: 300_000,
  forgetAfterMs: 900_000,
  rejectedTokenMs: 30_000,
};

/** Who a credential check is for: the client's address (when the door knows it) and user name (passwords). */
export interface FailureKeys {
  address?: string;
  user?: string;
}

interface Tally {
  failures: number;
  last: number;
  blockedUntil: number;
}

/** Entries kept per map; past this the oldest are dropped (a flood of fresh addresses cannot grow memory without end). */
const maxEntries = 100_000;
/** A credential verified by its verifier passes a spent budget for this long (its holder is not locked out by someone guessing). */
const knownGoodMs = 900_000;

const digest = (text: string) => createHash("sha256").update(text).digest("base64url");

/**
 * Slows credential guessing (issue 26 item 4): each failed check counts against the client's
 * address and the user name; once either budget is spent the next checks wait, the wait doubling
 * with each further failure up to a maximum, and are answered "try again later" without asking
 * the verifier (no LDAP bind, no introspection call). A credential its verifier accepted in the
 * last 15 minutes still passes, so a guesser cannot lock its holder out. Rejected tokens are
 * remembered for a short while and refused again at once.
 */
export class FailureBudget {
  private readonly byAddress = new Map<string, Tally>();
  private readonly byUser = new Map<string, Tally>();
  private readonly knownGood = new Map<string, number>();
  private readonly rejectedTokens = new Map<string, { answer: unknown; until: number }>();

  constructor(readonly limits: FailureBudgetLimits = defaultFailureBudgetLimits) {}

  /** Seconds to wait when a budget of these keys is spent and the credential is not known good; undefined: go on. */
  retryAfterSeconds(keys: FailureKeys, credentialDigest: string): number | undefined {
    const now = Date.now();
    if ((this.knownGood.get(credentialDigest) ?? 0) > now) return undefined;
    const waits = [this.waitOf(this.byAddress, keys.address, now), this.waitOf(this.byUser, keys.user, now)];
    const wait = Math.max(...waits);
    return wait > 0 ? Math.ceil(wait / 1000) : undefined;
  }

  failed(keys: FailureKeys): void {
    const now = Date.now();
    this.count(this.byAddress, keys.address, this.limits.perAddress, now);
    this.count(this.byUser, keys.user, this.limits.perUser, now);
  }

  succeeded(keys: FailureKeys, credentialDigest: string): void {
    // The user's own failures end with a success; the address's do not (a guesser may hold one good account).
    if (keys.user !== undefined) this.byUser.delete(keys.user);
    remember(this.knownGood, credentialDigest, Date.now() + knownGoodMs);
  }

  /** The answer a token got when it was rejected, while it is remembered. */
  rejectedToken<T>(tokenDigest: string): T | undefined {
    const entry = this.rejectedTokens.get(tokenDigest);
    return entry && entry.until > Date.now() ? (entry.answer as T) : undefined;
  }

  tokenRejected(tokenDigest: string, answer: unknown): void {
    remember(this.rejectedTokens, tokenDigest, { answer, until: Date.now() + this.limits.rejectedTokenMs });
  }

  /** A digest of a credential's secret parts, as the maps above keep it (never the secret itself). */
  static digest(...parts: string[]): string {
    return digest(parts.join("\0"));
  }

  private waitOf(tallies: Map<string, Tally>, key: string | undefined, now: number): number {
    const tally = key === undefined ? undefined : tallies.get(key);
    return tally ? Math.max(0, tally.blockedUntil - now) : 0;
  }

  private count(tallies: Map<string, Tally>, key: string | undefined, budget: number, now: number): void {
    if (key === undefined) return;
    let tally = tallies.get(key);
    if (!tally || now - tally.last > this.limits.forgetAfterMs) tally = { failures: 0, last: now, blockedUntil: 0 };
    tally.failures++;
    tally.last = now;
    if (tally.failures >= budget) {
      const wait = Math.min(this.limits.maxBackoffMs, this.limits.baseBackoffMs * 2 ** Math.min(30, tally.failures - budget));
      tally.blockedUntil = now + wait;
    }
    remember(tallies, key, tally);
  }
}

/** Sets a map entry, dropping the oldest entries past the cap (Maps keep insertion order). */
function remember<V>(map: Map<string, V>, key: string, value: V): void {
  map.delete(key);
  map.set(key, value);
  if (map.size > maxEntries) map.delete(map.keys().next().value!);
}
