import type { Authenticator } from "../auth/authenticator";
import { component } from "../auth/components";
import { mayRetry, outcomeAudit } from "../auth/credential-check";
import type { Credential, OverridesByVerifier } from "../auth/types";
import { permits } from "../auth/authorization";
import { jwtShape } from "../auth/verifiers/oauth-verifier";
import { isDatabaseCredentials, type ExportRecord } from "../actors/export/export-actor";
import type { StoredAudit } from "./door";

/** Why a door refuses a client's credentials; each protocol answers it in its own error form. */
export type VerificationFailure = "rejected" | "unavailable" | "token-needs-export-credentials" | "forbidden";

/**
 * A login admitted, with what its caller may do: `writes` when it holds `<type>:write` (a session
 * without it is read-only even on an export with allowWrites); or refused, and why.
 */
export type VerificationOutcome =
  | { ok: true; subject: string; assertions: string[]; writes: boolean }
  | { ok: false; failure: VerificationFailure; reason: string };

/**
 * Direct verification of spec 5.1 for a door that logs clients in itself (a wire protocol, not
 * HTTP): the client's user name and password, or a bearer token given as the password.
 */
export interface CredentialVerification {
  verify(user: string, password: string, connectionId: string): Promise<VerificationOutcome>;
  /** The export's own back-end identity; absent: the client's own. */
  backendIdentity?: { user: string; password: string };
}

/**
 * Direct verification for one export whose component enforces authentication: the password a
 * client gives is a bearer token when it looks like a JWT and a verifier takes tokens for the
 * component, otherwise a password for the client's user name. Every attempt is audited in the
 * component's category (spec 6 items 5-7). Absent when the component does not enforce.
 */
export function directVerificationFor(
  record: ExportRecord,
  authenticator: Authenticator,
  audit: StoredAudit,
  overrides: OverridesByVerifier | undefined,
): CredentialVerification | undefined {
  const exportComponent = component(record.type);
  if (!authenticator.isEnforced(exportComponent)) return undefined;
  return {
    backendIdentity: isDatabaseCredentials(record.credentials) ? record.credentials : undefined,
    async verify(user, password, connectionId) {
      const takesTokens = authenticator.credentialTypesFor(exportComponent).includes("rawBearerToken");
      const credential: Credential = takesTokens && jwtShape.test(password) ? { type: "rawBearerToken", token: password } : { type: "namepwd", user, password };
      const base = { exportId: record.id, connectionId, component: exportComponent.name, user, credentialType: credential.type };
      // A token is no database password: logging in with it as the client's user would make any token holder any database user.
      if (credential.type === "rawBearerToken" && !record.credentials) {
        void audit("warn", "connection.denied", `connection to export ${record.id} refused: a bearer token needs the export's own back-end credentials`, {
          ...base,
          outcome: "rejected",
          reason: "token login without export credentials",
        });
        return {
          ok: false,
          failure: "token-needs-export-credentials",
          reason: "this export takes bearer tokens only when it has its own back-end credentials",
        };
      }
      const outcome = await authenticator.verify(exportComponent, credential, overrides);
      const { level, event, details } = outcomeAudit(outcome);
      if (outcome.kind === "verified") {
        const { subject } = outcome.identity;
        // Admitted only once the login is in the audit log (a full audit stream refuses records): fail closed otherwise.
        if (!(await audit(level, event, `'${subject}' authenticated for export ${record.id}`, { ...base, ...details })))
          return { ok: false, failure: "unavailable", reason: "the audit log did not store this login" };
        // A verified caller logs in only with `<type>:read`, as an HTTP door's caller reads only with it (docs/authorization.md).
        const rights = authenticator.authorizer.rightsOf({ identity: outcome.identity, verifier: outcome.by.verifier, profile: outcome.by.profile });
        const type = record.type as "postgres" | "mysql";
        if (!permits(rights, type, "read")) {
          const reason = `'${subject}' does not hold ${type}:read`;
          const stored = await audit("warn", "connection.forbidden", `connection to export ${record.id} refused: ${reason}`, {
            ...base,
            subject,
            action: "read",
            rule: null,
            matchedRules: rights.rules,
          });
          return stored
            ? { ok: false, failure: "forbidden", reason }
            : { ok: false, failure: "unavailable", reason: "the audit log did not store this refusal" };
        }
        return { ok: true, subject, assertions: outcome.identity.assertions, writes: permits(rights, type, "write") };
      }
      void audit(level, event, `connection to export ${record.id} refused: ${outcome.reason}`, { ...base, ...details });
      // A throttled login may be tried again later, as one whose verifier did not answer.
      return { ok: false, failure: mayRetry(outcome) ? "unavailable" : "rejected", reason: outcome.reason };
    },
  };
}
