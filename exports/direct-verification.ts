import type { Authenticator } from "../auth/authenticator";
import { component } from "../auth/components";
import type { Credential } from "../auth/types";
import { jwtShape } from "../auth/verifiers/oauth-verifier";
import type { ExportRecord } from "../actors/export/export-actor";
import type { DirectVerification, ProxyAudit } from "../proxies/postgres/types";
import { exportOverrides } from "./export-overrides";


/**
 * Direct verification for one export whose component enforces authentication (spec 5.1): the
 * password a client gives is a bearer token when it looks like a JWT and a verifier takes tokens
 * for the component, otherwise a password for the client's user name. Every attempt is audited
 * in the component's category (spec 6 items 5-7). Absent when the component does not enforce.
 */
export function directVerificationFor(record: ExportRecord, authenticator: Authenticator, audit: ProxyAudit): DirectVerification | undefined {
  const exportComponent = component(record.type);
  if (!authenticator.isEnforced(exportComponent)) return undefined;
  const overrides = exportOverrides(record);
  return {
    backendIdentity: record.credentials,
    async verify(user, password, connectionId) {
      const takesTokens = authenticator.credentialTypesFor(exportComponent).includes("rawBearerToken");
      const credential: Credential = takesTokens && jwtShape.test(password) ? { type: "rawBearerToken", token: password } : { type: "namepwd", user, password };
      const base = { exportId: record.id, connectionId, component: exportComponent.name, user, credentialType: credential.type };
      // A token is no database password: logging in with it as the client's user would make any token holder any database user.
      if (credential.type === "rawBearerToken" && !record.credentials) {
        audit("warn", "connection.denied", `connection to export ${record.id} refused: a bearer token needs the export's own back-end credentials`, { ...base, outcome: "rejected", reason: "token login without export credentials" });
        return { ok: false, sqlState: "28000", message: "this export takes bearer tokens only when it has its own back-end credentials" };
      }
      const outcome = await authenticator.verify(exportComponent, credential, overrides);
      if (outcome.kind === "verified") {
        audit("info", "connection.authenticated", `'${outcome.identity.subject}' authenticated for export ${record.id}`, { ...base, subject: outcome.identity.subject, assertions: outcome.identity.assertions, verifier: outcome.by });
        return { ok: true, subject: outcome.identity.subject, assertions: outcome.identity.assertions };
      }
      audit("warn", outcome.kind === "unsupported" ? "connection.unsupported" : "connection.denied", `connection to export ${record.id} refused: ${outcome.reason}`, { ...base, outcome: outcome.kind, reason: outcome.reason, ...("by" in outcome ? { verifier: outcome.by } : {}) });
      if (outcome.kind === "unavailable") return { ok: false, sqlState: "08006", message: "the export could not verify the credentials now; try again" };
      // PostgreSQL's own wording: a client cannot tell an unknown user from a wrong password.
      return { ok: false, sqlState: "28P01", message: `password authentication failed for user "${user}"` };
    },
  };
}
