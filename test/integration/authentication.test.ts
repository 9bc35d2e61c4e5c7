import { createHash } from "node:crypto";
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { AuditRecord } from "../../actors/runtime/event-log";
import type { NatsServerProcess } from "../../service/nats-server";
import type { ComponentSelection } from "../../auth/authenticator";
import { servedComponents } from "../../auth/components";
import { realisticPolicy } from "../../testkit/policy";
import { createPopulation } from "../fixtures/population";
import { createAppDatabase, populationHba, roles } from "../fixtures/postgres-population";
import { selfSignedCertificate } from "../../testkit/certificates";
import { httpsRequest, type HttpsAnswer } from "../../testkit/https";
import { headers } from "@nats-io/transport-node";
import { connectTo, startNats, storedMessages } from "../../testkit/nats";
import { NodeProcess } from "../../testkit/node-process";
import { OidcProvider } from "../helpers/oidc";
import { freePort } from "../../testkit/ports";
import { PostgresServer } from "../../testkit/postgres";
import { SlapdServer } from "../../testkit/slapd";
import { tempDir } from "../../testkit/temp";

const cloud = { id: "AKIDWARDEN", key: "cloud-secret-key", region: "eu-west-1" };
/** A pipeline export's own signing identity (spec 5.5: set at export time over a profile that names only the region). */
const pipelineSigning = { id: "AKIDPIPELINE", key: "pipeline-secret-key" };
const alice = { uid: "alice", password: "wonderland" };

function securityConfig(ldapPort: number, provider: OidcProvider) {
  return {
    verifiers: [
      {
        verifier: "ldap",
        default: "directory",
        profiles: [{ profile: "directory", configuration: { hostname: `127.0.0.1:${ldapPort}`, rootComponents: "ou=people,dc=example,dc=org" } }],
      },
      {
        verifier: "oauth",
        profiles: [
          { profile: "idp", configuration: { serverMetadataUrl: provider.metadataUrl, resourceServerId: OidcProvider.resource, clientRequestTimeout: 5 } },
        ],
      },
      {
        verifier: "cloud",
        profiles: [
          { profile: "dev", configuration: cloud },
          { profile: "exports", configuration: { region: cloud.region } },
        ],
      },
    ],
    credentials: [
      { type: "namepwd", verifiers: [{ verifier: "ldap", default: true }] },
      { type: "rawBearerToken", verifiers: [{ verifier: "oauth", profile: "idp" }] },
      {
        type: "cloudSigningCredentials",
        verifiers: [
          { verifier: "cloud", profile: "dev", selectors: { componentType: "api" } },
          { verifier: "cloud", profile: "exports", selectors: { componentName: "pipeline" } },
        ],
      },
    ],
    enforcedComponents: [
      { componentName: "config" },
      { componentName: "mapping" },
      { componentName: "decision" },
      { componentName: "export" },
      { componentName: "postgres" },
      { componentName: "pipeline" },
      // Spec 5.2: enforced on this name only; the user API stays open on the others.
      { componentName: "user", domainName: "users.example.org" },
    ],
  };
}

const basic = (user: string, password: string) => `Basic ${Buffer.from(`${user}:${password}`).toString("base64")}`;

