import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { request as httpRequest } from "node:http";
import { promisify } from "node:util";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import type { NatsConnection } from "@nats-io/transport-node";
import type { AuditRecord } from "../../actors/runtime/event-log";
import type { NatsServerProcess } from "../../service/nats-server";
import { FhirServerFixture } from "../../testkit/fhir-server";
import { call as request } from "../../testkit/http";
import { connectTo, startNats, storedMessages } from "../../testkit/nats";
import { NodeProcess } from "../../testkit/node-process";
import { fhirPolicy } from "../../testkit/policy";
import { freePorts } from "../../testkit/ports";
import { tempDir } from "../../testkit/temp";
import { createPopulation } from "../fixtures/population";
import { OidcProvider } from "../helpers/oidc";
import { SlapdServer } from "../../testkit/slapd";

const alice = { uid: "alice", password: "wonderland" };
/** Verified by the directory, but no authorization rule grants it anything. */
const bob = { uid: "bob", password: "builder" };
/** Holds fhir:read only. */
const carol = { uid: "carol", password: "reads-only" };
const signing = { id: "AKIDFHIR", key: "fhir-secret-key", region: "eu-west-1" };
const backendIdentity = { user: "fhir-backend", password: "backend-secret" };
const basic = (user: string, password: string) => `Basic ${Buffer.from(`${user}:${password}`).toString("base64")}`;

/** Component fhir enforced: Basic checked against LDAP, Bearer tokens against the OIDC provider, cloud signatures against a static profile. */
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
      { verifier: "cloud", profiles: [{ profile: "fhir", configuration: signing }] },
    ],
    credentials: [
      { type: "namepwd", verifiers: [{ verifier: "ldap", default: true }] },
      { type: "rawBearerToken", verifiers: [{ verifier: "oauth", profile: "idp" }] },
      { type: "cloudSigningCredentials", verifiers: [{ verifier: "cloud", profile: "fhir", selectors: { componentName: "fhir" } }] },
    ],
    // The export API is enforced too: it manages an enforced export type (the node refuses to start otherwise).
    enforcedComponents: [{ componentName: "fhir" }, { componentName: "export" }],
    authorization: {
      rules: [
        { name: "admin", ldapUsers: [alice.uid], permissions: ["*:admin"] },
        { name: "fhir readers", scopes: ["read"], cloudKeyIds: [signing.id], permissions: ["fhir:read"] },
        { name: "fhir reading users", ldapUsers: [carol.uid], permissions: ["fhir:read"] },
      ],
    },
  };
}

