import { test } from "node:test";
import assert from "node:assert/strict";
import { connect } from "node:net";
import { Registry } from "prom-client";
import type { AuditRecord } from "../../actors/runtime/event-log";
import { Authenticator } from "../../auth/authenticator";
import { signRequest } from "../../auth/cloud-signature";
import { parseSecurityConfig, type VerifierFactories } from "../../auth/security-config";
import { verifierFactories } from "../../auth/verifier-factories";
import { build } from "../../gateway/build";
import { fakeDirectory } from "../helpers/fake-directory";
import { MemoryReplayGuard } from "../helpers/memory-replay-guard";
import { silentLogger } from "../../testkit/nats";

const factories: VerifierFactories = { ...verifierFactories, ldap: fakeDirectory };
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
  const app = build({
    logger: silentLogger,
    metrics: new Registry(),
    nodeId: "auth-test",
    health: () => ({ ready: true, checks: {} }),
    auth: { authenticator, audit: async (entry) => audits.push(entry) },
  });
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
  assert.deepEqual(
    audits.map((a) => [a.category, a.level, a.event]),
    [["redact", "debug", "connection.unauthenticated"]],
  );
  assert.equal((await app.inject({ method: "GET", url: "/config" })).statusCode, 401);
  assert.equal((await app.inject({ method: "GET", url: "/healthz" })).statusCode, 200, "health is not a component");
});

test("cloud signatures: valid passes once; replay, tampered body, wrong key and wrong region are refused", async () => {
  const { app } = await gateway([{ componentType: "api" }]);
  const body = JSON.stringify({ userId: "u1", type: "platformUse", purposeId: "p" });
  const send = (signed: { url: string; headers: Record<string, string> }, payload = body) =>
    app.inject({
      method: "PUT",
      url: new URL(signed.url).pathname + new URL(signed.url).search,
      headers: { ...signed.headers, "content-type": "application/json" },
      payload,
    });
  const sign = (overrides: Partial<typeof signing> = {}) =>
    signRequest({ method: "PUT", url: "http://localhost/decision", body, headers: { "content-type": "application/json" }, ...signing, ...overrides });

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

/** One raw HTTP/1.1 exchange: what `inject()` cannot send (encoded or absolute-form targets, lying lengths). */
async function rawExchange(port: number, request: string): Promise<string> {
  const socket = connect({ host: "127.0.0.1", port });
  const chunks: Buffer[] = [];
  socket.on("data", (chunk: Buffer) => chunks.push(chunk));
  socket.on("error", () => undefined);
  await new Promise((resolve) => socket.once("connect", resolve));
  socket.end(request);
  await new Promise((resolve) => socket.once("close", resolve));
  return Buffer.concat(chunks).toString("utf8");
}

test("the component is the route's, not the raw target's: encoded and absolute-form targets are enforced too", async () => {
  const { app } = await gateway([{ componentType: "api" }]);
  await app.listen({ port: 0, host: "127.0.0.1" });
  try {
    const port = (app.server.address() as { port: number }).port;
    for (const target of ["/%63onfig", "/c%6Fnfig/categories", "http://elsewhere/config", "HTTP://elsewhere/export", "/%65xport"]) {
      const answer = await rawExchange(port, `GET ${target} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n`);
      assert.match(answer, /^HTTP\/1\.1 401 /, target);
    }
  } finally {
    await app.close();
  }
});

test("a bad signature on a body nobody reads denies the request and the node lives on", async () => {
  const { app } = await gateway([{ componentType: "api" }]);
  await app.listen({ port: 0, host: "127.0.0.1" });
  try {
    const port = (app.server.address() as { port: number }).port;
    const garbage = "Authorization: AWS4-HMAC-SHA256 Credential=x, SignedHeaders=host, Signature=00\r\n";
    const requests = [
      `GET /decision HTTP/1.1\r\nHost: 127.0.0.1\r\n${garbage}Content-Length: 5\r\nConnection: close\r\n\r\nhello`,
      `GET /decision HTTP/1.1\r\nHost: 127.0.0.1\r\n${garbage}Content-Length: 00\r\nConnection: close\r\n\r\n`,
      `PUT /decision HTTP/1.1\r\nHost: 127.0.0.1\r\n${garbage}Content-Length: 5\r\nConnection: close\r\n\r\nhello`,
      `DELETE /decision HTTP/1.1\r\nHost: 127.0.0.1\r\n${garbage}Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n5\r\nhello\r\n0\r\n\r\n`,
    ];
    for (const request of requests) {
      const answer = await rawExchange(port, request);
      assert.match(answer, /^HTTP\/1\.1 (401|415) /, request.split("\r\n")[0]);
    }
    assert.equal((await app.inject("/healthz")).statusCode, 200, "still serving");
  } finally {
    await app.close();
  }
});

test("a signed upload stored as it arrives must declare its body hash; the bytes must match it", async () => {
  const { app } = await gateway([{ componentType: "api" }]);
  let handled = 0;
  await app.register(async (scope) => {
    scope.addContentTypeParser("text/csv", (_request, payload, done) => done(null, payload));
    scope.put("/decision/upload", { config: { streamedBody: true } }, async (request) => {
      handled++;
      let bytes = 0;
      for await (const chunk of request.body as AsyncIterable<Buffer>) bytes += chunk.length;
      return { bytes };
    });
  });
  const body = "id,name\nu1,Ann\n";
  const sign = (contentSha256: boolean) =>
    signRequest({ method: "PUT", url: "http://localhost/decision/upload", body, headers: { "content-type": "text/csv" }, contentSha256, ...signing });
  const upload = (signed: { headers: Record<string, string> }, payload = body) =>
    app.inject({ method: "PUT", url: "/decision/upload", headers: signed.headers, payload });

  const undeclared = await upload(sign(false));
  assert.equal(undeclared.statusCode, 401);
  assert.equal(handled, 0, "refused before the route stored anything");
  const declared = await upload(sign(true));
  assert.equal(declared.statusCode, 200, declared.body);
  assert.deepEqual(declared.json(), { bytes: body.length });
  const tampered = await upload(sign(true), body.replace("Ann", "Bob"));
  assert.equal(tampered.statusCode, 401, "the bytes received do not hash to the signed value");
});
