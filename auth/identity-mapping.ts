import { SecurityConfigError, type VerifiedIdentity, type VerifierType } from "./types";

/**
 * Which user (a userId of /user) a verified subject is (docs/subject-rights.md): an LDAP login's
 * user name (its uid), or the value of a named claim of an OAuth token. A subject no entry maps
 * (a cloud-signing key, a token without the claim) is no user: it reads reports only as an admin.
 */
export interface IdentityMapping {
  ldap?: { from: "uid" };
  oauth?: { claim: string };
}

/** The security file's `identityMapping` section: `{"ldap": {"from": "uid"}, "oauth": {"claim": "sub"}}`, each part optional. */
export function parseIdentityMapping(value: unknown, path = "identityMapping"): IdentityMapping | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== "object" || value === null || Array.isArray(value)) throw new SecurityConfigError(path, "must be an object");
  const raw = value as Record<string, unknown>;
  for (const key of Object.keys(raw))
    if (key !== "ldap" && key !== "oauth") throw new SecurityConfigError(`${path}.${key}`, "is not a known property (allowed: ldap, oauth)");
  const mapping: IdentityMapping = {};
  if (raw.ldap !== undefined) {
    const ldap = raw.ldap as Record<string, unknown> | null;
    if (typeof ldap !== "object" || ldap === null || ldap.from !== "uid" || Object.keys(ldap).length !== 1)
      throw new SecurityConfigError(`${path}.ldap`, 'must be {"from": "uid"}');
    mapping.ldap = { from: "uid" };
  }
  if (raw.oauth !== undefined) {
    const oauth = raw.oauth as Record<string, unknown> | null;
    if (typeof oauth !== "object" || oauth === null || typeof oauth.claim !== "string" || oauth.claim === "" || Object.keys(oauth).length !== 1)
      throw new SecurityConfigError(`${path}.oauth`, 'must be {"claim": "<claim name>"}');
    mapping.oauth = { claim: oauth.claim };
  }
  return mapping;
}

/** The userId of a verified caller, or undefined when the mapping does not name one. */
export function userIdOf(mapping: IdentityMapping | undefined, verifier: VerifierType, identity: VerifiedIdentity): string | undefined {
  if (verifier === "ldap" && mapping?.ldap) return identity.subject;
  if (verifier === "oauth" && mapping?.oauth) {
    const value = identity.claims?.[mapping.oauth.claim];
    return typeof value === "string" && value !== "" ? value : undefined;
  }
  return undefined;
}
