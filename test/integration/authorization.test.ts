import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { Agent, request as httpRequest } from "node:http";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { promisify } from "node:util";
import { headers as natsHeaders, type NatsConnection } from "@nats-io/transport-node";
import type { AuditRecord } from "../../actors/runtime/event-log";
import type { NatsServerProcess } from "../../service/nats-server";
import { realisticPolicy } from "../../testkit/policy";
import { createPopulation } from "../fixtures/population";
import { connectTo, startNats, storedMessages, storedTraceRecords } from "../../testkit/nats";
import { NodeProcess } from "../../testkit/node-process";
import { OidcProvider } from "../helpers/oidc";
import { SlapdServer } from "../../testkit/slapd";
import { tempDir } from "../../testkit/temp";
import { call as callNode, type Answer } from "../../testkit/http";
import { listening, until } from "../../testkit/wait";
import { freePort } from "../../testkit/ports";

const run = promisify(execFile);
const cloud = { id: "AKIDCI", key: "ci-secret-key", region: "eu-west-1" };
const users = {
  root: { uid: "root", password: "root-pw" },
  ed: { uid: "ed", password: "ed-pw" },
  rita: { uid: "rita", password: "rita-pw" },
  cfg: { uid: "cfg", password: "cfg-pw" },
};
/** The partners' directory: another 'ed', selected on the name partners.example.org (profile "partners"). */
const partnersName = "partners.example.org";
const partnerEd = { uid: "ed", password: "partner-ed-pw" };

function securityConfig(ldapPort: number, provider: OidcProvider, partnersPort: number) {
  return {
    verifiers: [
      {
        verifier: "ldap",
        default: "directory",
        profiles: [
          {
            profile: "directory",
            configuration: {
              hostname: `127.0.0.1:${ldapPort}`,
              rootComponents: "ou=people,dc=example,dc=org",
              groupSearch: { base: "ou=groups,dc=example,dc=org", filter: "(&(objectClass=groupOfNames)(member={dn}))", attribute: "cn" },
            },
          },
          { profile: "partners", configuration: { hostname: `127.0.0.1:${partnersPort}`, rootComponents: "ou=people,dc=partners,dc=org" } },
        ],
      },
      {
        verifier: "oauth",
        profiles: [
          { profile: "idp", configuration: { serverMetadataUrl: provider.metadataUrl, resourceServerId: OidcProvider.resource, clientRequestTimeout: 5 } },
        ],
      },
      { verifier: "cloud", profiles: [{ profile: "ci", configuration: cloud }] },
    ],
    credentials: [
      {
        type: "namepwd",
        verifiers: [
          { verifier: "ldap", default: true },
          { verifier: "ldap", profile: "partners", selectors: { domainName: partnersName } },
        ],
      },
      { type: "rawBearerToken", verifiers: [{ verifier: "oauth", profile: "idp" }] },
      { type: "cloudSigningCredentials", verifiers: [{ verifier: "cloud", profile: "ci" }] },
    ],
    enforcedComponents: [{ componentType: "api" }, { componentName: "pipeline" }],
    authorization: {
      rules: [
        { name: "admins", ldapGroups: ["wardenAdmins"], permissions: ["*:admin"] },
        { name: "editors", ldapGroups: ["editors"], permissions: ["config:write", "mapping:write", "user:write", "export:write", "redact:write"] },
        { name: "readers", scopes: ["read"], permissions: ["config:read", "mapping:read", "user:read", "export:read"] },
        { name: "clinicians", claims: [{ name: "roles", values: ["clinician"] }], permissions: ["decision:query", "redact:own", "pipeline:read"] },
        { name: "ci", cloudKeyIds: [cloud.id], permissions: ["export:read"] },
        { name: "config admins", ldapUsers: ["cfg"], permissions: ["config:admin"] },
        { name: "partner staff", ldapUsers: ["ed"], profiles: ["partners"], permissions: ["redact:own"] },
      ],
    },
  };
}

const basic = ({ uid, password }: { uid: string; password: string }) => ({ authorization: `Basic ${Buffer.from(`${uid}:${password}`).toString("base64")}` });

