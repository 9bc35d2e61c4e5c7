import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { Client } from "pg";
import type { NatsServerProcess } from "../../service/nats-server";
import { realisticPolicy } from "../../testkit/policy";
import { createPopulation } from "../fixtures/population";
import { createAppDatabase, populationHba, roles } from "../fixtures/postgres-population";
import { call as request, type Body } from "../../testkit/http";
import { startNats } from "../../testkit/nats";
import { NodeProcess } from "../../testkit/node-process";
import { freePorts } from "../../testkit/ports";
import { PostgresServer } from "../../testkit/postgres";
import { listening, until } from "../../testkit/wait";

/** Decisions about one user at every door (a PostgreSQL export, a pipeline export, /decision, /redact): the report counts them, and a restriction holds at each. */
describe("data-subject rights across the doors (issue 25)", () => {
  let nats: NatsServerProcess;
  let node: NodeProcess;
  let pg: PostgresServer;
  let pgPort: number;
  let pipePort: number;
  const exportIds: Record<"postgres" | "pipeline", string> = { postgres: "", pipeline: "" };
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
  const group = (report: Body, door: string, exportId?: string) =>
    (report.decisions.byPurposeAndDoor as Body[]).filter((g) => g.door === door && g.purposeId === "personalization" && g.exportId === exportId);

  before(async () => {
    pg = await PostgresServer.start({ hba: populationHba });
    createAppDatabase(pg);
    nats = await startNats();
    [pgPort, pipePort] = await freePorts(2);
    node = await NodeProcess.start({ nodeId: "rights-doors", natsUrl: nats.url });
    assert.equal((await call("PUT", "/config", realisticPolicy())).status, 200);
    await createPopulation(call);
    assert.equal(
      (await call("PUT", "/user/consent", { userId: "accepted", consents: { affirmativeConsents: [{ purposeId: "personalization" }] } })).status,
      200,
    );
    const metadata = { type: "platformUse", purposeId: "personalization" };
    const postgres = await call("PUT", "/export", { type: "postgres", endpoint: `127.0.0.1:${pg.port}`, resolverGroup: "users-table", metadata, port: pgPort });
    assert.equal(postgres.status, 200, JSON.stringify(postgres.body));
    const pipe = await call("PUT", "/export", { type: "pipeline", resolverGroup: "users-table", metadata, port: pipePort });
    assert.equal(pipe.status, 200, JSON.stringify(pipe.body));
    exportIds.postgres = postgres.body.id;
    exportIds.pipeline = pipe.body.id;
    await until("both export ports answer", async () => (await listening(pgPort)) && (await listening(pipePort)));
  });

  after(async () => {
    await node?.stop();
    await nats?.stop();
    await pg?.stop();
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
    assert.equal(await clicksOf(pg.port), 0.25, "the backend itself still holds the value: a direct connection reads it");
    assert.equal(await clicksOf(pgPort), null, "the export no longer releases the user's row");
    assert.equal((await pipeline()).dropped, true);
    assert.equal((await call("PUT", "/decision", { userId: "accepted", type: "platformUse", purposeId: "personalization" })).body.allowed, false);
    assert.equal((await call("PUT", `/redact/record?${personalization}`, { "users.id": "accepted", "users.clicks": 1 })).body.dropped, true);

    const after = (await call("GET", "/user/accepted/report")).body;
    for (const [door, exportId] of doors)
      assert.equal(group(after, door, exportId)[0].denied, 1, `${door} ${exportId ?? ""} denied once after the restriction`);
    const latest = after.decisions.latest.events as Body[];
    assert.ok(latest.some((e) => e.exportId === exportIds.postgres && e.allowed === false));
  });
});
