import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { GetObjectCommand, PutObjectCommand } from "@aws-sdk/client-s3";
import type { NatsConnection } from "@nats-io/transport-node";
import mysql from "mysql2/promise";
import { Client } from "pg";
import type { AuditRecord } from "../../actors/runtime/event-log";
import type { NatsServerProcess } from "../../service/nats-server";
import { fhirPolicy } from "../../testkit/policy";
import { createPopulation } from "../fixtures/population";
import { createMysqlPopulation, reader } from "../fixtures/mysql-population";
import { createAppDatabase, populationHba, roles, usersRows } from "../fixtures/postgres-population";
import { s3Client } from "../helpers/s3-client";
import { call as request, type Body } from "../../testkit/http";
import { FhirServerFixture } from "../../testkit/fhir-server";
import { MariaDbServer } from "../../testkit/mariadb";
import { connectTo, startNats, storedMessages } from "../../testkit/nats";
import { NodeProcess } from "../../testkit/node-process";
import { freePorts } from "../../testkit/ports";
import { PostgresServer } from "../../testkit/postgres";
import { S3Store, s3rverCredentials } from "../../testkit/s3";
import { listening, until } from "../../testkit/wait";

/**
 * How long a restriction may take to reach a running export (docs/subject-rights.md, "Restriction"): at once on the node
 * that wrote it, within a second on the others (their watch of user states). Data still flowing past it is a leak.
 */
const restrictionBoundMs = 1000;

/**
 * Asks `released` until the data is gone; fails if a request sent `restrictionBoundMs` or more after `since` still releases it
 * (one sent earlier may still be answered from before, whenever its answer arrives).
 */
