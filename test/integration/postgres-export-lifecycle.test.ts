import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { Client } from "pg";
import type { AuditRecord } from "../../actors/runtime/event-log";
import type { NatsServerProcess } from "../../service/nats-server";
import { realisticPolicy } from "../../testkit/policy";
import { createPopulation } from "../fixtures/population";
import { answersThrough as answers, createAppDatabase, populationHba, roles } from "../fixtures/postgres-population";
import { call as request } from "../../testkit/http";
import { connectTo, startNats, storedMessages } from "../../testkit/nats";
import { NodeProcess } from "../../testkit/node-process";
import { until } from "../../testkit/wait";
import { failOverServingNode } from "../../testkit/export-failover";
import { freePorts } from "../../testkit/ports";
import { PostgresServer } from "../../testkit/postgres";

const cluster = { HEARTBEAT_MS: "1000", LEASE_TTL_MS: "4000" };

describe("PostgreSQL export lifecycle (spec 3.1)", () => {
  let nats: NatsServerProcess;
  let pg: PostgresServer;
  let nodes: NodeProcess[] = [];
  let ports: number[];
  const call = (method: string, path: string, body?: unknown, node = nodes[0]!) => request(node, method, path, body);
  const body = (extra: Record<string, unknown> = {}) => ({
    type: "postgres",
    endpoint: `127.0.0.1:${pg.port}`,
    resolverGroup: "users-table",
    metadata: { type: "platformUse", purposeId: "service" },
    ...extra,
  });

  before(async () => {
    pg = await PostgresServer.start({ hba: populationHba });
    createAppDatabase(pg);
    nats = await startNats();
    ports = await freePorts(8);
    const range = { EXPORT_PORTS: `${ports[6]}-${ports[6]}` };
    nodes = await NodeProcess.startAll(["life-1", "life-2"].map((nodeId) => ({ nodeId, natsUrl: nats.url, env: { ...cluster, ...range } })));
    assert.equal((await call("PUT", "/config", realisticPolicy())).status, 200);
    await createPopulation(call);
  });

  after(async () => {
    await Promise.all(nodes.map((n) => n.kill()));
    await nats?.stop();
    await pg?.stop();
  });

  test("create, list, stop (port closed), start (port back), delete; bad requests change nothing", async () => {
    const created = await call("PUT", "/export", body({ port: ports[0] }));
    assert.equal(created.status, 200, JSON.stringify(created.body));
    const id: string = created.body.id;
    assert.match(id, /^[0-9a-f-]{36}$/);
    assert.deepEqual({ status: created.body.status, listen: created.body.listen }, { status: "active", listen: { host: "127.0.0.1", port: ports[0] } });
    await until("the export answers", () => answers(ports[0]!));

    const held = new Client({ host: "127.0.0.1", port: ports[0], user: roles.scram.user, password: roles.scram.password, database: "app" });
    await held.connect();
    const heldEnded = new Promise((resolve) => held.once("end", resolve));
    held.on("error", () => undefined);
    const listed = await call("GET", "/export");
    assert.equal(listed.status, 200);
    const entry = listed.body.exports.find((e: { id: string }) => e.id === id);
    assert.equal(entry.status, "active");
    assert.equal(entry.endpoint, `127.0.0.1:${pg.port}`);
    assert.equal(entry.resolverGroup, "users-table");
    assert.equal(entry.metadata.purposeId, "service");
    assert.equal(entry.serving.port, ports[0]);
    assert.ok(entry.serving.connections.open >= 1, JSON.stringify(entry.serving));
    assert.ok(["life-1", "life-2"].includes(entry.serving.nodeId));

    const bad: Array<[Record<string, unknown>, number, string]> = [
      [body({ type: "mongodb" }), 400, "ERR_EXPORT_INVALID"],
      [body({ endpoint: "no-port" }), 400, "ERR_EXPORT_INVALID"],
      [body({ resolverGroup: "nope" }), 400, "ERR_EXPORT_INVALID"],
      [body({ metadata: { type: "platformUse", purposeId: "mining" } }), 400, "ERR_EXPORT_INVALID"],
      // A field of another export type: refused by the postgres door's allow-list, not stored and ignored.
      [body({ buckets: ["docs"] }), 400, "ERR_EXPORT_INVALID"],
      [{ type: "postgres", endpoint: "127.0.0.1:5432" }, 400, "ERR_REQUEST_INVALID"],
      [body({ port: ports[0] }), 409, "ERR_EXPORT_PORT_TAKEN"],
    ];
    for (const [payload, status, code] of bad) {
      const answer = await call("PUT", "/export", payload);
      assert.equal(answer.status, status, JSON.stringify(payload));
      assert.equal(answer.body.error.code, code, JSON.stringify(payload));
    }
    const otherTypesField = await call("PUT", "/export", body({ formats: { ".data": "csv" } }));
    assert.deepEqual(otherTypesField.body.error.details, [{ path: "formats", problem: "not taken by postgres exports" }]);
    assert.equal((await call("GET", "/export")).body.exports.length, 1, "nothing was created by the bad requests");
    assert.equal((await call("PUT", "/export/stop", { id: "no-such-export" })).body.error.code, "ERR_EXPORT_NOT_FOUND");
    assert.equal((await call("PUT", "/export/stop")).body.error.code, "ERR_REQUEST_INVALID");
    assert.equal((await call("PUT", `/export/stop?id=${id}`, { id: "other" })).status, 400);

    const stopped = await call("PUT", "/export/stop", { id });
    assert.equal(stopped.status, 200);
    assert.equal(stopped.body.status, "inactive");
    await until("the port closes", async () => !(await answers(ports[0]!)));
    await heldEnded; // connections through a stopped export are closed
    assert.equal((await call("GET", `/export?id=${id}`)).body.status, "inactive");
    assert.equal((await call("PUT", "/export/stop", { id })).body.status, "inactive", "stopping twice is harmless");

    const started = await call("PUT", `/export/start?id=${id}`);
    assert.equal(started.body.status, "active");
    await until("the port opens again", () => answers(ports[0]!));

    // Two creates at once for the range's one port: one gets it, the other is told the range is used up.
    const racing = await Promise.all([call("PUT", "/export", body()), call("PUT", "/export", body(), nodes[1])]);
    assert.deepEqual(racing.map((r) => r.status).sort(), [200, 503]);
    const allocated = racing.find((r) => r.status === 200)!;
    assert.equal(allocated.body.listen.port, ports[6], "allocated from EXPORT_PORTS");
    assert.equal(racing.find((r) => r.status === 503)!.body.error.code, "ERR_EXPORT_NO_PORT");

    for (const target of [id, allocated.body.id]) {
      const removed = await call("DELETE", `/export?id=${target}`);
      assert.equal(removed.status, 200);
      assert.equal((await call("GET", `/export?id=${target}`)).body.error.code, "ERR_EXPORT_NOT_FOUND");
    }
    await until("the port closes", async () => !(await answers(ports[0]!)));
    const reused = await call("PUT", "/export", body({ port: ports[0] }));
    assert.equal(reused.status, 200, "a deleted export's port can be used again");
    assert.equal((await call("DELETE", "/export", { id: reused.body.id })).status, 200);
  });

  test("a SIGKILLed serving node: another node serves the export on the same port", async () => {
    const created = await call("PUT", "/export", body({ port: ports[1] }));
    const { survivors, gapMs } = await failOverServingNode(nodes, created.body.id, () => answers(ports[1]!));
    nodes = survivors;
    console.log(`# export answered again ${gapMs} ms after SIGKILL of its serving node (lease ${cluster.LEASE_TTL_MS} ms)`);
  });

  test("after a restart of every node, active exports listen again on their ports and stopped ones stay stopped", async () => {
    const active = await call("PUT", "/export", body({ port: ports[2] }));
    const stopped = await call("PUT", "/export", body({ port: ports[3] }));
    await call("PUT", "/export/stop", { id: stopped.body.id });
    await until("the active export answers", () => answers(ports[2]!));
    await Promise.all(nodes.map((n) => n.stop()));
    assert.equal(await answers(ports[2]!), false, "no node, no port");
    nodes = await NodeProcess.startAll(["life-3"].map((nodeId) => ({ nodeId, natsUrl: nats.url, env: cluster })));
    await until("the active export answers after the restart", () => answers(ports[2]!), 30_000);
    assert.equal(await answers(ports[3]!), false);
    assert.equal((await call("GET", `/export?id=${stopped.body.id}`)).body.status, "inactive");

    // Audit (spec 6): the export's port, its outgoing connections, pass-through at debug level, in category postgres.
    const nc = await connectTo(nats.url);
    const records = (await storedMessages<AuditRecord>(nc, "WARDEN_AUDIT", "warden.audit.postgres.>")).map(({ subject, data }) => ({ subject, record: data }));
    await nc.close();
    const of = (event: string) => records.filter((r) => r.record.event === event);
    assert.ok(
      of("port.opened").some((r) => (r.record.details as { exportId: string }).exportId === active.body.id && r.subject === "warden.audit.postgres.info"),
    );
    const outgoing = of("connection.outgoing").find((r) => (r.record.details as { exportId: string }).exportId === active.body.id);
    assert.ok(outgoing, "outgoing connections are audited");
    assert.equal((outgoing!.record.details as { endpoint: string }).endpoint, `127.0.0.1:${pg.port}`);
    assert.equal((outgoing!.record.details as { identity: string }).identity, roles.scram.user);
    assert.ok(of("connection.pass-through").every((r) => r.subject === "warden.audit.postgres.debug") && of("connection.pass-through").length > 0);
  });
});
