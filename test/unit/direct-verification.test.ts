import { test } from "node:test";
import assert from "node:assert/strict";
import type { ExportRecord } from "../../actors/export/export-actor";
import type { Authenticator } from "../../auth/authenticator";
import { Authorizer, type AuthorizationRule } from "../../auth/authorization";
import { directVerificationFor } from "../../exports/direct-verification";
import type { StoredAudit } from "../../exports/door";

const record = {
  id: "e1",
  type: "postgres",
  endpoint: "127.0.0.1:5432",
  resolverGroup: "users-table",
  metadata: { type: "platformUse", purposeId: "service" },
  status: "active",
  listen: { host: "127.0.0.1", port: 1 },
} as unknown as ExportRecord;

/** An authenticator that enforces the export's component and verifies every password as the user named, with these rules (none: no authorization section). */
const authenticatorWith = (rules?: AuthorizationRule[]) =>
  ({
    isEnforced: () => true,
    credentialTypesFor: () => ["namepwd"],
    verify: async (_component: unknown, credential: { user: string }) => ({
      kind: "verified" as const,
      identity: { subject: credential.user, assertions: ["group:analysts"] },
      by: { credentialType: "namepwd", verifier: "ldap", profile: "p" },
    }),
    authorizer: new Authorizer(rules && { rules }),
  }) as unknown as Authenticator;
const authenticator = authenticatorWith();

test("a verified wire login is admitted only once its audit record is stored: unstored, it fails closed as 'unavailable'", async () => {
  const written: string[] = [];
  const storing: StoredAudit = async (_level, event) => (written.push(event), true);
  const refusing: StoredAudit = async (_level, event) => (written.push(event), false);

  const stored = await directVerificationFor(record, authenticator, storing, undefined)!.verify("alice", "pw", "c1");
  assert.deepEqual(stored, { ok: true, subject: "alice", assertions: ["group:analysts"], writes: true });

  const unstored = await directVerificationFor(record, authenticator, refusing, undefined)!.verify("alice", "pw", "c2");
  assert.deepEqual(unstored, { ok: false, failure: "unavailable", reason: "the audit log did not store this login" });
  assert.deepEqual(written, ["connection.authenticated", "connection.authenticated"]);
});

test("a wire login needs <type>:read, and writes only with <type>:write: the rules are asked as HTTP doors ask them; a refusal is audited", async () => {
  const subjects = (user: string) => ({ ldapUsers: [user], ldapGroups: [], scopes: [], claims: [], cloudKeyIds: [] });
  const rules: AuthorizationRule[] = [
    { name: "readers", subjects: subjects("reader"), profiles: [], permissions: [{ component: "postgres", action: "read" }], path: "rules[0]" },
    { name: "writers", subjects: subjects("writer"), profiles: [], permissions: [{ component: "postgres", action: "write" }], path: "rules[1]" },
    { name: "mysql only", subjects: subjects("other"), profiles: [], permissions: [{ component: "mysql", action: "write" }], path: "rules[2]" },
  ];
  const events: string[] = [];
  const storing: StoredAudit = async (_level, event) => (events.push(event), true);
  const verification = directVerificationFor(record, authenticatorWith(rules), storing, undefined)!;
  assert.deepEqual(await verification.verify("reader", "pw", "c1"), { ok: true, subject: "reader", assertions: ["group:analysts"], writes: false });
  assert.deepEqual(await verification.verify("writer", "pw", "c2"), { ok: true, subject: "writer", assertions: ["group:analysts"], writes: true });
  for (const user of ["nobody", "other"])
    assert.deepEqual(await verification.verify(user, "pw", "c3"), { ok: false, failure: "forbidden", reason: `'${user}' does not hold postgres:read` });
  assert.deepEqual(events, [
    "connection.authenticated",
    "connection.authenticated",
    "connection.authenticated",
    "connection.forbidden",
    "connection.authenticated",
    "connection.forbidden",
  ]);
});
