import { test } from "node:test";
import assert from "node:assert/strict";
import { headers as natsHeaders } from "@nats-io/transport-node";
import type { Authenticator } from "../../auth/authenticator";
import { Authorizer } from "../../auth/authorization";
import { maxKindsPerSource } from "../../auth/repeated-audit";
import { component } from "../../auth/components";
import type { ExportAudit, StoredAudit } from "../../exports/door";
import { NatsCredentialCheck } from "../../proxies/pipeline/nats-credentials";
import { answerMessage, CredentialsUnavailable } from "../../proxies/pipeline/nats-answer";
import type { RecordRedactor } from "../../proxies/pipeline/types";

/** Enforces pipeline; "alice:right" is verified, every other Basic credential rejected. */
const authenticator = {
  isEnforced: () => true,
  credentialTypesFor: () => ["namepwd"],
  verify: async (_component: unknown, credential: { user: string; password: string }) =>
    credential.user === "alice" && credential.password === "right"
      ? { kind: "verified" as const, identity: { subject: "alice", assertions: [] }, by: { credentialType: "namepwd", verifier: "ldap", profile: "p" } }
      : { kind: "rejected" as const, reason: `bind as '${credential.user}' refused` },
  authorizer: new Authorizer(undefined),
} as unknown as Authenticator;

const basic = (user: string, password: string) => {
  const h = natsHeaders();
  h.set("Authorization", `Basic ${Buffer.from(`${user}:${password}`).toString("base64")}`);
  return h;
};

test("a NATS login is taken only once its audit record is stored: a full audit stream refuses it (ERR_AUDIT_UNAVAILABLE), as every other door does", async () => {
  let storing = false;
  const events: string[] = [];
  const audit: ExportAudit = (_level, event) => void events.push(event);
  const stored: StoredAudit = async (_level, event) => (events.push(event), storing);
  const check = new NatsCredentialCheck(authenticator, component("pipeline"), "e1", audit, stored);
  assert.deepEqual(await check.check(basic("alice", "right"), "request"), {
    ok: false,
    code: "ERR_AUDIT_UNAVAILABLE",
    reason: "the audit log did not store this login; try again",
  });
  storing = true;
  assert.deepEqual(await check.check(basic("alice", "right"), "request"), { ok: true, subject: "alice" });
  assert.deepEqual(events, ["connection.authenticated", "connection.authenticated"]);
});

test("refused NATS credentials that differ every message write maxKindsPerSource records a minute, then one counted record", async () => {
  const records: Array<{ event: string; count: unknown }> = [];
  const audit: ExportAudit = (_level, event, _message, details) => void records.push({ event, count: details.count });
  const check = new NatsCredentialCheck(authenticator, component("pipeline"), "e1", audit, async () => true);
  for (let i = 0; i < 500; i++) assert.equal((await check.check(basic(`guess-${i}`, "x"), "stream")).ok, false);
  assert.equal(records.length, maxKindsPerSource + 1, `not one record per credential: ${records.length}`);
  assert.ok(records.every((record) => record.event === "connection.denied" && record.count === 1));
});

test("a NATS message whose login the audit log did not store is not answered: the stream retries it, a request is told ERR_AUDIT_UNAVAILABLE", async () => {
  const check = new NatsCredentialCheck(
    authenticator,
    component("pipeline"),
    "e1",
    () => undefined,
    async () => false,
  );
  const redactor = { redactAll: async () => assert.fail("nothing is redacted for an unaudited login") } as unknown as RecordRedactor;
  await assert.rejects(
    answerMessage({ headers: basic("alice", "right"), json: () => ({}) } as unknown as Parameters<typeof answerMessage>[0], "stream", check, redactor),
    (error: unknown) => error instanceof CredentialsUnavailable && error.code === "ERR_AUDIT_UNAVAILABLE",
  );
});

test("NATS use without authentication (not enforced) is taken once its minute's record is stored: a full audit stream refuses it (ERR_AUDIT_UNAVAILABLE), one record for messages that arrive meanwhile", async () => {
  const open = { ...authenticator, isEnforced: () => false } as unknown as Authenticator;
  let storing = false;
  const events: string[] = [];
  const stored: StoredAudit = async (_level, event) => (events.push(event), storing);
  const check = new NatsCredentialCheck(open, component("pipeline"), "e1", () => undefined, stored);
  const redactor = { redactAll: async () => assert.fail("nothing is redacted for unaudited use") } as unknown as RecordRedactor;
  const message = { headers: undefined, json: () => ({}) } as unknown as Parameters<typeof answerMessage>[0];
  await assert.rejects(
    answerMessage(message, "stream", check, redactor),
    (error: unknown) => error instanceof CredentialsUnavailable && error.code === "ERR_AUDIT_UNAVAILABLE",
  );
  storing = true;
  const [first, second] = await Promise.all([check.open("request"), check.open("request")]);
  assert.deepEqual(
    [first, second],
    [
      { ok: true, subject: null },
      { ok: true, subject: null },
    ],
  );
  assert.deepEqual(check.open("stream"), { ok: true, subject: null }, "then without a promise");
  assert.deepEqual(events, ["connection.unauthenticated", "connection.unauthenticated"], "the refused record, then one for both messages");
});
