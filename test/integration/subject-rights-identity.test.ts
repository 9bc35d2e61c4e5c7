import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import type { NatsConnection } from "@nats-io/transport-node";
import type { AuditRecord } from "../../actors/runtime/event-log";
import type { NatsServerProcess } from "../../service/nats-server";
import { realisticPolicy } from "../../testkit/policy";
import { call } from "../../testkit/http";
import { connectTo, startNats } from "../../testkit/nats";
import { NodeProcess } from "../../testkit/node-process";
import { ldapSecurityFile, SlapdServer } from "../../testkit/slapd";
import { OidcProvider } from "../helpers/oidc";
import { tempDir } from "../../testkit/temp";

const people = {
  root: { uid: "root", password: "root-pw" },
  alice: { uid: "alice", password: "alice-pw" },
  bob: { uid: "bob", password: "bob-pw" },
  gina: { uid: "gina", password: "gina-pw" },
};
const basic = ({ uid, password }: { uid: string; password: string }) => ({ authorization: `Basic ${Buffer.from(`${uid}:${password}`).toString("base64")}` });

/**
 * Item 3 of issue 25: with authentication and authorization enforced on /user, a verified subject reads its own report only
 * (LDAP uid = userId; OAuth claim `email` = userId); an admin reads any.
 */
