import { test } from "node:test";
import assert from "node:assert/strict";
import { Registry } from "prom-client";
import type { AuditRecord } from "../../actors/runtime/event-log";
import { Authenticator } from "../../auth/authenticator";
import { signRequest } from "../../auth/cloud-signature";
import { parseSecurityConfig, type VerifierFactories } from "../../auth/security-config";
import { CredentialRejected, VerifierUnavailable, type VerifierFactory } from "../../auth/types";
import { verifierFactories } from "../../auth/verifier-factories";
import { build } from "../../gateway/build";
import { MemoryReplayGuard } from "../helpers/memory-replay-guard";
import { silentLogger } from "../helpers/nats";

/** A stand-in for LDAP: alice/wonderland is good, the password "outage" makes the directory unreachable. */
const fakeLdap: VerifierFactory<unknown> = {
  type: "ldap",
  parse: (raw) => raw ?? {},
  describe: () => ({}),
  create: (profile) => ({
    type: "ldap",
    profile,
    async verify(credential) {
      if (credential.type !== "namepwd") throw new CredentialRejected("not a password");
      if (credential.password === "outage") throw new VerifierUnavailable("directory unreachable");
      if (credential.user === "alice" && credential.password === "wonderland") return { subject: "alice", assertions: [] };
      throw new CredentialRejected("invalid credentials");
    },
    checkEndpoints: async () => undefined,
    close: async () => undefined,
  }),
};

const factories: VerifierFactories = { ...verifierFactories, ldap: fakeLdap };
const signing = { accessKeyId: "AKIDWARDEN", secretKey: "cloud-secret", region: "eu-west-1" };

async function gateway(enforcedComponents: unknown[]) {
  const config = parseSecurityConfig(
    {
      verifiers: [
        { verifier: "ldap", default: "main", profiles: [{ profile: "main" }] },
        { verifier: "cloud", profiles: [{ profile: "dev", configuration: { id: signing.accessKeyId, key: signing.secretKey, region: signing.region } }] },
      ],
      credentials: [
        { type: "namepwd", verifiers: [{ verifier: "ldap", default: true }] },
        { type: "cloudSigningCredentials", verifiers: [{ verifier: "cloud", profile: "dev", selectors: { componentName: "decision" } }] },
      ],
      enforcedComponents,
    },
    factories,
  );
  const authenticator = await Authenticator.start(config, factories, { replayGuard: new MemoryReplayGuard() }, "inline");
  const audits: Array<Omit<AuditRecord, "id" | "time" | "nodeId">> = [];
  const app = build({ logger: silentLogger, metrics: new Registry(), nodeId: "auth-test", health: () => ({ ready: true, checks: {} }), auth: { authenticator, audit: async (entry) => audits.push(entry) } });
  return { app, audits };
}

const basic = (user: string, password: string) => `Basic ${Buffer.from(`${user}:${password}`).toString("base64")}`;

