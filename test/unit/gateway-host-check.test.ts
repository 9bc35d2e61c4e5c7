import { test } from "node:test";
import assert from "node:assert/strict";
import { Registry } from "prom-client";
import type { AuditRecord } from "../../actors/runtime/event-log";
import { Authenticator } from "../../auth/authenticator";
import { parseSecurityConfig, type VerifierFactories } from "../../auth/security-config";
import { verifierFactories } from "../../auth/verifier-factories";
import { build } from "../../gateway/build";
import type { GatewayDeps } from "../../gateway/types";
import { AllowedHosts } from "../../http/allowed-hosts";
import { hostAccepted, hostNameOf, isLoopback } from "../../http/host-check";
import { loadConfig } from "../../service/config";
import { StartupError } from "../../service/startup-error";
import { silentLogger } from "../../testkit/nats";
import { fakeDirectory } from "../helpers/fake-directory";
import { MemoryReplayGuard } from "../helpers/memory-replay-guard";
import { readOnlyPolicy } from "../helpers/read-only-policy";

const policy = readOnlyPolicy;

/** A gateway as the node builds it with the embedded default configuration: no component enforces authentication. */
function gateway(options: { host?: string; allowedHosts?: string; knownHostNames?: string[] } = {}) {
  const metrics = new Registry();
  const deps: GatewayDeps = {
    logger: silentLogger,
    metrics,
    nodeId: "host-test",
    health: () => ({ ready: true, checks: {} }),
    policy,
    ...(options.host === undefined ? {} : { host: options.host }),
    ...(options.allowedHosts === undefined ? {} : { allowedHosts: AllowedHosts.parse(options.allowedHosts) }),
    ...(options.knownHostNames === undefined ? {} : { knownHostNames: options.knownHostNames }),
  };
  return { app: build(deps), metrics };
}

async function refusals(metrics: Registry): Promise<number> {
  const counted = (await metrics.getSingleMetric("warden_refusals_total")?.get())?.values.find((value) => value.labels.kind === "ERR_REQUEST_HOST");
  return counted?.value ?? 0;
}

/** What a page of evil.example sends once its name resolves to 127.0.0.1: to the browser, its own origin. */
const rebound = (host = "evil.example:8890") => ({ host, "sec-fetch-site": "same-origin", "sec-fetch-mode": "cors", origin: `http://${host}` });

test("on the default loopback address, a rebound name is refused 421 ERR_REQUEST_HOST before any route: reads, writes and the pages", async () => {
  const { app, metrics } = gateway();
  for (const [method, url] of [
    ["GET", "/config"],
    ["PUT", "/config/categories"],
    ["DELETE", "/mapping/groups/main"],
    ["GET", "/user/alice/report"],
    ["GET", "/config/"],
    ["GET", "/healthz"],
    ["GET", "/no/such/path"],
  ] as const) {
    const answer = await app.inject({ method, url, headers: rebound(), ...(method === "PUT" ? { payload: [] } : {}) });
    assert.equal(answer.statusCode, 421, `${method} ${url}`);
    const { error } = answer.json();
    assert.equal(error.code, "ERR_REQUEST_HOST");
    assert.match(error.message, /'evil\.example:8890'/);
    assert.match(error.message, /ALLOWED_HOSTS \(--allowed-hosts\)/, "the message names the setting");
    assert.match(answer.headers["x-request-id"] as string, /./);
  }
  assert.equal(await refusals(metrics), 7, "each refusal is counted in warden_refusals_total");
  for (const host of ["EVIL.example", "evil.example.", "localhost.evil.example", "127.0.0.1.nip.io", "evil.example:80", "[::1]evil", "2130706433"]) {
    assert.equal((await app.inject({ url: "/config", headers: { host } })).statusCode, 421, host);
  }
});

