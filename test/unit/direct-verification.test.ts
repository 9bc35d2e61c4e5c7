import { test } from "node:test";
import assert from "node:assert/strict";
import type { ExportRecord } from "../../actors/export/export-actor";
import type { Authenticator } from "../../auth/authenticator";
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

/** An authenticator that enforces the export's component and verifies every password as `alice`. */
const authenticator = {
  isEnforced: () => true,
  credentialTypesFor: () => ["namepwd"],
  verify: async () => ({
    kind: "verified" as const,
    identity: { subject: "alice", assertions: ["group:analysts"] },
    by: { credentialType: "namepwd", verifier: "ldap", profile: "p" },
  }),
} as unknown as Authenticator;

test("a verified wire login is admitted only once its audit record is stored: unstored, it fails closed as 'unavailable'", async () => {
  const written: string[] = [];
  const storing: StoredAudit = async (_level, event) => (written.push(event), true);
  const refusing: StoredAudit = async (_level, event) => (written.push(event), false);

  const stored = await directVerificationFor(record, authenticator, storing, undefined)!.verify("alice", "pw", "c1");
  assert.deepEqual(stored, { ok: true, subject: "alice", assertions: ["group:analysts"] });

  const unstored = await directVerificationFor(record, authenticator, refusing, undefined)!.verify("alice", "pw", "c2");
  assert.deepEqual(unstored, { ok: false, failure: "unavailable", reason: "the audit log did not store this login" });
  assert.deepEqual(written, ["connection.authenticated", "connection.authenticated"]);
});