test("an enforced component: no, wrong, malformed or unknown credentials get 401 with WWW-Authenticate; good ones pass", async () => {
  const { app, audits } = await gateway([{ componentName: "config" }]);
  const cases: Array<[Record<string, string>, number, string | null, string]> = [
    [{}, 401, "ERR_AUTH_REQUIRED", "connection.denied"],
    [{ authorization: basic("alice", "wrong") }, 401, "ERR_AUTH_INVALID", "connection.denied"],
    [{ authorization: basic("mallory", "wonderland") }, 401, "ERR_AUTH_INVALID", "connection.denied"],
    [{ authorization: "Basic not*base64" }, 401, "ERR_AUTH_INVALID", "connection.denied"],
    [{ authorization: "Digest username=alice" }, 401, "ERR_AUTH_UNSUPPORTED", "connection.unsupported"],
    [{ authorization: "Bearer eyJhbGciOiJub25lIn0.e30." }, 401, "ERR_AUTH_UNSUPPORTED", "connection.unsupported"],
    [{ authorization: basic("alice", "outage") }, 503, "ERR_AUTH_UNAVAILABLE", "connection.denied"],
    [{ authorization: basic("alice", "wonderland") }, 501, "ERR_SERVICE_NOT_IMPLEMENTED", "connection.authenticated"],
  ];
  for (const [headers, status, code, event] of cases) {
    audits.length = 0;
    const response = await app.inject({ method: "GET", url: "/config", headers });
    const what = JSON.stringify(headers);
    assert.equal(response.statusCode, status, what);
    assert.equal(response.json().error.code, code, what);
    if (status === 401) assert.deepEqual([response.headers["www-authenticate"]].flat(), ['Basic realm="warden", charset="UTF-8"'], what);
    assert.deepEqual(
      audits.map((a) => [a.category, a.level, a.event]),
      [["config", event === "connection.authenticated" ? "info" : "warn", event]],
      what,
    );
    assert.match(String(response.headers["x-connection-id"]), /^[0-9a-f-]{36}$/);
    assert.equal(audits[0]!.connectionId, response.headers["x-connection-id"]);
    assert.ok(!JSON.stringify(audits).includes("wonderland"), "no password in the audit log");
  }
});

test("only the selected components enforce: redact stays open and its use is audited at debug", async () => {
  const { app, audits } = await gateway([{ componentName: "config" }]);
  const open = await app.inject({ method: "GET", url: "/redact/stats?jobName=x" });
  assert.equal(open.statusCode, 501);
  assert.deepEqual(audits.map((a) => [a.category, a.level, a.event]), [["redact", "debug", "connection.unauthenticated"]]);
  assert.equal((await app.inject({ method: "GET", url: "/config" })).statusCode, 401);
  assert.equal((await app.inject({ method: "GET", url: "/healthz" })).statusCode, 200, "health is not a component");
});

test("cloud signatures: valid passes once; replay, tampered body, wrong key and wrong region are refused", async () => {
  const { app } = await gateway([{ componentType: "api" }]);
  const body = JSON.stringify({ userId: "u1", type: "platformUse", purposeId: "p" });
  const send = (signed: { url: string; headers: Record<string, string> }, payload = body) => app.inject({ method: "PUT", url: new URL(signed.url).pathname + new URL(signed.url).search, headers: { ...signed.headers, "content-type": "application/json" }, payload });
  const sign = (overrides: Partial<typeof signing> = {}) => signRequest({ method: "PUT", url: "http://localhost/decision", body, headers: { "content-type": "application/json" }, ...signing, ...overrides });

  const valid = sign();
  assert.equal((await send(valid)).statusCode, 501, "the signature verified; the route is not built in this gateway");
  const replay = await send(valid);
  assert.equal(replay.statusCode, 401, "the same signature twice");
  assert.equal(replay.json().error.code, "ERR_AUTH_INVALID");
  assert.equal((await send(sign(), body.replace("u1", "u2"))).statusCode, 401, "a tampered body");
  assert.equal((await send(sign({ secretKey: "guessed" }))).statusCode, 401, "a wrong key");
  assert.equal((await send(sign({ region: "us-east-1" }))).statusCode, 401, "a wrong region");
  const elsewhere = await app.inject({ method: "PUT", url: "/user", headers: { ...sign().headers, "content-type": "application/json" }, payload: body });
  assert.equal(elsewhere.statusCode, 401, "the cloud verifier selects /decision only");
  assert.equal(elsewhere.json().error.code, "ERR_AUTH_UNSUPPORTED");

  const bodiless = signRequest({ method: "GET", url: "http://localhost/decision?x=1", ...signing });
  assert.equal((await app.inject({ method: "GET", url: "/decision?x=1", headers: bodiless.headers })).statusCode, 501, "a signed GET passes");
  assert.equal((await app.inject({ method: "GET", url: "/decision?x=2", headers: bodiless.headers })).statusCode, 401, "the signature covers the query");
});