test("on the default loopback address, loopback names and IP addresses are answered, with or without a port", async () => {
  const { app, metrics } = gateway();
  for (const host of [
    "localhost",
    "localhost:8890",
    "LOCALHOST:8890",
    "localhost.",
    "ui.localhost:8890",
    "127.0.0.1",
    "127.0.0.1:8890",
    "127.1.2.3:8890",
    "[::1]",
    "[::1]:8890",
    // A page has an address as its origin only when it was served from that address and port: no rebinding there.
    "192.0.2.7:8890",
    "[2001:db8::1]:8890",
  ]) {
    const answer = await app.inject({ url: "/config", headers: { host, "sec-fetch-site": "same-origin" } });
    assert.equal(answer.statusCode, 200, host);
  }
  assert.equal((await app.inject({ url: "/config/", headers: { host: "localhost:8890" } })).statusCode, 200);
  assert.equal(await refusals(metrics), 0);
});

test("ALLOWED_HOSTS adds names (exact and *.domain) to the loopback ones; '*' answers every name", async () => {
  const { app } = gateway({ allowedHosts: "warden.test, *.corp.example" });
  for (const host of ["warden.test:8890", "WARDEN.test", "a.corp.example:8890", "b.a.corp.example", "localhost:8890", "127.0.0.1:8890"])
    assert.equal((await app.inject({ url: "/config", headers: { host } })).statusCode, 200, host);
  for (const host of ["evil.example:8890", "corp.example", "warden.test.evil.example", "xwarden.test"])
    assert.equal((await app.inject({ url: "/config", headers: { host } })).statusCode, 421, host);

  const any = gateway({ allowedHosts: "*" }).app;
  assert.equal((await any.inject({ url: "/config", headers: rebound() })).statusCode, 200, "'*' turns the check off");
});

test("bound to a non-loopback address, every name is answered unless ALLOWED_HOSTS is set; then only those and the loopback names", async () => {
  for (const host of ["0.0.0.0", "::", "192.0.2.10"]) {
    const { app } = gateway({ host });
    assert.equal((await app.inject({ url: "/config", headers: rebound() })).statusCode, 200, host);
    assert.equal((await app.inject({ url: "/config", headers: { host: "warden.lan:8890" } })).statusCode, 200, host);
  }
  const { app } = gateway({ host: "0.0.0.0", allowedHosts: "warden.example" });
  assert.equal((await app.inject({ url: "/config", headers: { host: "warden.example" } })).statusCode, 200);
  assert.equal((await app.inject({ url: "/config", headers: { host: "localhost:8890" } })).statusCode, 200);
  assert.equal((await app.inject({ url: "/config", headers: { host: "192.0.2.10:8890" } })).statusCode, 200);
  assert.equal((await app.inject({ url: "/config", headers: rebound() })).statusCode, 421);
  // A loopback HOST given by name is loopback too; the name itself is one of the gateway's.
  const named = gateway({ host: "localhost" }).app;
  assert.equal((await named.inject({ url: "/config", headers: rebound() })).statusCode, 421);
});

test("a refused Host is refused before authentication: no credential is verified, nobody is audited as authenticated, one host.refused record a minute per source", async () => {
  const factories: VerifierFactories = { ...verifierFactories, ldap: fakeDirectory };
  const config = parseSecurityConfig(
    {
      verifiers: [{ verifier: "ldap", default: "main", profiles: [{ profile: "main" }] }],
      credentials: [{ type: "namepwd", verifiers: [{ verifier: "ldap", default: true }] }],
      enforcedComponents: [{ componentName: "config" }],
    },
    factories,
  );
  const authenticator = await Authenticator.start(config, factories, { replayGuard: new MemoryReplayGuard() }, "inline");
  const audits: Array<Omit<AuditRecord, "id" | "time" | "nodeId">> = [];
  const app = build({
    logger: silentLogger,
    metrics: new Registry(),
    nodeId: "host-test",
    health: () => ({ ready: true, checks: {} }),
    policy,
    auth: { authenticator, audit: async (entry) => audits.push(entry) },
  });
  const wrong = `Basic ${Buffer.from("alice:wrong").toString("base64")}`;
  for (let i = 0; i < 5; i++) {
    const answer = await app.inject({ url: "/config", headers: { ...rebound(), authorization: wrong } });
    assert.equal(answer.statusCode, 421);
    assert.equal(answer.headers["www-authenticate"], undefined, "no challenge: authentication never ran");
  }
  assert.deepEqual(
    audits.map((record) => [record.category, record.event, (record.details as { count?: number }).count]),
    [["service", "host.refused", 1]],
    "the first refusal of a source is written at once, its repeats are folded into the next minute's record; no login failure is recorded",
  );
  assert.equal((audits[0]!.details as { host?: string }).host, "evil.example:8890");
  // The same wrong password on a name of the node is verified and refused as such.
  assert.equal((await app.inject({ url: "/config", headers: { host: "localhost:8890", authorization: wrong } })).statusCode, 401);
  await authenticator.close();
});

