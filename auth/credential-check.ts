import type { AccessOutcome } from "./authenticator";

/**
 * The credential check every door shares (the HTTP doors' hook, the pipeline's NATS messages, the
 * wire doors' direct verification): what a refusal answers, how an outcome is audited, and how
 * often. Each door only adds how its protocol carries credentials and errors.
 */

/** A check that did not admit: the verifier's own refusal, or credentials missing or unreadable before any verifier saw them. */
export type Refusal = Exclude<AccessOutcome, { kind: "verified" }> | { kind: "missing" | "malformed"; reason: string };

export type AuthErrorCode = "ERR_AUTH_REQUIRED" | "ERR_AUTH_INVALID" | "ERR_AUTH_UNSUPPORTED" | "ERR_AUTH_UNAVAILABLE" | "ERR_AUTH_THROTTLED";

const codes: Record<Refusal["kind"], AuthErrorCode> = {
  missing: "ERR_AUTH_REQUIRED",
  malformed: "ERR_AUTH_INVALID",
  rejected: "ERR_AUTH_INVALID",
  unsupported: "ERR_AUTH_UNSUPPORTED",
  unavailable: "ERR_AUTH_UNAVAILABLE",
  throttled: "ERR_AUTH_THROTTLED",
};

/** The error a refusal answers, in every protocol (HTTP status from http/errors.ts, pipeline record errors, wire error packets). */
export function refusalCode(refusal: Refusal): AuthErrorCode {
  return codes[refusal.kind];
}

/** A refusal worth trying again later (the verifier did not answer, or the login was throttled), rather than a wrong credential. */
export function mayRetry(refusal: Refusal): boolean {
  return refusal.kind === "unavailable" || refusal.kind === "throttled";
}

/** The audit record of an outcome, without the door's own fields (spec 6 items 5-7). */
export interface OutcomeAudit {
  level: "info" | "warn";
  event: "connection.authenticated" | "connection.denied" | "connection.unsupported";
  details: Record<string, unknown>;
}

/** Success at info with who and by which verifier; a refusal at warn with why ("unsupported" is an event of its own). */
export function outcomeAudit(outcome: AccessOutcome | Refusal): OutcomeAudit {
  if (outcome.kind === "verified")
    return {
      level: "info",
      event: "connection.authenticated",
      details: { subject: outcome.identity.subject, assertions: outcome.identity.assertions, verifier: outcome.by },
    };
  return {
    level: "warn",
    event: outcome.kind === "unsupported" ? "connection.unsupported" : "connection.denied",
    details: { outcome: outcome.kind, reason: outcome.reason, ...("by" in outcome ? { verifier: outcome.by } : {}) },
  };
}

/** Keys remembered at once by the memories below; past this they start over (a flood of distinct keys cannot grow them). */
const maxRemembered = 10_000;

/**
 * Audit records written once per key (a credential and outcome, a connection's first use) and
 * window, so that a connection or a stream cannot flood the audit log. No window: once for the
 * memory's life (one HTTP connection).
 */
export class AuditOnce {
  private readonly written = new Map<string, number>();

  constructor(private readonly windowMs = Number.POSITIVE_INFINITY) {}

  /** Whether a record for the key was written in the window (then `write` is not called). */
  has(key: string): boolean {
    return (this.written.get(key) ?? 0) > Date.now();
  }

  /** Calls `write` unless the key was written in the window; returns what it returns. A write that fails is forgotten: the next use tries again rather than passing unaudited. */
  once<T>(key: string, write: () => T): T | undefined {
    if (this.has(key)) return undefined;
    if (this.written.size >= maxRemembered) this.written.clear();
    this.written.set(key, Date.now() + this.windowMs);
    try {
      const result = write();
      if (result instanceof Promise) result.catch(() => this.written.delete(key));
      return result;
    } catch (error) {
      this.written.delete(key);
      throw error;
    }
  }
}

/**
 * What a verifier answered for a credential (by digest, never the secret), taken again without
 * asking it for a while: saves an LDAP bind per request, and refuses a guessed password again
 * at our pace rather than the verifier's.
 */
export class RememberedOutcomes<T> {
  private readonly outcomes = new Map<string, { value: T; until: number }>();

  constructor(private readonly forMs: number) {}

  get(digest: string): T | undefined {
    const known = this.outcomes.get(digest);
    return known && known.until > Date.now() ? known.value : undefined;
  }

  remember(digest: string, value: T): void {
    if (this.outcomes.size >= maxRemembered) this.outcomes.clear();
    this.outcomes.set(digest, { value, until: Date.now() + this.forMs });
  }
}
