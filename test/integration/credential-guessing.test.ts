import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { writeFileSync } from "node:fs";
import { request as httpRequest } from "node:http";
import { join } from "node:path";
import type { AuditRecord } from "../../actors/runtime/event-log";
import type { NatsServerProcess } from "../../service/nats-server";
import { connectTo, startNats, storedMessages } from "../../testkit/nats";
import { maxKindsPerSource } from "../../auth/repeated-audit";
import { NodeProcess } from "../../testkit/node-process";
import { tempDir } from "../../testkit/temp";
import { OidcProvider } from "../helpers/oidc";
import { SlapdServer } from "../../testkit/slapd";

const alice = { uid: "alice", password: "wonderland" };
const bob = { uid: "bob", password: "builder" };
const perAddress = 20;
const perUser = 10;
/** Requests without credentials from one address: refused 401 each, not budgeted (nothing is guessed), audited in aggregate. */
const noCredentials = 300;
const noise = "127.0.3.1";

const basic = (user: string, password: string) => `Basic ${Buffer.from(`${user}:${password}`).toString("base64")}`;

/** GET /config from a chosen loopback address (a new connection each time, as a guesser would open). */
function getConfig(port: number, authorization: string, localAddress = "127.0.0.1"): Promise<{ status: number; retryAfter?: string; code?: string }> {
  return new Promise((resolve, reject) => {
    const headers = authorization === "" ? {} : { authorization };
    const req = httpRequest({ host: "127.0.0.1", port, path: "/config", localAddress, agent: false, headers }, (res) => {
      let body = "";
      res.on("data", (chunk: Buffer) => (body += chunk.toString("utf8")));
      res.on("end", () => {
        const code = res.statusCode === 200 ? undefined : (JSON.parse(body) as { error: { code: string } }).error.code;
        resolve({ status: res.statusCode!, retryAfter: res.headers["retry-after"], code });
      });
    });
    req.on("error", reject);
    req.end();
  });
}