describe("authorization: rules by LDAP group (slapd), OAuth scope and claim (oidc-provider), cloud key id (curl --aws-sigv4)", () => {
  let slapd: SlapdServer;
  let partnersSlapd: SlapdServer;
  let provider: OidcProvider;
  let nats: NatsServerProcess;
  let nc: NatsConnection;
  let node: NodeProcess;
  const callers: Record<string, Record<string, string>> = {};

  const call = (method: string, path: string, body: unknown, headers: Record<string, string>): Promise<Answer> => callNode(node, method, path, body, headers);

  /** A request signed by curl, the real SigV4 client. */
  async function curlSigned(method: string, path: string): Promise<number> {
    const { stdout } = await run("curl", [
      "-sS",
      "--max-time",
      "10",
      "-X",
      method,
      "--aws-sigv4",
      `aws:amz:${cloud.region}:warden`,
      "--user",
      `${cloud.id}:${cloud.key}`,
      "-o",
      "/dev/null",
      "-w",
      "%{http_code}",
      `${node.url}${path}`,
    ]);
    return Number(stdout);
  }

  before(async () => {
    const dir = tempDir("authorization");
    slapd = await SlapdServer.start({
      suffix: "dc=example,dc=org",
      users: Object.values(users),
      groups: [
        { cn: "wardenAdmins", members: ["root"] },
        { cn: "editors", members: ["ed"] },
        { cn: "bystanders", members: ["rita"] },
      ],
    });
    partnersSlapd = await SlapdServer.start({ suffix: "dc=partners,dc=org", users: [partnerEd] });
    provider = await OidcProvider.start();
    nats = await startNats();
    nc = await connectTo(nats.url);
    const file = join(dir, "security.json");
    writeFileSync(file, JSON.stringify(securityConfig(slapd.port, provider, partnersSlapd.port)));
    // The partners' profile is selected by domain name: a name of the node, which ALLOWED_HOSTS must say on loopback.
    node = await NodeProcess.start({ nodeId: "authz-1", natsUrl: nats.url, env: { SECURITY_CONFIG: file, ALLOWED_HOSTS: partnersName } });
    callers.root = basic(users.root);
    callers.ed = basic(users.ed);
    callers.rita = basic(users.rita);
    callers.cfg = basic(users.cfg);
    // A token the real provider issued with scope "read" only.
    callers.reader = { authorization: `Bearer ${await provider.jwtToken("read")}` };
    // A token of the provider's key with a roles claim and no scope the rules name.
    callers.clinician = { authorization: `Bearer ${await provider.sign({ sub: "dr-who", scope: "openid", roles: ["nurse", "clinician"] })}` };
    assert.equal((await call("PUT", "/config", realisticPolicy(), callers.root)).status, 200);
    await createPopulation((method, path, body) => call(method, path, body, callers.root));
  });

  after(async () => {
    await nc?.close();
    await node?.stop();
    await nats?.stop();
    await provider?.stop();
    await slapd?.stop();
    await partnersSlapd?.stop();
  });

  test("each permission of each component: allowed for the caller a rule grants it, 403 ERR_AUTH_FORBIDDEN for one it does not", async () => {
    const decision = { userId: "accepted", type: "platformUse", purposeId: "service" };
    const record = { "users.id": "accepted", "users.email": "a@example.org" };
    // [permission, method, path, body, allowed caller, its status, denied caller]
    const cases: Array<[string, string, string, unknown, string, number, string]> = [
      ["config:read", "GET", "/config", undefined, "reader", 200, "rita"],
      ["config:write", "DELETE", "/config/categories/no-such-category", undefined, "ed", 404, "reader"],
      ["config:admin", "PUT", "/config", realisticPolicy(), "root", 200, "ed"],
      ["mapping:read", "GET", "/mapping/groups", undefined, "reader", 200, "clinician"],
      ["mapping:write", "DELETE", "/mapping/groups/no-such-group", undefined, "ed", 404, "reader"],
      ["user:read", "GET", "/user/accepted", undefined, "reader", 200, "rita"],
      ["user:read (a query by PUT)", "PUT", "/user/terms/query", {}, "reader", 200, "clinician"],
      ["user:write", "PUT", "/user/terms?userId=accepted", undefined, "ed", 200, "reader"],
      ["user:admin", "DELETE", "/user/no-such-user", undefined, "root", 404, "ed"],
      ["export:read", "GET", "/export", undefined, "reader", 200, "rita"],
      ["export:write", "DELETE", "/export?id=no-such-export", undefined, "ed", 404, "reader"],
      ["decision:query", "PUT", "/decision", decision, "clinician", 200, "reader"],
      ["decision:query (admin includes it)", "PUT", "/decision", decision, "root", 200, "ed"],
      ["redact:own", "PUT", `/redact/record?purposeId=service&type=platformUse&mappingGroup=users-table`, record, "clinician", 200, "reader"],
      ["redact:own (listing)", "GET", "/redact/jobs", undefined, "ed", 200, "rita"],
    ];
    for (const [permission, method, path, body, allowed, status, denied] of cases) {
      const yes = await call(method, path, body, callers[allowed]!);
      assert.equal(yes.status, status, `${permission} for ${allowed}: ${JSON.stringify(yes.body)}`);
      const no = await call(method, path, body, callers[denied]!);
      assert.equal(no.status, 403, `${permission} for ${denied}: ${JSON.stringify(no.body)}`);
      assert.equal(no.body.error.code, "ERR_AUTH_FORBIDDEN", permission);
      assert.equal(`${no.body.error.details.component}:${no.body.error.details.action}`, permission.split(" ")[0]);
    }
    // The cloud key id's rule: export:read and nothing else.
    assert.equal(await curlSigned("GET", "/export"), 200);
    assert.equal(await curlSigned("DELETE", "/export?id=no-such-export"), 403);
    assert.equal(await curlSigned("GET", "/config"), 403);
  });

  test("config:admin replaces the whole configuration but changes mapping groups only with mapping:write (audited denial, nothing changed)", async () => {
    const current = await call("GET", "/config", undefined, callers.cfg);
    assert.equal(current.status, 200);
    const again = await call("PUT", "/config", current.body, callers.cfg);
    assert.deepEqual([again.status, again.body.changed], [200, false], "the same configuration, mapping groups as they are");
    const renamedCategory = structuredClone(current.body);
    renamedCategory.categories[0].name = `${renamedCategory.categories[0].name} (renamed)`;
    const otherChange = await call("PUT", "/config", renamedCategory, callers.cfg);
    assert.deepEqual([otherChange.status, otherChange.body.changed], [200, true], "other sections change with config:admin alone");
    const planted = structuredClone(renamedCategory);
    planted.mappingGroups = [...planted.mappingGroups, { ...planted.mappingGroups[0], name: "planted" }];
    const refused = await call("PUT", "/config", planted, callers.cfg);
    assert.equal(refused.status, 403, JSON.stringify(refused.body));
    assert.equal(refused.body.error.code, "ERR_AUTH_FORBIDDEN");
    assert.match(refused.body.error.message, /mapping:write/);
    const emptied = await call("PUT", "/config", { ...renamedCategory, mappingGroups: [] }, callers.cfg);
    assert.equal(emptied.status, 403, "removing every group is a change too");
    const after = await call("GET", "/config", undefined, callers.root);
    assert.deepEqual(after.body, renamedCategory, "nothing changed");
    const denials = (await storedMessages<AuditRecord>(nc, "WARDEN_AUDIT", "warden.audit.config.warn"))
      .map(({ data }) => data)
      .filter((record) => record.event === "connection.forbidden" && record.details?.subject === "cfg");
    assert.equal(denials.length, 2, "each refusal is audited");
    assert.deepEqual({ component: denials[0]!.details!.component, action: denials[0]!.details!.action }, { component: "mapping", action: "write" });
    // A caller with mapping:write (root: *:admin) changes them.
    const byRoot = await call("PUT", "/config", planted, callers.root);
    assert.deepEqual([byRoot.status, byRoot.body.changed], [200, true]);
    assert.equal((await call("PUT", "/config", current.body, callers.root)).status, 200);
  });

  test("an export door: a pipeline export's records need pipeline:read, over HTTP and over NATS", async () => {
    const port = await freePort();
    const created = await call(
      "PUT",
      "/export",
      { type: "pipeline", resolverGroup: "users-table", metadata: { type: "platformUse", purposeId: "service" }, port },
      callers.ed,
    );
    assert.equal(created.status, 200, JSON.stringify(created.body));
    await until("the pipeline door listens", () => listening(port));
    const post = async (who: string) => {
      const response = await fetch(`http://127.0.0.1:${port}/`, {
        method: "POST",
        headers: { ...callers[who], "content-type": "application/json" },
        body: JSON.stringify({ "users.id": "accepted", "users.email": "a@example.org" }),
      });
      return { status: response.status, body: (await response.json()) as { error?: { code: string } } };
    };
    const allowed = await post("clinician");
    assert.equal(allowed.status, 200, JSON.stringify(allowed.body));
    for (const who of ["reader", "ed"]) {
      const denied = await post(who);
      assert.equal(denied.status, 403, who);
      assert.equal(denied.body.error?.code, "ERR_AUTH_FORBIDDEN", who);
    }
    const id = (created.body as { id: string }).id;
    const ask = async (who: string) => {
      const h = natsHeaders();
      h.set("Authorization", callers[who]!.authorization!);
      const answer = await nc.request(`warden.pipeline.${id}.request`, JSON.stringify({ "users.id": "accepted", "users.email": "a@example.org" }), {
        timeout: 5000,
        headers: h,
      });
      return answer.json<{ dropped: boolean; error?: { code: string } }>();
    };
    assert.equal((await ask("clinician")).dropped, false);
    for (const who of ["reader", "ed"]) assert.equal((await ask(who)).error?.code, "ERR_AUTH_FORBIDDEN", who);
    assert.equal((await call("DELETE", `/export?id=${id}`, undefined, callers.ed)).status, 200);
  });

  test("a door's identity (its signing id and key, its token audience) is chosen with export:admin only: a rule's key id is not export:write's to mint", async () => {
    const base = { type: "pipeline", resolverGroup: "users-table", metadata: { type: "platformUse", purposeId: "service" } };
    for (const identity of [
      { cloudSigning: { id: cloud.id, key: "minted-key" } },
      { cloudSigning: { key: "minted-key" } },
      { resourceServerId: "urn:minted" },
    ]) {
      const refused = await call("PUT", "/export", { ...base, ...identity }, callers.ed);
      assert.equal(refused.status, 403, JSON.stringify(identity));
      assert.equal(refused.body.error.code, "ERR_AUTH_FORBIDDEN");
      assert.match(refused.body.error.message, /needs export:admin/);
    }
    assert.ok(
      !((await call("GET", "/export", undefined, callers.root)).body.exports as Array<{ cloudSigning?: unknown }>).some((view) => view.cloudSigning),
      "none was made",
    );
    const denials = (await storedMessages<AuditRecord>(nc, "WARDEN_AUDIT", "warden.audit.export.warn"))
      .map(({ data }) => data)
      .filter((record) => record.event === "connection.forbidden" && record.details?.subject === "ed");
    assert.equal(denials.length, 3);
    // A region only is no identity; an export:admin sets the identity.
    const regionOnly = await call("PUT", "/export", { ...base, cloudSigning: { region: "eu-west-1" } }, callers.ed);
    assert.equal(regionOnly.status, 200, JSON.stringify(regionOnly.body));
    const byAdmin = await call("PUT", "/export", { ...base, cloudSigning: { id: "AKIDOWN", key: "own-key" } }, callers.root);
    assert.equal(byAdmin.status, 200, JSON.stringify(byAdmin.body));
    for (const created of [regionOnly, byAdmin]) assert.equal((await call("DELETE", `/export?id=${created.body.id}`, undefined, callers.root)).status, 200);
  });

  test("a denial is audited with subject, component, action and the rules that matched the caller", async () => {
    const denied = await call("DELETE", "/user/accepted", undefined, callers.ed);
    assert.equal(denied.status, 403);
    assert.equal((await call("GET", "/user/accepted", undefined, callers.root)).status, 200, "nothing was erased");
    const forbidden = async () =>
      (await storedMessages<AuditRecord>(nc, "WARDEN_AUDIT", "warden.audit.user.warn"))
        .map(({ data }) => data)
        .filter((record) => record.event === "connection.forbidden" && record.details?.subject === "ed" && record.details?.action === "admin");
    // audit() returns once JetStream stored the record, before the 403 left.
    const records = await forbidden();
    assert.ok(records.length > 0, "the denial is in the audit stream");
    assert.deepEqual(
      { component: records[0]!.details!.component, action: records[0]!.details!.action, matchedRules: records[0]!.details!.matchedRules },
      { component: "user", action: "admin", matchedRules: ["editors"] },
    );
  });

  test("another caller's redaction job is invisible: listed, read, downloaded and deleted only by its creator or a redact:admin", async () => {
    const upload = await fetch(`${node.url}/redact/document?purposeId=service&type=platformUse&mappingGroup=users-table`, {
      method: "PUT",
      headers: { ...callers.ed, "content-type": "text/csv" },
      body: "users.id,users.email\naccepted,a@example.org\n",
    });
    assert.equal(upload.status, 200, await upload.clone().text());
    const { jobName } = (await upload.json()) as { jobName: string };
    const listed = async (who: string) =>
      ((await call("GET", "/redact/jobs", undefined, callers[who]!)).body.jobs as Array<{ jobName: string }>).map((job) => job.jobName);
    await until("the job is complete", async () => (await call("GET", `/redact/stats?jobName=${jobName}`, undefined, callers.ed)).status === 200);
    assert.ok((await listed("ed")).includes(jobName));
    assert.ok((await listed("root")).includes(jobName), "redact:admin sees every job");
    assert.ok(!(await listed("clinician")).includes(jobName), "another caller with redact:own does not see it");
    for (const path of [`/redact/stats?jobName=${jobName}`, `/redact/progress?jobName=${jobName}`, `/redact/document?jobName=${jobName}`]) {
      const other = await call("GET", path, undefined, callers.clinician);
      assert.equal(other.status, 404, path);
      assert.equal(other.body.error.code, "ERR_REDACT_JOB_NOT_FOUND", path);
    }
    assert.equal((await call("DELETE", `/redact/document?jobName=${jobName}`, undefined, callers.clinician)).status, 404);
    const own = await fetch(`${node.url}/redact/document?jobName=${jobName}`, { headers: callers.ed });
    assert.equal(own.status, 200);
    assert.match(await own.text(), /a@example.org/);
    assert.equal((await call("GET", `/redact/progress?jobName=${jobName}`, undefined, callers.root)).status, 200);
    assert.equal((await call("DELETE", `/redact/document?jobName=${jobName}`, undefined, callers.ed)).status, 200);
  });

  test("one user name in two directories is two callers: the partners' 'ed' sees none of corp's ed's jobs, and sees its own on a kept-alive connection", async () => {
    // One keep-alive connection per caller: after the first request the node answers from the outcome it remembered for the connection.
    const partnerAgent = new Agent({ keepAlive: true, maxSockets: 1 });
    const partner = (method: string, path: string, body?: string) =>
      new Promise<{ status: number; body: Record<string, unknown> }>((resolve, reject) => {
        const url = new URL(`${node.url}${path}`);
        const req = httpRequest(
          {
            host: url.hostname,
            port: url.port,
            path: `${url.pathname}${url.search}`,
            method,
            agent: partnerAgent,
            headers: { host: partnersName, ...basic(partnerEd), ...(body === undefined ? {} : { "content-type": "text/csv" }) },
          },
          (res) => {
            let text = "";
            res.setEncoding("utf8");
            res.on("data", (piece: string) => (text += piece));
            res.on("end", () => resolve({ status: res.statusCode ?? 0, body: text.startsWith("{") ? JSON.parse(text) : { text } }));
          },
        );
        req.on("error", reject);
        req.end(body);
      });
    const upload = (as: "corp" | "partner") => {
      const path = "/redact/document?purposeId=service&type=platformUse&mappingGroup=users-table";
      const csv = "users.id,users.email\naccepted,a@example.org\n";
      return as === "partner"
        ? partner("PUT", path, csv)
        : fetch(`${node.url}${path}`, { method: "PUT", headers: { ...callers.ed, "content-type": "text/csv" }, body: csv }).then(async (response) => ({
            status: response.status,
            body: (await response.json()) as Record<string, unknown>,
          }));
    };
    try {
      const corpJob = await upload("corp");
      assert.equal(corpJob.status, 200, JSON.stringify(corpJob.body));
      const partnerJob = await upload("partner");
      assert.equal(partnerJob.status, 200, JSON.stringify(partnerJob.body));
      const [corpName, partnerName] = [corpJob.body.jobName as string, partnerJob.body.jobName as string];
      await until(
        "both jobs are complete",
        async () =>
          (await call("GET", `/redact/stats?jobName=${corpName}`, undefined, callers.ed)).status === 200 &&
          (await partner("GET", `/redact/stats?jobName=${partnerName}`)).status === 200,
      );
      for (let round = 0; round < 2; round++) {
        const listed = ((await partner("GET", "/redact/jobs")).body.jobs as Array<{ jobName: string }>).map((job) => job.jobName);
        assert.ok(listed.includes(partnerName), `round ${round}: the partners' ed lists its own job`);
        assert.ok(!listed.includes(corpName), `round ${round}: and not corp's ed's`);
        const other = await partner("GET", `/redact/stats?jobName=${corpName}`);
        assert.equal(other.status, 404, `round ${round}`);
        assert.equal((other.body.error as { code: string }).code, "ERR_REDACT_JOB_NOT_FOUND");
      }
      assert.equal((await partner("DELETE", `/redact/document?jobName=${corpName}`)).status, 404);
      const corpList = ((await call("GET", "/redact/jobs", undefined, callers.ed)).body.jobs as Array<{ jobName: string }>).map((job) => job.jobName);
      assert.ok(corpList.includes(corpName) && !corpList.includes(partnerName), "corp's ed sees its job and not the partners' ed's");
      assert.equal((await partner("DELETE", `/redact/document?jobName=${partnerName}`)).status, 200);
      assert.equal((await call("DELETE", `/redact/document?jobName=${corpName}`, undefined, callers.ed)).status, 200);
    } finally {
      partnerAgent.destroy();
    }
  });

  test("one connection, one subject name through two verifiers: each identity's login is audited", async () => {
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    const get = (authorization: string) =>
      new Promise<{ status: number; connectionId: string }>((resolve, reject) => {
        const url = new URL(`${node.url}/config`);
        const req = httpRequest({ host: url.hostname, port: url.port, path: url.pathname, agent, headers: { authorization } }, (res) => {
          res.resume();
          res.on("end", () => resolve({ status: res.statusCode ?? 0, connectionId: String(res.headers["x-connection-id"]) }));
        });
        req.on("error", reject);
        req.end();
      });
    try {
      const token = await provider.sign({ sub: "cfg", scope: "read" });
      const ldap = await get(callers.cfg!.authorization!);
      const oauth = await get(`Bearer ${token}`);
      assert.deepEqual([ldap.status, oauth.status], [200, 200]);
      assert.equal(ldap.connectionId, oauth.connectionId, "one connection");
      const logins = (await storedMessages<AuditRecord>(nc, "WARDEN_AUDIT", "warden.audit.config.info"))
        .map(({ data }) => data)
        .filter((record) => record.event === "connection.authenticated" && record.connectionId === ldap.connectionId);
      assert.deepEqual(logins.map((record) => (record.details?.verifier as { verifier: string } | undefined)?.verifier).sort(), ["ldap", "oauth"]);
    } finally {
      agent.destroy();
    }
  });

  test("assertions enter decisions: a sharing purpose gated on a caller claim, decided for each caller, the trace naming the caller's assertions", async () => {
    const gated = realisticPolicy();
    gated.platformSharing.purposes.find((purpose) => purpose.stableId === "payments")!.callerAssertions = ["claim:roles=clinician"];
    assert.equal((await call("PUT", "/config", gated, callers.root)).status, 200);
    const query = { userId: "accepted", type: "platformSharing", purposeId: "payments", thirdPartyId: "payco" };
    const clinician = await call("PUT", "/decision", query, callers.clinician);
    assert.equal(clinician.status, 200, JSON.stringify(clinician.body));
    assert.equal(clinician.body.allowed, true, JSON.stringify(clinician.body));
    const admin = await call("PUT", "/decision", query, callers.root);
    assert.equal(admin.status, 200);
    assert.equal(admin.body.allowed, false);
    assert.equal(admin.body.reasons.at(-1).code, "CALLER_ASSERTION_MISSING");
    const traces = await storedTraceRecords<{ traceId: string; caller?: { subject: string; assertions: string[] } }>(nc);
    const callerOf = (traceId: string) => traces.find(({ record }) => record.traceId === traceId)?.record.caller;
    assert.deepEqual(callerOf(clinician.body.traceId)?.assertions, ["scope:openid", "claim:roles=nurse", "claim:roles=clinician"]);
    assert.deepEqual(callerOf(admin.body.traceId), { ...callerOf(admin.body.traceId)!, subject: "root", assertions: ["group:wardenAdmins"] });
    assert.equal((await call("PUT", "/config", realisticPolicy(), callers.root)).status, 200);
  });
});