describe("subject rights by caller identity (LDAP uid and an OAuth claim mapped to userId: slapd, oidc-provider)", () => {
  let slapd: SlapdServer;
  let nats: NatsServerProcess;
  let node: NodeProcess;
  let nc: NatsConnection;
  let provider: OidcProvider;
  const audits: AuditRecord[] = [];

  before(async () => {
    slapd = await SlapdServer.start({ suffix: "dc=example,dc=org", users: Object.values(people), groups: [{ cn: "wardenAdmins", members: ["root"] }] });
    [nats, provider] = await Promise.all([startNats(), OidcProvider.start()]);
    nc = await connectTo(nats.url);
    nc.subscribe("warden.audit.user.>", {
      callback: (_error, msg) => {
        audits.push(msg.json<AuditRecord>());
      },
    });
    const file = ldapSecurityFile(tempDir("subject-identity"), slapd, ["user"], {
      groups: true,
      sections: {
        authorization: { rules: [{ name: "admins", ldapGroups: ["wardenAdmins"], permissions: ["*:admin"] }] },
        identityMapping: { ldap: { from: "uid" }, oauth: { claim: "email" } },
      },
      verifiers: [
        {
          verifier: "oauth",
          profiles: [{ profile: "idp", configuration: { serverMetadataUrl: provider.metadataUrl, resourceServerId: OidcProvider.resource } }],
        },
      ],
      credentials: [{ type: "rawBearerToken", verifiers: [{ verifier: "oauth", profile: "idp" }] }],
    });
    node = await NodeProcess.start({ nodeId: "subject-identity", natsUrl: nats.url, env: { SECURITY_CONFIG: file } });
    assert.equal((await call(node, "PUT", "/config", realisticPolicy())).status, 200);
    for (const userId of ["alice", "bob"]) {
      assert.equal((await call(node, "PUT", "/user", { userId, attributes: { dob: "1990-01-01", location: "US" } }, basic(people.root))).status, 200);
      assert.equal((await call(node, "PUT", "/decision", { userId, type: "platformUse", purposeId: "service" })).status, 200);
    }
    // gina is the guardian of kid (a child, no LDAP account of its own).
    const childDob = `${new Date().getUTCFullYear() - 9}-01-01`;
    for (const [userId, dob] of [
      ["gina", "1980-01-01"],
      ["kid", childDob],
    ])
      assert.equal((await call(node, "PUT", "/user", { userId, attributes: { dob, location: "US" } }, basic(people.root))).status, 200);
    assert.equal((await call(node, "PUT", "/user/terms?userId=kid&acceptorId=gina", undefined, basic(people.root))).status, 200);
  });

  after(async () => {
    await nc?.close();
    await node?.stop();
    await nats?.stop();
    await slapd?.stop();
    await provider?.stop();
  });

  test("a subject reads its own report; another's is refused 403 and audited; an admin reads any; no credentials: 401", async () => {
    const own = await call(node, "GET", "/user/alice/report", undefined, basic(people.alice));
    assert.equal(own.status, 200, JSON.stringify(own.body));
    assert.equal(own.body.decisions.total, 1);
    const other = await call(node, "GET", "/user/bob/report", undefined, basic(people.alice));
    assert.equal(other.status, 403);
    assert.equal(other.body.error.code, "ERR_USER_NOT_YOURS");
    assert.equal(typeof other.body.decisions, "undefined", "nothing of bob's report is answered");
    const asAdmin = await call(node, "GET", "/user/bob/report", undefined, basic(people.root));
    assert.equal(asAdmin.status, 200);
    assert.equal((await call(node, "GET", "/user/alice/report")).status, 401);
    await new Promise((resolve) => setTimeout(resolve, 200));
    assert.ok(audits.some((r) => r.event === "report.refused" && (r.details as { userId: string; by: string }).by === "alice"));
    assert.ok(audits.some((r) => r.event === "report.read" && (r.details as { userId: string; by: string }).by === "root"));
  });

  test("a subject restricts its own data only", async () => {
    const other = await call(node, "PUT", "/user/bob/restriction", {}, basic(people.alice));
    assert.equal(other.status, 403);
    assert.equal(other.body.error.code, "ERR_USER_NOT_YOURS");
    const own = await call(node, "PUT", "/user/alice/restriction", {}, basic(people.alice));
    assert.equal(own.status, 200, JSON.stringify(own.body));
    assert.equal(own.body.by, "alice");
  });

  test("a guardian reads and restricts a linked child's report as themself; naming a guardian one is not is refused and audited", async () => {
    const asGuardian = await call(node, "GET", "/user/kid/report?actorId=gina", undefined, basic(people.gina));
    assert.equal(asGuardian.status, 200, JSON.stringify(asGuardian.body));
    assert.equal(asGuardian.body.guardianId, "gina");
    // alice claims to be gina: the identity mapping says she is alice, whatever actorId says.
    const impersonating = await call(node, "GET", "/user/kid/report?actorId=gina", undefined, basic(people.alice));
    assert.equal(impersonating.status, 403);
    assert.equal(impersonating.body.error.code, "ERR_USER_NOT_YOURS");
    // bob is bob, but no guardian of kid.
    const notLinked = await call(node, "GET", "/user/kid/report?actorId=bob", undefined, basic(people.bob));
    assert.equal(notLinked.status, 403);
    assert.equal(notLinked.body.error.code, "ERR_USER_GUARDIAN_INVALID");
    const noActor = await call(node, "GET", "/user/kid/report", undefined, basic(people.gina));
    assert.equal(noActor.status, 403, "a guardian names themself as actorId: gina is not kid");
    assert.equal((await call(node, "PUT", "/user/kid/restriction", { actorId: "gina" }, basic(people.alice))).status, 403);
    const restricted = await call(node, "PUT", "/user/kid/restriction", { actorId: "gina" }, basic(people.gina));
    assert.equal(restricted.status, 200, JSON.stringify(restricted.body));
    assert.equal(restricted.body.by, "gina");
    await new Promise((resolve) => setTimeout(resolve, 200));
    const refused = audits
      .filter((r) => r.event === "report.refused" && (r.details as { userId: string }).userId === "kid")
      .map((r) => (r.details as { by: string }).by);
    assert.ok(refused.includes("alice"), JSON.stringify(refused));
    assert.ok(audits.some((r) => r.event === "report.read" && (r.details as { userId: string; guardianId: string }).guardianId === "gina"));
    assert.ok(audits.some((r) => r.event === "user.restricted" && (r.details as { userId: string; actorId: string }).actorId === "gina"));
  });

  test("an OAuth token's mapped claim is the user: its own report only; a token without the claim is no user", async () => {
    const bearer = async (claims: Record<string, unknown>) => ({ authorization: `Bearer ${await provider.sign({ sub: "client-of-bob", ...claims })}` });
    const own = await call(node, "GET", "/user/bob/report", undefined, await bearer({ email: "bob" }));
    assert.equal(own.status, 200, JSON.stringify(own.body));
    assert.equal(own.body.userId, "bob");
    const another = await call(node, "GET", "/user/alice/report", undefined, await bearer({ email: "bob" }));
    assert.equal(another.status, 403);
    assert.equal(another.body.error.code, "ERR_USER_NOT_YOURS");
    // The subject is no user: only the mapped claim is.
    const bySubject = await call(node, "GET", "/user/bob/report", undefined, await bearer({ sub: "bob" }));
    assert.equal(bySubject.status, 403, JSON.stringify(bySubject.body));
    assert.equal(bySubject.body.error.code, "ERR_USER_NOT_YOURS");
    const notAString = await call(node, "GET", "/user/bob/report", undefined, await bearer({ email: ["bob"] }));
    assert.equal(notAString.status, 403);
  });
});
