import type { MsgHdrs } from "@nats-io/transport-node";
import type { Authenticator } from "../../auth/authenticator";
import { sha256Hex } from "../../auth/cloud-signature";
import { offeredCredential } from "../../auth/http-credentials";
import { permits } from "../../auth/authorization";
import type { Component, OverridesByVerifier } from "../../auth/types";
import type { ExportAudit } from "../../exports/door";
import type { PipelineRecordError } from "./types";

/** A verified credential is taken again without asking its verifier for this long (as the gateway does per connection). */
const reuseMs = 60_000;
/** A refused credential is refused again without asking its verifier for this long (no password guessing at the verifier's pace). */
const refusalMs = 5_000;
/** Credentials remembered at once; past this the memory starts over. */
const maxRemembered = 10_000;

export type NatsAccess = { ok: true; subject: string | null } | { ok: false; code: PipelineRecordError; reason: string };

/**
 * Authentication of NATS messages to a pipeline export whose component enforces it (spec 5.1):
 * each message carries an `Authorization` header (Basic or Bearer, as over HTTP), verified by
 * the component's verifiers. A verified credential is reused for a minute; audit records are
 * written once per credential and outcome per minute, so a stream cannot flood the audit log.
 * NATS's own subject permissions decide who may publish at all.
 */
export class NatsCredentialCheck {
  private readonly verified = new Map<string, { subject: string; until: number }>();
  private readonly refused = new Map<string, { access: NatsAccess; until: number }>();
  private readonly audited = new Map<string, number>();

  constructor(
    private readonly authenticator: Authenticator,
    private readonly component: Component,
    private readonly exportId: string,
    private readonly audit: ExportAudit,
    private readonly overrides?: OverridesByVerifier,
  ) {}

  get enforced(): boolean {
    return this.authenticator.isEnforced(this.component);
  }

  /** Use without authentication (not enforced), audited at debug once a minute; no promise on the hot path. */
  open(door: "request" | "stream"): NatsAccess {
    this.auditOnce("open", () =>
      this.audit("debug", "connection.unauthenticated", `pipeline export ${this.exportId} used over NATS without authentication (not enforced)`, {
        exportId: this.exportId,
        component: this.component.name,
        door,
      }),
    );
    return { ok: true, subject: null };
  }

  async check(headers: MsgHdrs | undefined, door: "request" | "stream"): Promise<NatsAccess> {
    const base = { exportId: this.exportId, component: this.component.name, door };
    if (!this.enforced) return this.open(door);
    const authorization = headers?.get("Authorization") || headers?.get("authorization") || undefined;
    const offered = offeredCredential(authorization, "");
    if (offered.kind === "none") return this.deny("none", "ERR_AUTH_REQUIRED", "no Authorization header", base);
    if (offered.kind === "signature")
      return this.deny("signature", "ERR_AUTH_UNSUPPORTED", "cloud signatures sign HTTP requests: use the export's HTTP port", base);
    if (offered.kind !== "credential") {
      return offered.kind === "malformed"
        ? this.deny(`malformed:${offered.scheme}`, "ERR_AUTH_INVALID", `malformed ${offered.scheme} credentials`, base)
        : this.deny(`unsupported:${offered.scheme}`, "ERR_AUTH_UNSUPPORTED", `unknown authentication scheme '${offered.scheme}'`, base);
    }
    const credential = offered.credential;
    const digest = sha256Hex(`${this.exportId}\0${authorization}`);
    const known = this.verified.get(digest);
    if (known && known.until > Date.now()) return { ok: true, subject: known.subject };
    const refusal = this.refused.get(digest);
    if (refusal && refusal.until > Date.now()) return refusal.access;
    const outcome = await this.authenticator.verify(this.component, credential, this.overrides);
    if (outcome.kind === "verified") {
      // As on the export's HTTP port: sending records needs pipeline:read (docs/authorization.md).
      const rights = this.authenticator.authorizer.rightsOf({ identity: outcome.identity, verifier: outcome.by.verifier });
      if (!permits(rights, "pipeline", "read")) {
        const access: NatsAccess = { ok: false, code: "ERR_AUTH_FORBIDDEN", reason: `'${outcome.identity.subject}' does not hold pipeline:read` };
        if (this.refused.size >= maxRemembered) this.refused.clear();
        this.refused.set(digest, { access, until: Date.now() + reuseMs });
        this.auditOnce(`forbidden:${digest}`, () =>
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
      if (this.verified.size >= maxRemembered) this.verified.clear();
      this.verified.set(digest, { subject: outcome.identity.subject, until: Date.now() + reuseMs });
      this.auditOnce(`ok:${digest}`, () =>
        this.audit("info", "connection.authenticated", `'${outcome.identity.subject}' authenticated for pipeline export ${this.exportId} over NATS`, {
          ...base,
          subject: outcome.identity.subject,
          assertions: outcome.identity.assertions,
          verifier: outcome.by,
        }),
      );
      return { ok: true, subject: outcome.identity.subject };
    }
    const codes: Record<typeof outcome.kind, PipelineRecordError> = {
      unavailable: "ERR_AUTH_UNAVAILABLE",
      unsupported: "ERR_AUTH_UNSUPPORTED",
      throttled: "ERR_AUTH_THROTTLED",
      rejected: "ERR_AUTH_INVALID",
    };
    const code = codes[outcome.kind];
    if (outcome.kind === "rejected") {
      if (this.refused.size >= maxRemembered) this.refused.clear();
      this.refused.set(digest, { access: { ok: false, code, reason: outcome.reason }, until: Date.now() + refusalMs });
    }
    return this.deny(`${outcome.kind}:${digest}`, code, outcome.reason, { ...base, ...("by" in outcome ? { verifier: outcome.by } : {}) });
  }

  private deny(key: string, code: PipelineRecordError, reason: string, details: Record<string, unknown>): NatsAccess {
    const event = code === "ERR_AUTH_UNSUPPORTED" ? "connection.unsupported" : "connection.denied";
    this.auditOnce(`deny:${key}`, () =>
      this.audit("warn", event, `pipeline export ${this.exportId} refused a NATS message: ${reason}`, { ...details, outcome: code, reason }),
    );
    return { ok: false, code, reason };
  }

  private auditOnce(key: string, write: () => void): void {
    const now = Date.now();
    if ((this.audited.get(key) ?? 0) > now) return;
    if (this.audited.size >= maxRemembered) this.audited.clear();
    this.audited.set(key, now + reuseMs);
    write();
  }
}