describe("authentication with real LDAP, OAuth and cloud-signing clients, on the gateway (TLS) and a PostgreSQL export", () => {
  let slapd: SlapdServer;
  let provider: OidcProvider;
  let pg: PostgresServer;
  let nats: NatsServerProcess;
  let node: NodeProcess;
  let certFile: string;
  let ca: Buffer;
  let dir: string;
  let exportWithCredentials: number;
  let exportWithClientIdentity: number;
  let pipelinePort: number;
  let pipelineId: string;

  const call = (method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<HttpsAnswer> =>
    httpsRequest(`${node.url}${path}`, {
      ca,
      servername: "localhost",
      method,
      headers: body === undefined ? headers : { "content-type": "application/json", ...headers },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  const asAlice = { authorization: basic(alice.uid, alice.password) };
  const json = (answer: HttpsAnswer) => JSON.parse(answer.body) as { error?: { code: string } } & Record<string, unknown>;

  before(async () => {
    dir = tempDir("authentication");
    ({ certFile } = selfSignedCertificate(dir, "warden"));
    const keyFile = join(dir, "warden-key.pem");
    ca = readFileSync(certFile);
    // `reader` exists in the directory and in PostgreSQL with the same password: the client's identity reaches the backend.
    slapd = await SlapdServer.start({ suffix: "dc=example,dc=org", users: [alice, { uid: roles.scram.user, password: roles.scram.password }] });
    provider = await OidcProvider.start();
    pg = await PostgresServer.start({ hba: populationHba });
    createAppDatabase(pg);
    nats = await startNats();
    const file = join(dir, "security.json");
    writeFileSync(file, JSON.stringify(securityConfig(slapd.port, provider)));
    node = await NodeProcess.start({
      nodeId: "auth-1",
      natsUrl: nats.url,
      caFile: certFile,
      // users.example.org selects by domain name: a name of the node besides localhost, which ALLOWED_HOSTS must say on loopback.
      env: {
        ALLOWED_HOSTS: "users.example.org",
        SECURITY_CONFIG: file,
        TLS_CERT_FILE: certFile,
        TLS_KEY_FILE: keyFile,
        EXPORT_TLS_CERT_FILE: certFile,
        EXPORT_TLS_KEY_FILE: keyFile,
      },
    });
    assert.equal((await call("PUT", "/config", realisticPolicy(), asAlice)).status, 200);
    await createPopulation(async (method, path, body) => {
      const answer = await call(method, path, body);
      return { status: answer.status, etag: null, body: answer.body ? JSON.parse(answer.body) : answer.body };
    });
    const exportBody = {
      type: "postgres",
      endpoint: `127.0.0.1:${pg.port}`,
      resolverGroup: "users-table",
      metadata: { type: "platformUse", purposeId: "service" },
    };
    exportWithCredentials = await freePort();
    const created = await call(
      "PUT",
      "/export",
      { ...exportBody, port: exportWithCredentials, credentials: { user: roles.scram.user, password: roles.scram.password } },
      asAlice,
    );
    assert.equal(created.status, 200, created.body);
    assert.equal(json(created).backendIdentity, "export");
    assert.ok(!created.body.includes(roles.scram.password), "the export's password is never read back");
    exportWithClientIdentity = await freePort();
    assert.equal((await call("PUT", "/export", { ...exportBody, port: exportWithClientIdentity }, asAlice)).status, 200);
    pipelinePort = await freePort();
    const pipeline = await call(
      "PUT",
      "/export",
      { type: "pipeline", resolverGroup: "users-table", metadata: { type: "platformUse", purposeId: "service" }, port: pipelinePort },
      asAlice,
    );
    assert.equal(pipeline.status, 200, pipeline.body);
    pipelineId = json(pipeline).id as string;
  });

  after(async () => {
    await node?.stop();
    await nats?.stop();
    await pg?.stop();
    await provider?.stop();
    await slapd?.stop();
  });

  test("an enforced API: 401 with a challenge per credential type, unless LDAP, OAuth or a cloud signature says who it is", async () => {
    const refused = await call("GET", "/config");
    assert.equal(refused.status, 401);
    assert.equal(json(refused).error?.code, "ERR_AUTH_REQUIRED");
    // One WWW-Authenticate line per challenge; Node's client joins repeated lines with ", ".
    assert.equal(refused.headers["www-authenticate"], 'Basic realm="warden", charset="UTF-8", Bearer realm="warden", AWS4-HMAC-SHA256 realm="warden"');

    assert.equal((await call("GET", "/config", undefined, asAlice)).status, 200, "LDAP: good credentials");
    for (const [user, password] of [
      ["alice", "wrong"],
      ["alice", ""],
      ["nobody", "wonderland"],
      ["*", "wonderland"],
      ["alice,ou=people,dc=example,dc=org", "wonderland"],
    ]) {
      const answer = await call("GET", "/config", undefined, { authorization: basic(user!, password!) });
      assert.equal(answer.status, 401, `${user}:${password}`);
      assert.equal(json(answer).error?.code, "ERR_AUTH_INVALID");
    }

    const token = await provider.jwtToken();
    assert.equal((await call("GET", "/mapping/groups", undefined, { authorization: `Bearer ${token}` })).status, 200, "OAuth: a token from the provider");
    const now = Math.floor(Date.now() / 1000);
    for (const [what, bad] of [
      ["expired", await provider.sign({ iat: now - 600, exp: now - 300 })],
      ["wrong audience", await provider.sign({ aud: "urn:someone:else" })],
      [
        "alg none",
        `${Buffer.from('{"alg":"none"}').toString("base64url")}.${Buffer.from(JSON.stringify({ iss: provider.issuer, aud: OidcProvider.resource, exp: now + 300 })).toString("base64url")}.`,
      ],
    ] as const) {
      assert.equal((await call("GET", "/mapping/groups", undefined, { authorization: `Bearer ${bad}` })).status, 401, what);
    }

    // The trace record of a decision names the caller and its connection, as the audit record of that connection does.
    const nc = await connectTo(nats.url);
    const traces = nc.subscribe("warden.trace.decision.>");
    const decided = await call("PUT", "/decision", { userId: "accepted", type: "platformUse", purposeId: "service" }, { authorization: `Bearer ${token}` });
    assert.equal(decided.status, 200, decided.body);
    const connectionId = decided.headers["x-connection-id"];
    const [message] = await (async () => {
      for await (const m of traces) return [m];
      return [];
    })();
    await nc.close();
    const trace = JSON.parse(message!.string().split("\n")[0]!) as { traceId: string; caller: { connectionId: string; subject: string; assertions: string[] } };
    assert.equal(trace.traceId, json(decided).traceId);
    assert.equal(trace.caller.connectionId, connectionId);
    assert.equal(trace.caller.subject, provider.client.id);
    assert.deepEqual(
      trace.caller.assertions,
      OidcProvider.scope.split(" ").map((scope) => `scope:${scope}`),
      "the token's scopes, as assertions",
    );

    const curl = (key: string, path: string) =>
      spawnSync(
        "curl",
        [
          "-s",
          "-o",
          "/dev/null",
          "-w",
          "%{http_code}",
          "--cacert",
          certFile,
          "--aws-sigv4",
          `aws:amz:${cloud.region}:warden`,
          "--user",
          `${cloud.id}:${key}`,
          `${node.url}${path}`,
        ],
        { encoding: "utf8" },
      );
    assert.equal(curl(cloud.key, "/config").stdout, "200", "curl --aws-sigv4 signs a request the cloud verifier accepts");
    assert.equal(curl("wrong-key", "/config").stdout, "401");

    assert.equal((await call("GET", "/config", undefined, { authorization: "Digest username=alice" })).status, 401, "an unknown scheme");
    assert.notEqual((await call("GET", "/user/u-accepted")).status, 401, "user is not enforced on the node's own name");
    const onUsersName = await call("GET", "/user/u-accepted", undefined, { host: "Users.Example.org." });
    assert.equal(onUsersName.status, 401, "user is enforced on users.example.org (case and a final dot do not matter)");
    assert.equal((await call("GET", "/user/accepted", undefined, { host: "users.example.org", ...asAlice })).status, 200);
  });

  test("the export verifies clients itself over TLS (LDAP password or OAuth token) and logs in to PostgreSQL as the export or as the client", async () => {
    const psql = (port: number, user: string, password: string, sslmode = "require") =>
      spawnSync(
        "psql",
        [
          `host=127.0.0.1 port=${port} user=${user} dbname=app sslmode=${sslmode} connect_timeout=10`,
          "-X",
          "-A",
          "-t",
          "-c",
          "SELECT id, name FROM users WHERE id = 'accepted'",
        ],
        { encoding: "utf8", env: { ...process.env, PGPASSWORD: password } },
      );
    // The export opens its port within a second or so of being created.
    const deadline = Date.now() + 15_000;
    let first = psql(exportWithCredentials, alice.uid, alice.password);
    while (first.status !== 0 && Date.now() < deadline && /could not connect|Connection refused/.test(first.stderr)) {
      await new Promise((resolve) => setTimeout(resolve, 250));
      first = psql(exportWithCredentials, alice.uid, alice.password);
    }
    assert.equal(first.status, 0, first.stderr);
    assert.equal(first.stdout.trim(), "|Name accepted", "alice (LDAP) reads as the export's own backend identity; rows still decided");

    const wrong = psql(exportWithCredentials, alice.uid, "wrong");
    assert.notEqual(wrong.status, 0);
    assert.match(wrong.stderr, /password authentication failed for user "alice"/);
    const plain = psql(exportWithCredentials, alice.uid, alice.password, "disable");
    assert.notEqual(plain.status, 0);
    assert.match(plain.stderr, /only over TLS/);

    const token = await provider.jwtToken();
    const withToken = psql(exportWithCredentials, "service-account", token);
    assert.equal(withToken.status, 0, `a bearer token as the password: ${withToken.stderr}`);

    const tokenAsClient = psql(exportWithClientIdentity, roles.scram.user, token);
    assert.notEqual(tokenAsClient.status, 0, "a token is no database password: without export credentials it logs no one in");
    assert.match(tokenAsClient.stderr, /bearer tokens only when it has its own back-end credentials/);

    const asClient = psql(exportWithClientIdentity, roles.scram.user, roles.scram.password);
    assert.equal(asClient.status, 0, `the client's own identity, the proxy answering PostgreSQL's SCRAM: ${asClient.stderr}`);
    assert.equal(asClient.stdout.trim(), "|Name accepted");
    const noRole = psql(exportWithClientIdentity, alice.uid, alice.password);
    assert.notEqual(noRole.status, 0, "alice passes LDAP but has no role in PostgreSQL");
  });

  test("a pipeline export takes the credentials of component pipeline: over HTTPS as the gateway does, over NATS in an Authorization header", async () => {
    const record = JSON.stringify({ "users.id": "accepted", "users.email": "a@example.com" });
    const post = (headers: Record<string, string>) =>
      httpsRequest(`https://127.0.0.1:${pipelinePort}/`, { ca, method: "POST", headers: { "content-type": "application/json", ...headers }, body: record });
    const deadline = Date.now() + 15_000;
    let refused = await post({}).catch(() => undefined);
    while (!refused && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 250));
      refused = await post({}).catch(() => undefined);
    }
    assert.equal(refused?.status, 401);
    assert.equal(json(refused!).error?.code, "ERR_AUTH_REQUIRED");
    assert.match(String(refused!.headers["www-authenticate"]), /^Basic realm="warden"/);
    assert.equal((await post({ authorization: basic(alice.uid, "wrong") })).status, 401);
    const kept = await post({ authorization: basic(alice.uid, alice.password) });
    assert.equal(kept.status, 200, kept.body);
    assert.equal(json(kept).dropped, false);
    const token = await provider.jwtToken();
    assert.equal((await post({ authorization: `Bearer ${token}` })).status, 200, "a bearer token from the provider");

    const nc = await connectTo(nats.url);
    const ask = async (authorization?: string) => {
      const h = headers();
      if (authorization) h.set("Authorization", authorization);
      return (await nc.request(`warden.pipeline.${pipelineId}.request`, record, { timeout: 5000, headers: h })).json<{
        dropped: boolean;
        error?: { code: string };
      }>();
    };
    assert.equal((await ask()).error?.code, "ERR_AUTH_REQUIRED");
    assert.equal((await ask(basic(alice.uid, "wrong"))).error?.code, "ERR_AUTH_INVALID");
    assert.equal((await ask("Digest x")).error?.code, "ERR_AUTH_UNSUPPORTED");
    const answered = await ask(basic(alice.uid, alice.password));
    assert.equal(answered.dropped, false, JSON.stringify(answered));
    assert.equal((await ask(`Bearer ${token}`)).dropped, false);
    await nc.close();
  });

  test("a pipeline export's own cloud-signing id and key (spec 5.5): its signatures pass, the profile's and other exports' do not; the key is never read back", async () => {
    const body = { type: "pipeline", resolverGroup: "users-table", metadata: { type: "platformUse", purposeId: "service" } };
    const signedPort = await freePort();
    const created = await call("PUT", "/export", { ...body, port: signedPort, cloudSigning: pipelineSigning }, asAlice);
    assert.equal(created.status, 200, created.body);
    assert.deepEqual(json(created).cloudSigning, { id: pipelineSigning.id, key: "(set)" });
    const listed = await call("GET", "/export", undefined, asAlice);
    assert.ok(!listed.body.includes(pipelineSigning.key) && !created.body.includes(pipelineSigning.key), "the export's key is never read back");

    const record = JSON.stringify({ "users.id": "accepted" });
    // A signed body is hashed into the signature (x-amz-content-sha256), as every signed upload must be.
    const bodyHash = createHash("sha256").update(record).digest("hex");
    const signedPost = (port: number, { id, key }: { id: string; key: string }, region = cloud.region) =>
      spawnSync(
        "curl",
        [
          "-s",
          "-o",
          "/dev/null",
          "-w",
          "%{http_code}",
          "--cacert",
          certFile,
          "--aws-sigv4",
          `aws:amz:${region}:warden`,
          "--user",
          `${id}:${key}`,
          "-H",
          "content-type: application/json",
          "-H",
          `x-amz-content-sha256: ${bodyHash}`,
          "--data-binary",
          record,
          `https://127.0.0.1:${port}/`,
        ],
        { encoding: "utf8" },
      ).stdout;
    const deadline = Date.now() + 15_000;
    let status = signedPost(signedPort, pipelineSigning);
    while (status === "000" && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 250));
      status = signedPost(signedPort, pipelineSigning);
    }
    assert.equal(status, "200", "signed with the export's own id and key");
    assert.equal(signedPost(signedPort, cloud), "401", "the gateway profile's id and key are not this export's");
    assert.equal(signedPost(signedPort, pipelineSigning, "us-east-1"), "401", "the profile's region still applies");
    assert.equal(signedPost(pipelinePort, pipelineSigning), "401", "an export without its own id and key takes no signature: the profile names none");

    const refusedForPostgres = await call(
      "PUT",
      "/export",
      { type: "postgres", endpoint: `127.0.0.1:${pg.port}`, resolverGroup: "users-table", metadata: body.metadata, cloudSigning: pipelineSigning },
      asAlice,
    );
    assert.equal(refusedForPostgres.status, 400);
    assert.equal(json(refusedForPostgres).error?.code, "ERR_EXPORT_INVALID");
    const badId = await call("PUT", "/export", { ...body, cloudSigning: { id: "not/an/id" } }, asAlice);
    assert.equal(badId.status, 400);
    assert.match(badId.body, /cloudSigning\.id/);
    assert.equal((await call("DELETE", `/export?id=${json(created).id as string}`, undefined, asAlice)).status, 200);
  });

  test("every kind of audit record, with its level and category, on the audit subjects; no secret in any of them", async () => {
    const nc = await connectTo(nats.url);
    const records = (await storedMessages<AuditRecord>(nc, "WARDEN_AUDIT")).map(({ subject, data }) => ({ subject, record: data }));
    await nc.close();
    const subjectsOf = (event: string) => [...new Set(records.filter((r) => r.record.event === event).map((r) => r.subject))].sort();

    assert.deepEqual(subjectsOf("config.active"), ["warden.audit.service.info"]);
    const active = records.find((r) => r.record.event === "config.active")!.record.details as {
      authentication: { enforcedComponentNames: string[]; configurationFile: string };
    };
    assert.deepEqual(active.authentication.enforcedComponentNames, ["config", "decision", "export", "mapping", "pipeline", "postgres", "user"]);
    // Spec 6: each component's verifier selection is its own info record, in the component's category.
    const selections = records.filter((r) => r.record.event === "config.selection");
    assert.deepEqual(selections.map((r) => r.subject).sort(), [...servedComponents].map((name) => `warden.audit.${name}.info`).sort());
    const selectionOf = (name: string) => selections.find((r) => r.record.details?.component === name)!.record.details as unknown as ComponentSelection;
    assert.equal(selectionOf("config").enforced, true);
    assert.deepEqual(selectionOf("config").verifiers.cloudSigningCredentials, { verifier: "cloud", profile: "dev", entry: "credentials[2].verifiers[0]" });
    assert.deepEqual(selectionOf("pipeline").verifiers.cloudSigningCredentials, {
      verifier: "cloud",
      profile: "exports",
      entry: "credentials[2].verifiers[1]",
    });
    assert.equal(selectionOf("user").enforced, false, "on names no selector names");
    assert.equal(selectionOf("user").byDomainName["users.example.org"].enforced, true);
    assert.equal(selectionOf("redact").byDomainName["users.example.org"].enforced, false);
    // Enforced, without an authorization section: every verified subject holds everything, and the node says so at start.
    assert.deepEqual(subjectsOf("authorization.absent"), ["warden.audit.service.warn"]);
    assert.deepEqual(
      subjectsOf("port.opened"),
      ["warden.audit.pipeline.info", "warden.audit.postgres.info", "warden.audit.service.info"],
      "the gateway's port and each export's port",
    );
    assert.deepEqual(subjectsOf("connection.outgoing"), ["warden.audit.postgres.info"]);
    const outgoing = records
      .filter((r) => r.record.event === "connection.outgoing")
      .map((r) => r.record.details as { identity: string; identitySource: string });
    assert.ok(outgoing.some((o) => o.identity === roles.scram.user && o.identitySource === "export"));
    assert.ok(outgoing.some((o) => o.identity === roles.scram.user && o.identitySource === "client"));
    assert.deepEqual(subjectsOf("connection.authenticated"), [
      "warden.audit.config.info",
      "warden.audit.decision.info",
      "warden.audit.export.info",
      "warden.audit.mapping.info",
      "warden.audit.pipeline.info",
      "warden.audit.postgres.info",
      "warden.audit.user.info",
    ]);
    assert.deepEqual(subjectsOf("connection.denied"), [
      "warden.audit.config.warn",
      "warden.audit.mapping.warn",
      "warden.audit.pipeline.warn",
      "warden.audit.postgres.warn",
      "warden.audit.user.warn",
    ]);
    assert.deepEqual(subjectsOf("connection.unsupported"), ["warden.audit.config.warn", "warden.audit.pipeline.warn"]);
    assert.ok(subjectsOf("connection.unauthenticated").includes("warden.audit.user.debug"), "API use without authentication, at debug");
    assert.ok(subjectsOf("connection.tls-required").includes("warden.audit.postgres.warn"));

    const text = JSON.stringify(records);
    for (const secret of [alice.password, cloud.key, pipelineSigning.key, roles.scram.password])
      assert.ok(!text.includes(secret), `'${secret}' appears in the audit log`);
  });
});