describe("credential guessing is slowed: failure budgets per address and per user, 429 with Retry-After", () => {
  let slapd: SlapdServer;
  let provider: OidcProvider;
  let nats: NatsServerProcess;
  let node: NodeProcess;
  let floodStarted = 0;
  let throttledAnswers = 0;

  before(async () => {
    slapd = await SlapdServer.start({ suffix: "dc=example,dc=org", users: [alice, bob] });
    provider = await OidcProvider.start();
    nats = await startNats();
    const file = join(tempDir("guessing"), "security.json");
    writeFileSync(
      file,
      JSON.stringify({
        verifiers: [
          {
            verifier: "ldap",
            default: "directory",
            profiles: [{ profile: "directory", configuration: { hostname: `127.0.0.1:${slapd.port}`, rootComponents: "ou=people,dc=example,dc=org" } }],
          },
          {
            verifier: "oauth",
            profiles: [
              { profile: "idp", configuration: { serverMetadataUrl: provider.metadataUrl, resourceServerId: OidcProvider.resource, clientRequestTimeout: 5 } },
            ],
          },
        ],
        credentials: [
          { type: "namepwd", verifiers: [{ verifier: "ldap", default: true }] },
          { type: "rawBearerToken", verifiers: [{ verifier: "oauth", profile: "idp" }] },
        ],
        enforcedComponents: [{ componentName: "config" }],
      }),
    );
    node = await NodeProcess.start({
      nodeId: "guessing-1",
      natsUrl: nats.url,
      env: { SECURITY_CONFIG: file, AUTH_FAILURES_PER_ADDRESS: String(perAddress), AUTH_FAILURES_PER_USER: String(perUser) },
    });
  });

  after(async () => {
    await node?.stop();
    await nats?.stop();
    await provider?.stop();
    await slapd?.stop();
  });

  test("1,000 failed logins from one address: refused 401 up to the budget, then 429 with Retry-After; known callers and other addresses unaffected", async () => {
    assert.equal((await getConfig(node.port, basic(alice.uid, alice.password))).status, 200, "alice logs in before the flood");
    floodStarted = Date.now();
    const unauthenticated = [];
    for (let i = 0; i < noCredentials; i++) unauthenticated.push(await getConfig(node.port, "", noise));
    assert.ok(
      unauthenticated.every((a) => a.code === "ERR_AUTH_REQUIRED"),
      "requests without credentials are each refused",
    );
    const answers: Array<{ status: number; retryAfter?: string; code?: string }> = [];
    for (let i = 0; i < 1000; i++) answers.push(await getConfig(node.port, basic(`guess-${i % 50}`, randomBytes(6).toString("hex"))));
    assert.deepEqual(
      answers.slice(0, perAddress).map((a) => a.code),
      Array(perAddress).fill("ERR_AUTH_INVALID"),
      "the first failures are each checked with the directory",
    );
    const throttled = answers.filter((a) => a.status === 429);
    throttledAnswers = throttled.length;
    // After each wait one more guess reaches the directory (and doubles the wait): a handful, not hundreds.
    assert.ok(throttled.length >= 1000 - perAddress - 10, `429 after the budget, got ${throttled.length}`);
    assert.ok(
      throttled.every((a) => a.code === "ERR_AUTH_THROTTLED" && Number(a.retryAfter) >= 1),
      "each 429 says ERR_AUTH_THROTTLED and when to come back",
    );
    assert.equal(
      (await getConfig(node.port, basic(alice.uid, alice.password))).status,
      200,
      "alice, verified before, is not locked out by the guesser at her address",
    );
    assert.equal((await getConfig(node.port, basic(bob.uid, bob.password), "127.0.0.2")).status, 200, "a caller from another address logs in");
  });

  test("guessing one user's password from many addresses: the user's budget stops it; the user's own verified password still works", async () => {
    assert.equal((await getConfig(node.port, basic(bob.uid, bob.password), "127.0.0.3")).status, 200, "bob logs in");
    const answers = [];
    for (let i = 0; i < perUser + 5; i++) answers.push(await getConfig(node.port, basic(bob.uid, `wrong-${i}`), `127.0.1.${i + 1}`));
    assert.deepEqual(
      answers.map((a) => a.status),
      [...Array(perUser).fill(401), ...Array(5).fill(429)],
      "each address is new: the per-user budget is what stops the guesses",
    );
    // The directory matches uid without case ('BOB' binds as bob): other spellings come out of bob's spent budget, not new ones.
    const spellings = ["Bob", "bOB", "BOB", "boB"];
    const variants = [];
    for (const [i, spelling] of spellings.entries()) variants.push(await getConfig(node.port, basic(spelling, `wrong-${i}`), `127.0.1.${100 + i}`));
    assert.deepEqual(
      variants.map((a) => a.status),
      Array(spellings.length).fill(429),
      "another spelling of the name is the same user's budget",
    );
    assert.equal((await getConfig(node.port, basic(bob.uid, bob.password), "127.0.0.4")).status, 200, "bob's own password still passes");
    assert.equal((await getConfig(node.port, basic("BOB", bob.password), "127.0.0.5")).status, 200, "slapd binds BOB as bob");
  });

  test("bad tokens count against the address too", async () => {
    const answers = [];
    for (let i = 0; i < perAddress + 5; i++) answers.push(await getConfig(node.port, `Bearer not-a-token-${i}`, "127.0.2.1"));
    assert.deepEqual(
      answers.map((a) => a.status),
      [...Array(perAddress).fill(401), ...Array(5).fill(429)],
    );
    const token = await provider.jwtToken();
    assert.equal((await getConfig(node.port, `Bearer ${token}`, "127.0.2.2")).status, 200, "a good token from elsewhere passes");
  });

  test("the audit holds the throttled logins as aggregated records (one per address, user and minute, with the count)", async () => {
    // The first throttled login of each kind is written at once; the rest of its minute when the minute ends.
    const wait = floodStarted + 62_000 - Date.now();
    if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
    const nc = await connectTo(nats.url);
    try {
      const records = (await storedMessages<AuditRecord>(nc, "WARDEN_AUDIT", "warden.audit.config.>")).filter(
        (m) => m.data.event === "connection.throttled" && (m.data.details as { remote: string }).remote === "127.0.0.1",
      );
      const counted = records.reduce((sum, m) => sum + (m.data.details as { count: number }).count, 0);
      assert.equal(counted, throttledAnswers, "every throttled login is counted");
      // 50 user names from one address: the names are the client's to vary, so past maxKindsPerSource kinds a minute they are counted as one
      // (two records per kind and minute at most: the first at once, the rest at the minute's end).
      assert.ok(
        records.length <= 2 * (maxKindsPerSource + 1),
        `at most ${maxKindsPerSource} kinds of one source a minute, not one per user name: ${records.length} records for ${throttledAnswers} logins`,
      );
      assert.ok(
        records.some((m) => (m.data.details as { count: number }).count > 1),
        "repeats are folded into a count",
      );
      // Unauthenticated noise: the first refusal at once, the rest of its minute as one record with the count.
      const denied = (await storedMessages<AuditRecord>(nc, "WARDEN_AUDIT", "warden.audit.config.warn")).filter(
        (m) => m.data.event === "connection.denied" && (m.data.details as { remote: string }).remote === noise,
      );
      assert.equal(
        denied.reduce((sum, m) => sum + (m.data.details as { count: number }).count, 0),
        noCredentials,
        "every refusal is counted",
      );
      assert.ok(denied.length <= 3, `one record per source, subject and minute, not one per request: ${denied.length} for ${noCredentials}`);
      assert.equal(denied[0]!.data.details?.count, 1);
      assert.match(String(denied[0]!.data.connectionId), /^[0-9a-f-]{36}$/, "the first refusal names its connection");
    } finally {
      await nc.close();
    }
  });
});
