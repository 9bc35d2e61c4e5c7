import { test } from "node:test";
import assert from "node:assert/strict";
import { AuditOnce, mayRetry, outcomeAudit, RememberedOutcomes, refusalCode, type Refusal } from "../../auth/credential-check";

const by = { credentialType: "namepwd" as const, verifier: "ldap" as const, profile: "corp" };

test("every refusal maps to the one error code each door answers", () => {
  const cases: Array<[Refusal, string, boolean]> = [
    [{ kind: "missing", reason: "none" }, "ERR_AUTH_REQUIRED", false],
    [{ kind: "malformed", reason: "bad base64" }, "ERR_AUTH_INVALID", false],
    [{ kind: "rejected", reason: "wrong password", by }, "ERR_AUTH_INVALID", false],
    [{ kind: "unsupported", reason: "no verifier", credentialType: "rawBearerToken" }, "ERR_AUTH_UNSUPPORTED", false],
    [{ kind: "unavailable", reason: "ldap down", by }, "ERR_AUTH_UNAVAILABLE", true],
    [{ kind: "throttled", reason: "too many", retryAfterSeconds: 30 }, "ERR_AUTH_THROTTLED", true],
  ];
  for (const [refusal, code, retry] of cases) {
    assert.equal(refusalCode(refusal), code, refusal.kind);
    assert.equal(mayRetry(refusal), retry, refusal.kind);
  }
});

test("an outcome's audit: success at info with subject and verifier, refusals at warn with why, unsupported as its own event", () => {
  assert.deepEqual(outcomeAudit({ kind: "verified", identity: { subject: "alice", assertions: ["g"] }, by }), {
    level: "info",
    event: "connection.authenticated",
    details: { subject: "alice", assertions: ["g"], verifier: by },
  });
  assert.deepEqual(outcomeAudit({ kind: "rejected", reason: "wrong password", by }), {
    level: "warn",
    event: "connection.denied",
    details: { outcome: "rejected", reason: "wrong password", verifier: by },
  });
  assert.deepEqual(outcomeAudit({ kind: "unsupported", reason: "no verifier", credentialType: "x" }), {
    level: "warn",
    event: "connection.unsupported",
    details: { outcome: "unsupported", reason: "no verifier" },
  });
});

test("AuditOnce writes once per key within its window, again after it; RememberedOutcomes forgets after its time", async () => {
  const forever = new AuditOnce();
  let writes = 0;
  for (let i = 0; i < 3; i++) forever.once("k", () => writes++);
  forever.once("other", () => writes++);
  assert.equal(writes, 2);
  assert.ok(forever.has("k"));

  const brief = new AuditOnce(20);
  brief.once("k", () => writes++);
  brief.once("k", () => writes++);
  assert.equal(writes, 3);
  await new Promise((resolve) => setTimeout(resolve, 40));
  brief.once("k", () => writes++);
  assert.equal(writes, 4, "written again once the window passed");

  const remembered = new RememberedOutcomes<string>(20);
  remembered.remember("digest", "alice");
  assert.equal(remembered.get("digest"), "alice");
  assert.equal(remembered.get("other"), undefined);
  await new Promise((resolve) => setTimeout(resolve, 40));
  assert.equal(remembered.get("digest"), undefined, "asked again after its time");
});

test("AuditOnce forgets a key whose write failed, so the next use writes again instead of passing unaudited", async () => {
  const audited = new AuditOnce();
  await assert.rejects(audited.once("k", () => Promise.reject(new Error("audit stream full")))!, /full/);
  await new Promise((resolve) => setImmediate(resolve));
  assert.equal(audited.has("k"), false, "a rejected write is not remembered");
  assert.throws(() =>
    audited.once("k", () => {
      throw new Error("sync failure");
    }),
  );
  assert.equal(audited.has("k"), false, "a throwing write is not remembered");
  let writes = 0;
  await audited.once("k", async () => writes++);
  await audited.once("k", async () => writes++);
  assert.equal(writes, 1, "a successful write is remembered");
});