describe("a security configuration the node refuses to start with", () => {
  let nats: NatsServerProcess;
  before(async () => {
    nats = await startNats();
  });
  after(async () => {
    await nats?.stop();
  });

  test("an unreachable LDAP server, a duplicate profile, an enforced postgres without export TLS, an export type enforced without the export API: the node exits naming the entry", async () => {
    const dir = tempDir("bad-security");
    const closedPort = await freePort();
    const cases: Array<[unknown, RegExp]> = [
      [
        { verifiers: [{ verifier: "ldap", profiles: [{ profile: "p", configuration: { hostname: `127.0.0.1:${closedPort}` } }] }] },
        /verifiers\[0\]\.profiles\[0\]: verifier 'ldap' profile 'p': .*not reachable/,
      ],
      [
        {
          verifiers: [
            {
              verifier: "ldap",
              profiles: [
                { profile: "p", configuration: { hostname: "x" } },
                { profile: "p", configuration: { hostname: "y" } },
              ],
            },
          ],
        },
        /verifiers\[0\]\.profiles\[1\]\.profile: duplicate profile name 'p'/,
      ],
      [
        {
          verifiers: [{ verifier: "ldap", default: "p", profiles: [{ profile: "p", configuration: { hostname: "x" } }] }],
          credentials: [{ type: "namepwd", verifiers: [{ verifier: "ldap", default: true }] }],
          enforcedComponents: [{ componentName: "export" }, { componentName: "postgres" }],
        },
        /component 'postgres' enforces authentication, which takes passwords only over TLS/,
      ],
      [
        {
          verifiers: [{ verifier: "ldap", default: "p", profiles: [{ profile: "p", configuration: { hostname: "x" } }] }],
          credentials: [{ type: "namepwd", verifiers: [{ verifier: "ldap", default: true }] }],
          enforcedComponents: [{ componentName: "pipeline" }, { componentName: "config" }],
        },
        /export type 'pipeline' enforces authentication but the 'export' API that manages them does not: add \{"componentName": "export"\} to enforcedComponents/,
      ],
    ];
    for (const [index, [config, message]] of cases.entries()) {
      const file = join(dir, `security-${index}.json`);
      writeFileSync(file, JSON.stringify(config));
      await assert.rejects(NodeProcess.start({ nodeId: `bad-security-${index}`, natsUrl: nats.url, env: { SECURITY_CONFIG: file } }), message);
    }
  });
});