describe("FHIR exports with component fhir enforced", () => {
  let nats: NatsServerProcess;
  let node: NodeProcess;
  let nc: NatsConnection;
  let slapd: SlapdServer;
  let provider: OidcProvider;
  const fhir = new FhirServerFixture();
  let clientIdentityPort: number;
  let exportIdentityPort: number;
  let clientExportId: string;
  let exportExportId: string;
  const call = (method: string, path: string, body?: unknown) =>
    request(node, method, path, body, path.startsWith("/export") ? { authorization: basic(alice.uid, alice.password) } : {});

  before(async () => {
    const dir = tempDir("fhir-auth");
    [slapd, provider, nats] = await Promise.all([
      SlapdServer.start({ suffix: "dc=example,dc=org", users: [alice, bob, carol] }),
      OidcProvider.start(),
      startNats(),
      fhir.start(),
    ]);
    const file = join(dir, "security.json");
    writeFileSync(file, JSON.stringify(securityConfig(slapd.port, provider)));
    node = await NodeProcess.start({ nodeId: "fhir-auth-1", natsUrl: nats.url, env: { SECURITY_CONFIG: file } });
    assert.equal((await call("PUT", "/config", fhirPolicy())).status, 200);
    await createPopulation(call);
    await fhir.repo.createResource({ resourceType: "Patient", id: "accepted", name: [{ family: "Family-accepted" }] }, { assignedId: true });
    nc = await connectTo(nats.url);
    [clientIdentityPort, exportIdentityPort] = await freePorts(2);
    const body = { type: "fhir", endpoint: fhir.base, resolverGroup: "fhir-clinical", metadata: { type: "platformUse", purposeId: "service" } };
    const clientIdentity = await call("PUT", "/export", { ...body, port: clientIdentityPort });
    assert.equal(clientIdentity.status, 200, JSON.stringify(clientIdentity.body));
    assert.equal(clientIdentity.body.backendIdentity, "client");
    clientExportId = clientIdentity.body.id as string;
    const exportIdentity = await call("PUT", "/export", { ...body, port: exportIdentityPort, credentials: backendIdentity });
    assert.equal(exportIdentity.status, 200, JSON.stringify(exportIdentity.body));
    assert.equal(exportIdentity.body.backendIdentity, "export");
    exportExportId = exportIdentity.body.id as string;
    assert.ok(!JSON.stringify(exportIdentity.body).includes(backendIdentity.password), "the export's password is never read back");
  });

  after(async () => {
    await nc?.close();
    await node?.kill();
    await Promise.all([fhir.stop(), nats?.stop(), slapd?.stop(), provider?.stop()]);
  });

  const lastAuthorization = () => fhir.requests[fhir.requests.length - 1]?.authorization;
  const read = async (port: number, headers: Record<string, string> = {}) => {
    const deadline = Date.now() + 15_000;
    for (;;) {
      try {
        const response = await fetch(`http://127.0.0.1:${port}/Patient/accepted`, { headers });
        return {
          status: response.status,
          type: response.headers.get("content-type"),
          challenge: response.headers.get("www-authenticate"),
          json: (await response.json()) as { resourceType: string; issue?: Array<{ code: string }> },
        };
      } catch (error) {
        if (Date.now() > deadline) throw error;
        await new Promise((resolve) => setTimeout(resolve, 250));
      }
    }
  };

  test("Basic, Bearer and cloud-signed clients; refusals are OperationOutcomes with a challenge; the client's identity reaches the backend, or the export's own", async () => {
    const missing = await read(clientIdentityPort);
    assert.equal(missing.status, 401);
    assert.match(missing.type ?? "", /^application\/fhir\+json/);
    assert.equal(missing.json.resourceType, "OperationOutcome");
    assert.equal(missing.json.issue?.[0]?.code, "login");
    assert.match(missing.challenge ?? "", /Basic realm="warden"/);
    const wrong = await read(clientIdentityPort, { authorization: basic(alice.uid, "wrong") });
    assert.equal(wrong.status, 401);
    assert.equal(wrong.json.resourceType, "OperationOutcome");
    assert.equal((await read(clientIdentityPort, { authorization: "Digest x" })).status, 401);
    assert.equal(fhir.requests.length, 0, "no refused client reached the backend");

    const asAlice = basic(alice.uid, alice.password);
    const allowed = await read(clientIdentityPort, { authorization: asAlice });
    assert.equal(allowed.status, 200, JSON.stringify(allowed.json));
    assert.equal(allowed.json.resourceType, "Patient");
    assert.equal(lastAuthorization(), asAlice, "without export credentials the client's identity reaches the backend");
    const token = await provider.jwtToken();
    assert.equal((await read(clientIdentityPort, { authorization: `Bearer ${token}` })).status, 200);
    assert.equal(lastAuthorization(), `Bearer ${token}`);

    // Signed with the cloud profile's id and key (curl signs): admitted, and the signature is not passed on.
    // The FHIR server runs in this process: curl runs asynchronously so that it can answer.
    const signedStatus = async (key: string) =>
      (
        await promisify(execFile)("curl", [
          "-s",
          "-o",
          "/dev/null",
          "-w",
          "%{http_code}",
          "--aws-sigv4",
          `aws:amz:${signing.region}:warden`,
          "--user",
          `${signing.id}:${key}`,
          `http://127.0.0.1:${clientIdentityPort}/Patient/accepted`,
        ])
      ).stdout;
    assert.equal(await signedStatus(signing.key), "200");
    assert.equal(lastAuthorization(), undefined, "a signature made for the export is not the backend's");
    assert.equal(await signedStatus("wrong-key"), "401");

    // With the export's own credentials: the backend sees them whoever the client is.
    assert.equal((await read(exportIdentityPort, { authorization: asAlice })).status, 200);
    assert.equal(lastAuthorization(), basic(backendIdentity.user, backendIdentity.password));
    assert.equal((await read(exportIdentityPort)).status, 401, "export credentials never stand in for a missing client identity");

    const audit = await storedMessages<AuditRecord>(nc, "WARDEN_AUDIT", "warden.audit.fhir.>");
    assert.ok(audit.some((m) => m.data.event === "connection.authenticated" && m.subject === "warden.audit.fhir.info"));
    assert.ok(audit.some((m) => m.data.event === "connection.denied" && m.subject === "warden.audit.fhir.warn"));
    // Spec 6 item 4: the backend connections, each with the identity it carried (once per connection and identity).
    const outgoing = audit
      .filter((m) => m.data.event === "connection.outgoing")
      .map((m) => m.data.details as { exportId: string; endpoint: string; identity: string | null; identitySource: string });
    const endpoint = `127.0.0.1:${fhir.listeningPort}`;
    assert.ok(
      outgoing.every((record) => record.endpoint === endpoint),
      JSON.stringify(outgoing),
    );
    const identities = (exportId: string) => new Set(outgoing.filter((record) => record.exportId === exportId).map((r) => `${r.identitySource}:${r.identity}`));
    assert.deepEqual(identities(clientExportId), new Set([`client:${alice.uid}`, `client:${provider.client.id}`, "none:null"]));
    assert.deepEqual(identities(exportExportId), new Set([`export:${backendIdentity.user}`]));
    const text = JSON.stringify(audit);
    for (const secret of [alice.password, signing.key, backendIdentity.password]) assert.ok(!text.includes(secret), `'${secret}' appears in the audit log`);
  });
  test("a verified caller without fhir:read gets a 403 OperationOutcome (forbidden) and nothing reaches the backend", async () => {
    const before = fhir.requests.length;
    const denied = await read(clientIdentityPort, { authorization: basic(bob.uid, bob.password) });
    assert.equal(denied.status, 403);
    assert.equal(denied.json.resourceType, "OperationOutcome");
    assert.equal(denied.json.issue?.[0]?.code, "forbidden");
    assert.equal(fhir.requests.length, before, "the backend was not asked");
    assert.equal((await read(clientIdentityPort, { authorization: basic(alice.uid, alice.password) })).status, 200, "alice holds fhir:read");
  });

  test("a caller holding fhir:read only cannot write through a fragment in the target (POST /Patient#/_search was checked as a search and served as a create)", async () => {
    const [writablePort] = await freePorts(1);
    const created = await call("PUT", "/export", {
      type: "fhir",
      endpoint: fhir.base,
      resolverGroup: "fhir-clinical",
      metadata: { type: "platformUse", purposeId: "service" },
      port: writablePort,
      credentials: backendIdentity,
      allowWrites: true,
    });
    assert.equal(created.status, 200, JSON.stringify(created.body));
    await read(writablePort, { authorization: basic(alice.uid, alice.password) });
    const patient = JSON.stringify({ resourceType: "Patient", name: [{ family: "Written-by-a-reader" }] });
    const written = async () =>
      (await fhir.repo.searchResources({ resourceType: "Patient", filters: [{ code: "family", operator: "eq", value: "Written-by-a-reader" }] })).length;
    /** A POST with a raw target (fetch would drop the fragment; Node's HTTP client sends it as given). */
    const post = (port: number, target: string, authorization: string, body: string) =>
      new Promise<{ status: number; text: string }>((resolve, reject) => {
        const outgoing = httpRequest(
          { host: "127.0.0.1", port, method: "POST", path: target, headers: { authorization, "content-type": "application/fhir+json" } },
          (response) => {
            let text = "";
            response.setEncoding("utf8").on("data", (chunk) => (text += chunk));
            response.on("end", () => resolve({ status: response.statusCode ?? 0, text }));
          },
        );
        outgoing.on("error", reject);
        outgoing.end(body);
      });
    const asCarol = basic(carol.uid, carol.password);

    // Directly, the backend takes the create (it knows nothing of warden's permissions).
    const direct = await post(Number(new URL(fhir.base).port), `${new URL(fhir.base).pathname.replace(/\/$/, "")}/Patient#/_search`, asCarol, patient);
    assert.equal(direct.status, 201, direct.text);
    assert.equal(await written(), 1, "the backend created the patient");

    const before = fhir.requests.length;
    assert.equal((await post(writablePort, "/Patient", asCarol, patient)).status, 403, "a plain create needs fhir:write");
    for (const target of ["/Patient#/_search", "/Patient%23/_search", "/#/_search"]) {
      const refused = await post(
        writablePort,
        target,
        asCarol,
        target === "/#/_search" ? JSON.stringify({ resourceType: "Bundle", type: "transaction", entry: [] }) : patient,
      );
      assert.ok(refused.status === 400 || refused.status === 403 || refused.status === 404, `${target}: ${refused.status} ${refused.text}`);
      assert.equal((JSON.parse(refused.text) as { resourceType: string }).resourceType, "OperationOutcome");
    }
    assert.equal(fhir.requests.length, before, "no refused request reached the backend");
    assert.equal(await written(), 1, "nothing was written through the export");
    // A writer still writes.
    assert.equal((await post(writablePort, "/Patient", basic(alice.uid, alice.password), patient)).status, 201);
    assert.equal(await written(), 2);
  });
});