test("the rule itself: Host names, loopback listeners, requests without a Host", () => {
  assert.equal(hostNameOf("Evil.Example.:8890"), "evil.example");
  assert.equal(hostNameOf("[::1]:80"), "::1");
  assert.equal(hostNameOf("user@evil.example"), undefined);
  for (const address of ["127.0.0.1", "127.9.9.9", "::1", "[::1]", "0:0:0:0:0:0:0:1", "::ffff:127.0.0.1", "localhost", "a.localhost"])
    assert.ok(isLoopback(address), address);
  for (const address of ["0.0.0.0", "::", "192.0.2.1", "warden.example", "localhost.example", "128.0.0.1"]) assert.ok(!isLoopback(address), address);
  const loopback = { loopback: true, own: AllowedHosts.unset, allowed: AllowedHosts.unset };
  // No browser sends a request without a Host (HTTP/1.0 tools may): it cannot be a rebound page's.
  assert.ok(hostAccepted(undefined, loopback));
  assert.ok(hostAccepted("", loopback));
  assert.ok(!hostAccepted("evil.example", loopback));
  assert.ok(hostAccepted("b.exports.test:9000", { ...loopback, own: AllowedHosts.parse("exports.test,*.exports.test") }));
});

test("ALLOWED_HOSTS: names and *.domain patterns, '*' alone; anything else stops the node at startup naming the entry", () => {
  assert.equal(loadConfig([], {}).allowedHosts.set, false);
  assert.equal(loadConfig([], { ALLOWED_HOSTS: "warden.test,*.corp.example" }).allowedHosts.describe(), "warden.test,*.corp.example");
  assert.equal(loadConfig(["--allowed-hosts", "*"], { ALLOWED_HOSTS: "a.test" }).allowedHosts.any, true, "the flag wins");
  for (const bad of ["http://warden.test", "warden.test:8890", "a.test,*", "warden.test/path", "*.*.test"]) {
    assert.throws(
      () => loadConfig([], { ALLOWED_HOSTS: bad }),
      (error: unknown) => error instanceof StartupError && /ALLOWED_HOSTS \(--allowed-hosts\)/.test(error.message),
      bad,
    );
  }
});

test("names the security configuration selects by (domainName) are answered without ALLOWED_HOSTS, and do not narrow a non-loopback listener", async () => {
  const { app } = gateway({ knownHostNames: ["warden.example"] });
  assert.equal((await app.inject({ url: "/healthz", headers: { host: "warden.example:8890" } })).statusCode, 200, "a selected name");
  assert.equal((await app.inject({ url: "/healthz", headers: { host: "other.example:8890" } })).statusCode, 421, "any other name");
  const { app: open } = gateway({ host: "0.0.0.0", knownHostNames: ["warden.example"] });
  assert.equal(
    (await open.inject({ url: "/healthz", headers: { host: "other.example" } })).statusCode,
    200,
    "a non-loopback listener still answers every name",
  );
});