async function goneWithinBound(what: string, since: number, released: () => Promise<boolean>): Promise<void> {
  for (;;) {
    const sentAt = Date.now();
    if (!(await released())) return;
    const late = sentAt - since;
    assert.ok(late < restrictionBoundMs, `${what}: a request sent ${late} ms after the restriction was answered still released the data`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

const research = { type: "consentedSharing", purposeId: "research", termsId: "research-study-1" };
const researchQuery = "purposeId=research&type=consentedSharing&termsId=research-study-1&mappingGroup=users-table";
/** The users of the restriction test and a value of theirs (usage: a category the research consent covers) each door holds. */
const clicks: Record<string, number> = { accepted: 101, "not-accepted": 102, guardian: 103, child: 104 };
const records = Object.entries(clicks).map(([id, n]) => ({ "users.id": id, "users.email": `${id}@example.com`, "users.clicks": n }));

/**
 * Decisions about users at every door (PostgreSQL, pipeline, MySQL, object-storage and FHIR exports, /decision, /redact,
 * document jobs), on two nodes: the report counts them, and a restriction (by the user or their guardian) holds at each
 * within the bound, on whichever node serves the export.
 */
describe("data-subject rights across the doors (issue 25)", () => {
  let nats: NatsServerProcess;
  let node: NodeProcess;
  let other: NodeProcess;
  let nc: NatsConnection;
  let pg: PostgresServer;
  let db: MariaDbServer;
  let store: S3Store;
  const fhir = new FhirServerFixture();
  let pgPort: number;
  let pipePort: number;
  let ports: Record<"mysql" | "objectstore" | "fhir", number>;
  const exportIds: Record<"postgres" | "pipeline" | "mysql" | "objectstore" | "fhir", string> = {
    postgres: "",
    pipeline: "",
    mysql: "",
    objectstore: "",
    fhir: "",
  };
  const call = (method: string, path: string, body?: unknown) => request(node, method, path, body);

  const clicksOf = async (port: number): Promise<unknown> => {
    const client = new Client({ host: "127.0.0.1", port, user: roles.scram.user, password: roles.scram.password, database: "app" });
    await client.connect();
    try {
      return (await client.query("SELECT id, clicks FROM users WHERE id = 'accepted'")).rows[0]?.clicks ?? null;
    } finally {
      await client.end();
    }
  };
  const pipeline = async (): Promise<Body> => {
    const response = await fetch(`http://127.0.0.1:${pipePort}/`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ "users.id": "accepted", "users.clicks": 7 }),
    });
    assert.equal(response.status, 200);
    return response.json();
  };
  const personalization = "purposeId=personalization&type=platformUse&mappingGroup=users-table";
  const group = (report: Body, door: string, exportId?: string, purposeId = "personalization") =>
    (report.decisions.byPurposeAndDoor as Body[]).filter((g) => g.door === door && g.purposeId === purposeId && g.exportId === exportId);
  const createExport = async (body: Record<string, unknown>): Promise<string> => {
    const created = await call("PUT", "/export", body);
    assert.equal(created.status, 200, JSON.stringify(created.body));
    await until(`the ${body.type} export listens`, () => listening(created.body.listen.port));
    return created.body.id;
  };

  before(async () => {
    [pg, db, store, nats] = await Promise.all([
      PostgresServer.start({ hba: populationHba }),
      MariaDbServer.start(),
      S3Store.start(["docs"]),
      startNats(),
      fhir.start(),
    ]);
    createAppDatabase(pg);
    await createMysqlPopulation(db);
    const [p1, p2, p3, p4, p5] = await freePorts(5);
    [pgPort, pipePort] = [p1!, p2!];
    ports = { mysql: p3!, objectstore: p4!, fhir: p5! };
    // Documents here are small: a reservation of the default 8 GiB could fail on a shared test machine's disk.
    const env = { REDACT_STORAGE_MAX_BYTES: String(64 * 1024 * 1024), REDACT_MAX_DOCUMENT_BYTES: String(1024 * 1024) };
    [node, other] = await NodeProcess.startAll(["rights-doors-1", "rights-doors-2"].map((nodeId) => ({ nodeId, natsUrl: nats.url, env })));
    nc = await connectTo(nats.url);
    assert.equal((await call("PUT", "/config", fhirPolicy())).status, 200);
    await createPopulation(call);
    assert.equal(
      (await call("PUT", "/user/consent", { userId: "accepted", consents: { affirmativeConsents: [{ purposeId: "personalization" }] } })).status,
      200,
    );
    const metadata = { type: "platformUse", purposeId: "personalization" };
    exportIds.postgres = await createExport({ type: "postgres", endpoint: `127.0.0.1:${pg.port}`, resolverGroup: "users-table", metadata, port: pgPort });
    exportIds.pipeline = await createExport({ type: "pipeline", resolverGroup: "users-table", metadata, port: pipePort });
  });

  after(async () => {
    await nc?.close();
    await Promise.all([node?.stop(), other?.stop()]);
    await Promise.all([nats?.stop(), pg?.stop(), db?.stop(), store?.stop(), fhir.stop()]);
  });

  test("the report matches the decisions made at a PostgreSQL export, a pipeline export, /decision and /redact; a restriction holds at every door", async () => {
    assert.equal(await clicksOf(pgPort), 0.25, "personalization may use usage: clicks come through the export");
    assert.equal((await pipeline()).dropped, false);
    assert.equal((await call("PUT", "/decision", { userId: "accepted", type: "platformUse", purposeId: "personalization" })).body.allowed, true);
    assert.equal((await call("PUT", `/redact/record?${personalization}`, { "users.id": "accepted", "users.clicks": 1 })).body.dropped, false);

    const doors = [
      ["export", exportIds.postgres],
      ["export", exportIds.pipeline],
      ["decision", undefined],
      ["redact", undefined],
    ] as const;
    const before = (await call("GET", "/user/accepted/report")).body;
    for (const [door, exportId] of doors) {
      const groups = group(before, door, exportId);
      assert.equal(groups.length, 1, `${door} ${exportId ?? ""}: ${JSON.stringify(before.decisions.byPurposeAndDoor)}`);
      assert.equal(groups[0].allowed, 1, `${door} ${exportId ?? ""} decided once`);
      assert.equal(groups[0].denied, 0);
    }

    const restricted = await call("PUT", "/user/accepted/restriction", { purposeIds: ["personalization"] });
    assert.equal(restricted.status, 200, JSON.stringify(restricted.body));
    const since = Date.now();
    // The exports run on either node: on the other one the restriction arrives through its watch of user states.
    await goneWithinBound("the PostgreSQL export", since, async () => (await clicksOf(pgPort)) !== null);
    await goneWithinBound("the pipeline export", since, async () => (await pipeline()).dropped === false);
    assert.equal(await clicksOf(pg.port), 0.25, "the backend itself still holds the value: a direct connection reads it");
    assert.equal((await call("PUT", "/decision", { userId: "accepted", type: "platformUse", purposeId: "personalization" })).body.allowed, false);
    assert.equal((await call("PUT", `/redact/record?${personalization}`, { "users.id": "accepted", "users.clicks": 1 })).body.dropped, true);

    const after = (await call("GET", "/user/accepted/report")).body;
    for (const [door, exportId] of doors)
      assert.equal(group(after, door, exportId)[0].denied, 1, `${door} ${exportId ?? ""} denied once after the restriction`);
    const latest = after.decisions.latest.events as Body[];
    assert.ok(latest.some((e) => e.exportId === exportIds.postgres && e.allowed === false));
  });

  test("a restriction by the user or their guardian empties the user's data at MySQL, object-storage and FHIR exports and document jobs within the bound; others' data still flows", async () => {
    // Research (consented sharing) covers usage: clicks and observations. The child's consent is the guardian's, within the guardian categories.
    for (const userId of ["accepted", "guardian"])
      assert.equal(
        (await call("PUT", "/user/consent", { userId, consents: { affirmativeConsents: [{ purposeId: "research", termsId: "research-study-1" }] } })).status,
        200,
      );
    const childConsent = await call("PUT", "/user/consent", {
      userId: "child",
      grantorId: "guardian",
      consents: { affirmativeConsents: [{ purposeId: "research", termsId: "research-study-1", categoryIds: ["usage"] }] },
    });
    assert.equal(childConsent.status, 200, JSON.stringify(childConsent.body));

    const direct = s3Client(store.port, { credentials: s3rverCredentials });
    await direct.send(new PutObjectCommand({ Bucket: "docs", Key: "people.json", Body: JSON.stringify(records), ContentType: "application/json" }));
    direct.destroy();
    for (const userId of Object.keys(clicks)) {
      await fhir.repo.createResource({ resourceType: "Patient", id: userId, name: [{ family: `Family-${userId}` }] }, { assignedId: true });
      await fhir.create({
        resourceType: "Observation",
        status: "final",
        code: { text: "clicks" },
        subject: { reference: `Patient/${userId}` },
        valueQuantity: { value: clicks[userId] },
      });
    }
    exportIds.mysql = await createExport({
      type: "mysql",
      endpoint: `127.0.0.1:${db.port}`,
      resolverGroup: "users-table",
      metadata: research,
      port: ports.mysql,
    });
    exportIds.objectstore = await createExport({
      type: "objectstore",
      endpoint: store.endpoint,
      resolverGroup: "users-table",
      metadata: research,
      port: ports.objectstore,
    });
    exportIds.fhir = await createExport({ type: "fhir", endpoint: fhir.base, resolverGroup: "fhir-clinical", metadata: research, port: ports.fhir });

    // Clients that stay connected across the restriction: the running exports must change their answers, not only new sessions.
    const sql = await mysql.createConnection({ host: "127.0.0.1", port: ports.mysql, user: reader.user, password: reader.password, database: "app" });
    const objects = s3Client(ports.objectstore);
    const { Client: FhirClient } = await import("fhir-kit-client");
    const fhirClient = new FhirClient({ baseUrl: `http://127.0.0.1:${ports.fhir}/` });
    const directSql = await mysql.createConnection(db.connectionOptions);
    try {
      const usersClicks = async (connection: mysql.Connection, userId: string): Promise<unknown> => {
        const [rows] = await connection.query("SELECT clicks FROM app.users WHERE id = ?", [userId]);
        return (rows as Array<{ clicks: number | null }>)[0]?.clicks ?? null;
      };
      /** The clicks of each user the document carries (by value: users.id, a resource context without a category, is emptied). */
      const releasedIn = (document: string): Set<string> => {
        const values = new Set((JSON.parse(document) as Body[]).map((r) => r["users.clicks"]));
        return new Set(Object.keys(clicks).filter((userId) => values.has(clicks[userId])));
      };
      const objectUsers = async () =>
        releasedIn(await (await objects.send(new GetObjectCommand({ Bucket: "docs", Key: "people.json" }))).Body!.transformToString());
      const observationValues = async (userId: string): Promise<unknown[]> => {
        const bundle: Body = await fhirClient.search({ resourceType: "Observation", searchParams: { subject: `Patient/${userId}` } });
        return (bundle.entry ?? []).map((e: Body) => e.resource.valueQuantity?.value);
      };
      const documentUsers = async (): Promise<Set<string>> => {
        const upload = await fetch(`${other.url}/redact/document?${researchQuery}`, {
          method: "PUT",
          headers: { "content-type": "application/json" },
          body: JSON.stringify(records),
        });
        const job = (await upload.json()) as Body;
        assert.equal(upload.status, 200, JSON.stringify(job));
        await until("the redaction job completes", async () => (await call("GET", `/redact/progress?jobName=${job.jobName}`)).body.status === "complete");
        return releasedIn(await (await fetch(`${node.url}/redact/document?jobName=${job.jobName}`)).text());
      };
      const sqlClicks = (userId: string) => usersRows().find((row) => row.id === userId)!.clicks;
      const released = {
        mysql: async (userId: string) => (await usersClicks(sql, userId)) === sqlClicks(userId),
        objectstore: async (userId: string) => (await objectUsers()).has(userId),
        fhir: async (userId: string) => (await observationValues(userId)).includes(clicks[userId]),
      };
      const doors = Object.entries(released) as Array<[keyof typeof released, (userId: string) => Promise<boolean>]>;

      for (const userId of ["accepted", "guardian", "child"]) {
        for (const [door, passes] of doors) assert.equal(await passes(userId), true, `before: ${userId}'s data comes through the ${door} export`);
        assert.ok((await documentUsers()).has(userId), `before: ${userId}'s record comes through a document job`);
      }
      for (const [door, passes] of doors) assert.equal(await passes("not-accepted"), false, `${door}: a user without consent is dropped (the check can fail)`);

      // A guardian acts for a linked child only: for an adult, 403, nothing restricted.
      const notAChild = await call("PUT", "/user/accepted/restriction", { actorId: "guardian" });
      assert.equal(notAChild.status, 403, JSON.stringify(notAChild.body));
      assert.equal(notAChild.body.error.code, "ERR_USER_GUARDIAN_INVALID");
      // A purpose the configuration does not name (a typo) is refused: 400, nothing restricted.
      const typo = await call("PUT", "/user/accepted/restriction", { purposeIds: ["research", "reserach"] });
      assert.equal(typo.status, 400, JSON.stringify(typo.body));
      assert.equal(typo.body.error.code, "ERR_USER_INVALID");
      assert.deepEqual(
        typo.body.error.details.map((d: Body) => d.path),
        ["/purposeIds"],
      );
      for (const [door, passes] of doors) assert.equal(await passes("accepted"), true, `${door}: a refused restriction changes nothing`);

      // The guardian restricts the child through one node, the user restricts themself through the other: each export runs on one of them.
      const byGuardian = await request(other, "PUT", "/user/child/restriction", { actorId: "guardian" });
      assert.equal(byGuardian.status, 200, JSON.stringify(byGuardian.body));
      assert.deepEqual(
        byGuardian.body.restricted.map((r: Body) => r.purposeId),
        ["research"],
      );
      let since = Date.now();
      for (const [door, passes] of doors) await goneWithinBound(`the ${door} export, the child restricted by the guardian`, since, () => passes("child"));
      const bySelf = await call("PUT", "/user/accepted/restriction", { purposeIds: ["research"] });
      assert.equal(bySelf.status, 200, JSON.stringify(bySelf.body));
      since = Date.now();
      for (const [door, passes] of doors) await goneWithinBound(`the ${door} export, the user restricted by themself`, since, () => passes("accepted"));

      for (const [door, passes] of doors) assert.equal(await passes("guardian"), true, `after: the guardian's own data still comes through the ${door} export`);
      assert.deepEqual([...(await documentUsers())], ["guardian"], "a document job after the restrictions releases the guardian's record only");
      // What the exports no longer release, the backends still hold: a direct connection reads it.
      for (const userId of ["accepted", "child"]) {
        assert.equal(await usersClicks(directSql, userId), sqlClicks(userId), `MariaDB still holds ${userId}'s clicks`);
        const directBundle: Body = await new FhirClient({ baseUrl: fhir.base }).search({
          resourceType: "Observation",
          searchParams: { subject: `Patient/${userId}` },
        });
        assert.equal(directBundle.entry?.[0]?.resource.valueQuantity.value, clicks[userId], `the FHIR server still holds ${userId}'s observation`);
      }

      // Audited: who restricted whom. Traced: every door's decisions about the user, allowed before and denied after, are in the report.
      const audit = (await storedMessages<AuditRecord>(nc, "WARDEN_AUDIT"))
        .filter((m) => m.data.event === "user.restricted")
        .map((m) => m.data.details as Body);
      assert.ok(
        audit.some((d) => d.userId === "child" && d.actorId === "guardian"),
        JSON.stringify(audit),
      );
      assert.ok(
        audit.some((d) => d.userId === "accepted" && d.actorId === "accepted"),
        JSON.stringify(audit),
      );
      for (const userId of ["accepted", "child"]) {
        const report = (await call("GET", `/user/${userId}/report`)).body;
        for (const door of ["mysql", "objectstore", "fhir"] as const) {
          const [counts] = group(report, "export", exportIds[door], "research");
          assert.ok(counts && counts.allowed >= 1 && counts.denied >= 1, `${userId} at the ${door} export: ${JSON.stringify(counts)}`);
        }
        const [jobs] = group(report, "redact", undefined, "research");
        assert.ok(jobs && jobs.allowed >= 1 && jobs.denied >= 1, `${userId} in document jobs: ${JSON.stringify(jobs)}`);
      }
    } finally {
      await sql.end();
      await directSql.end();
      objects.destroy();
    }
  });

  test("a guardian's restriction stops at the guardian categories: a consent beyond them is left on and listed, naming it is refused, and the child's data still flows", async () => {
    const childClicks = async (): Promise<unknown> => {
      const connection = await mysql.createConnection({ host: "127.0.0.1", port: ports.mysql, user: reader.user, password: reader.password, database: "app" });
      try {
        const [rows] = await connection.query("SELECT clicks FROM app.users WHERE id = 'child'");
        return (rows as Array<{ clicks: number | null }>)[0]?.clicks ?? null;
      } finally {
        await connection.end();
      }
    };
    const childRow = usersRows().find((row) => row.id === "child")!;
    const consent = await call("PUT", "/user/consent", {
      userId: "child",
      grantorId: "guardian",
      consents: { affirmativeConsents: [{ purposeId: "research", termsId: "research-study-1", categoryIds: ["usage"] }] },
    });
    assert.equal(consent.status, 200, JSON.stringify(consent.body));
    await until("the child's clicks come through the MySQL export again", async () => (await childClicks()) === childRow.clicks, 5000);
    // The guardian categories no longer hold usage: the consent the guardian gave covers a category beyond them.
    const narrowed = fhirPolicy();
    narrowed.guardian!.categoryIds = ["contact", "identity"];
    assert.equal((await call("PUT", "/config", narrowed)).status, 200);

    const named = await request(other, "PUT", "/user/child/restriction", { actorId: "guardian", purposeIds: ["research"] });
    assert.equal(named.status, 403, JSON.stringify(named.body));
    assert.equal(named.body.error.code, "ERR_USER_GUARDIAN_CATEGORIES");
    const everything = await request(other, "PUT", "/user/child/restriction", { actorId: "guardian" });
    assert.equal(everything.status, 200, JSON.stringify(everything.body));
    assert.deepEqual(everything.body.restricted, []);
    assert.deepEqual(everything.body.leftOn, [{ purposeId: "research", termsId: "research-study-1", outside: ["usage"] }]);
    assert.deepEqual((await call("GET", "/user/child")).body.consents, { "research/research-study-1": { categoryIds: ["usage"], grantorId: "guardian" } });
    await new Promise((resolve) => setTimeout(resolve, restrictionBoundMs));
    assert.equal(
      await childClicks(),
      childRow.clicks,
      "past the bound the child's data still comes through: nothing beyond the guardian categories was turned off",
    );

    // The child's state as the report shows it to the guardian: links, the overrides that apply now (age), what was turned off and by whom.
    const report = await call("GET", "/user/child/report?actorId=guardian");
    assert.equal(report.status, 200, JSON.stringify(report.body));
    const state = report.body.state;
    assert.deepEqual(state.guardians, ["guardian"]);
    assert.deepEqual(
      state.overrides.map((o: Body) => [o.name, o.propertyName, o.scope]),
      [
        ["Children under 13", "age", "platformUse"],
        ["Under 16: no ads sharing", "age", "platformSharing"],
      ],
    );
    assert.deepEqual(
      state.disabledFlows.map((f: Body) => f.thirdPartyId),
      ["adco", "geoads"],
    );
    assert.ok(
      state.consentHistory.some((h: Body) => h.purposeId === "research" && h.categoryIds === null && h.by === "guardian"),
      JSON.stringify(state.consentHistory),
    );
    assert.equal(state.terms.acceptorId, "guardian");
    // A contract and an override of location, on other users of the population.
    const reseller = (await call("GET", "/user/third-party/report")).body;
    assert.deepEqual(reseller.state.contract, { purposeId: "reseller", termsId: "reseller-2026" });
    assert.ok(
      reseller.uses.find((u: Body) => u.categoryId === "contact").uses.some((u: Body) => u.type === "contractualExchange" && u.purposeId === "reseller"),
      JSON.stringify(reseller.uses),
    );
    assert.deepEqual(
      (await call("GET", "/user/overridden/report")).body.state.overrides.map((o: Body) => o.propertyName),
      ["location"],
    );
  });
});
