import type { MsgHdrs } from "@nats-io/transport-node";
import type { Authenticator } from "../../auth/authenticator";
import { AuditOnce, outcomeAudit, type Refusal, RememberedOutcomes, refusalCode } from "../../auth/credential-check";
import { sha256Hex } from "../../auth/cloud-signature";
import { offeredCredential } from "../../auth/http-credentials";
import { permits } from "../../auth/authorization";
import type { Component, OverridesByVerifier } from "../../auth/types";
import type { ExportAudit, StoredAudit } from "../../exports/door";
import { RepeatedAudit } from "../../auth/repeated-audit";
import type { PipelineRecordError } from "./types";

/** A verified credential is taken again without asking its verifier for this long (as the gateway does per connection); audit records repeat at most this often. */
const reuseMs = 60_000;
/** A refused credential is refused again without asking its verifier for this long (no password guessing at the verifier's pace). */
const refusalMs = 5_000;

export type NatsAccess = { ok: true; subject: string | null } | { ok: false; code: PipelineRecordError; reason: string };

/**
 * Authentication of NATS messages to a pipeline export whose component enforces it (spec 5.1):
 * each message carries an `Authorization` header (Basic or Bearer, as over HTTP), verified by
 * the component's verifiers. A verified credential is reused for a minute; audit records are
 * written once per credential and outcome per minute, so a stream cannot flood the audit log.
 * NATS's own subject permissions decide who may publish at all.
 */
const openAccess: NatsAccess = Object.freeze({ ok: true, subject: null }) as NatsAccess;

export class NatsCredentialCheck {
  private readonly verified = new RememberedOutcomes<string>(reuseMs);
  private readonly refused = new RememberedOutcomes<NatsAccess>(refusalMs);
  private readonly audited = new AuditOnce(reuseMs);
  /** The minute's `connection.unauthenticated` record while it is written. */
  private opening?: Promise<NatsAccess>;
  /** Refusals: the offered credential is the sender's to vary, so past a bound a minute's new kinds are counted as one. */
  private readonly refusals = new RepeatedAudit((message, { event, ...details }, count) => this.audit("warn", String(event), message, { ...details, count }));

  constructor(
    private readonly authenticator: Authenticator,
    private readonly component: Component,
    private readonly exportId: string,
    private readonly audit: ExportAudit,
    private readonly storedAudit: StoredAudit,
    private readonly overrides?: OverridesByVerifier,
  ) {}

  get enforced(): boolean {
    return this.authenticator.isEnforced(this.component);
  }

  /**
   * Use without authentication (not enforced), audited at debug once a minute: taken once that
   * record is stored, as the HTTP doors take such use (a full audit stream: ERR_AUDIT_UNAVAILABLE,
   * the stream retries); no promise on the hot path once it is.
   */
  open(door: "request" | "stream"): NatsAccess | Promise<NatsAccess> {
    if (this.audited.has("open")) return openAccess;
    // One record for the messages that arrive while it is written.
    this.opening ??= this.storedAudit(
      "debug",
      "connection.unauthenticated",
      `pipeline export ${this.exportId} used over NATS without authentication (not enforced)`,
      { exportId: this.exportId, component: this.component.name, door },
    ).then(
      (stored): NatsAccess => {
        this.opening = undefined;
        if (!stored) return { ok: false, code: "ERR_AUDIT_UNAVAILABLE", reason: "the audit log did not store this use; try again" };
        this.audited.once("open", () => undefined);
        return openAccess;
      },
      (): NatsAccess => {
        this.opening = undefined;
        return { ok: false, code: "ERR_AUDIT_UNAVAILABLE", reason: "the audit log did not store this use; try again" };
      },
    );
    return this.opening;
  }

  async check(headers: MsgHdrs | undefined, door: "request" | "stream"): Promise<NatsAccess> {
    const base = { exportId: this.exportId, component: this.component.name, door };
    if (!this.enforced) return this.open(door);
    const authorization = headers?.get("Authorization") || headers?.get("authorization") || undefined;
    const offered = offeredCredential(authorization, "");
    if (offered.kind === "none") return this.deny("none", { kind: "missing", reason: "no Authorization header" }, base);
    if (offered.kind === "signature")
      return this.deny(
        "signature",
        { kind: "unsupported", credentialType: "cloudSigningCredentials", reason: "cloud signatures sign HTTP requests: use the export's HTTP port" },
        base,
      );
    if (offered.kind !== "credential") {
      return offered.kind === "malformed"
        ? this.deny(`malformed:${offered.scheme}`, { kind: "malformed", reason: `malformed ${offered.scheme} credentials` }, base)
        : this.deny(
            `unsupported:${offered.scheme}`,
            { kind: "unsupported", credentialType: offered.scheme, reason: `unknown authentication scheme '${offered.scheme}'` },
            base,
          );
    }
    const digest = sha256Hex(`${this.exportId}\0${authorization}`);
    const known = this.verified.get(digest);
    if (known !== undefined) return { ok: true, subject: known };
    const refusal = this.refused.get(digest);
    if (refusal) return refusal;
    const outcome = await this.authenticator.verify(this.component, offered.credential, this.overrides);
    if (outcome.kind === "verified") {
      // As on the export's HTTP port: sending records needs pipeline:read (docs/authorization.md).
      const rights = this.authenticator.authorizer.rightsOf({ identity: outcome.identity, verifier: outcome.by.verifier, profile: outcome.by.profile });
      if (!permits(rights, "pipeline", "read")) {
        const access: NatsAccess = { ok: false, code: "ERR_AUTH_FORBIDDEN", reason: `'${outcome.identity.subject}' does not hold pipeline:read` };
        this.refused.remember(digest, access);
        this.audited.once(`forbidden:${digest}`, () =>
          this.audit("warn", "connection.forbidden", `pipeline export ${this.exportId} refused a NATS message: ${access.reason}`, {
            ...base,
            subject: outcome.identity.subject,
            action: "read",
            rule: null,
            matchedRules: rights.rules,
          }),
        );
        return access;
      }
      // Taken only once the login is in the audit log, as on every other door (a full audit stream refuses records): fail closed.
      if (!this.audited.has(`ok:${digest}`)) {
        const { level, event, details } = outcomeAudit(outcome);
        const message = `'${outcome.identity.subject}' authenticated for pipeline export ${this.exportId} over NATS`;
        if (!(await this.storedAudit(level, event, message, { ...base, ...details })))
          return { ok: false, code: "ERR_AUDIT_UNAVAILABLE", reason: "the audit log did not store this login; try again" };
        this.audited.once(`ok:${digest}`, () => undefined);
      }
      this.verified.remember(digest, outcome.identity.subject);
      return { ok: true, subject: outcome.identity.subject };
    }
    const access = this.deny(`${outcome.kind}:${digest}`, outcome, base);
    if (outcome.kind === "rejected") this.refused.remember(digest, access);
    return access;
  }

  /** A refusal, audited once per key and minute with its count (maxKindsPerSource keys a minute); its audit names the error code the record gets. */
  private deny(key: string, refusal: Refusal, base: Record<string, unknown>): NatsAccess {
    const code = refusalCode(refusal);
    const { event, details } = outcomeAudit(refusal);
    this.refusals.record(
      key,
      `pipeline export ${this.exportId} refused a NATS message: ${refusal.reason}`,
      { ...base, ...details, event, outcome: code },
      "nats",
    );
    return { ok: false, code, reason: refusal.reason };
  }
}
