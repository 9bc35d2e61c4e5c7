// Issue 21: a MySQL export lives as a PostgreSQL export does (spec 3.1): served by one node of the
// cluster, served again by another within seconds after SIGKILL of its node, listening again after
// a restart of every node (a stopped one stays stopped); audited in category `mysql`, each user's
// decision and each connection's summary traced.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import mysql from "mysql2/promise";
import type { AuditRecord } from "../../actors/runtime/event-log";
import type { NatsServerProcess } from "../../service/nats-server";
import { call as request } from "../../testkit/http";
import { connectTo, startNats, storedMessages, storedTraceRecords } from "../../testkit/nats";
import { NodeProcess } from "../../testkit/node-process";
import { until } from "../../testkit/wait";
import { failOverServingNode } from "../../testkit/export-failover";
import { realisticPolicy } from "../../testkit/policy";
import { freePorts } from "../../testkit/ports";
import { MariaDbServer } from "../../testkit/mariadb";
import { createMysqlPopulation, reader } from "../fixtures/mysql-population";
import { createPopulation } from "../fixtures/population";

const cluster = { HEARTBEAT_MS: "1000", LEASE_TTL_MS: "4000" };

/** Whether mysql2 can log in through the port and read the allowed user's email. */
async function answers(port: number): Promise<boolean> {
  let c: mysql.Connection | undefined;
  try {
    c = await mysql.createConnection({ host: "127.0.0.1", port, user: reader.user, password: reader.password, database: "app", connectTimeout: 2000 });
    const [rows] = await c.query({ sql: "SELECT id, email FROM users WHERE id = 'accepted'", rowsAsArray: true });
    return JSON.stringify(rows) === JSON.stringify([[null, "accepted@example.com"]]);
  } catch {
    return false;
  } finally {
    await c?.end().catch(() => undefined);
  }
}

describe("MySQL export lifecycle (spec 3.1): failover, restart, audit and traces", () => {
  let nats: NatsServerProcess;
  let db: MariaDbServer;
  let nodes: NodeProcess[] = [];
  let ports: number[];
  const call = (method: string, path: string, body?: unknown, node = nodes[0]!) => request(node, method, path, body);
  const body = (extra: Record<string, unknown> = {}) => ({
    type: "mysql",
    endpoint: `127.0.0.1:${db.port}`,
    resolverGroup: "users-table",
    metadata: { type: "platformUse", purposeId: "service" },
    ...extra,
  });

  before(async () => {
    db = await MariaDbServer.start();
    await createMysqlPopulation(db);
    nats = await startNats();
    ports = await freePorts(4);
    nodes = await NodeProcess.startAll(["mysql-life-1", "mysql-life-2"].map((nodeId) => ({ nodeId, natsUrl: nats.url, env: cluster })));
    assert.equal((await call("PUT", "/config", realisticPolicy())).status, 200);
    await createPopulation(call);
  });

  after(async () => {
    await Promise.all(nodes.map((n) => n.kill()));
    await nats?.stop();
    await db?.stop();
  });

  test("a SIGKILLed serving node: another node serves the export on the same port", async () => {
    const created = await call("PUT", "/export", body({ port: ports[0] }));
    assert.equal(created.status, 200, JSON.stringify(created.body));
    const { survivors, gapMs } = await failOverServingNode(nodes, created.body.id, () => answers(ports[0]!));
    nodes = survivors;
    console.log(`# mysql export answered again ${gapMs} ms after SIGKILL of its serving node (lease ${cluster.LEASE_TTL_MS} ms)`);
  });

  test("after a restart of every node, active exports listen again and stopped ones stay stopped; audit and traces", async () => {
    const active = await call("PUT", "/export", body({ port: ports[1] }));
    const stopped = await call("PUT", "/export", body({ port: ports[2] }));
    assert.equal((await call("PUT", "/export/stop", { id: stopped.body.id })).status, 200);
    await until("the active export answers", () => answers(ports[1]!));
    await Promise.all(nodes.map((n) => n.stop()));
    assert.equal(await answers(ports[1]!), false, "no node, no port");
    nodes = await NodeProcess.startAll(["mysql-life-3"].map((nodeId) => ({ nodeId, natsUrl: nats.url, env: cluster })));
    await until("the active export answers after the restart", () => answers(ports[1]!), 30_000);
    assert.equal(await answers(ports[2]!), false);
    assert.equal((await call("GET", `/export?id=${stopped.body.id}`)).body.status, "inactive");
    const serving = (await call("GET", `/export?id=${active.body.id}`)).body.serving as {
      rows: { in: number; kept: number };
      statements: { analysed: number };
    };
    assert.ok(serving.rows.kept >= 1 && serving.statements.analysed >= 1, `GET /export counts rows and statements: ${JSON.stringify(serving)}`);

    const nc = await connectTo(nats.url);
    const records = (await storedMessages<AuditRecord>(nc, "WARDEN_AUDIT", "warden.audit.mysql.>")).map(({ subject, data }) => ({ subject, record: data }));
    const of = (event: string) => records.filter((r) => r.record.event === event && (r.record.details as { exportId?: string }).exportId === active.body.id);
    assert.ok(
      of("port.opened").some((r) => r.subject === "warden.audit.mysql.info"),
      "the port is audited in category mysql",
    );
    const outgoing = of("connection.outgoing")[0];
    assert.ok(outgoing, "outgoing connections are audited");
    assert.equal((outgoing!.record.details as { endpoint: string }).endpoint, `127.0.0.1:${db.port}`);
    assert.equal((outgoing!.record.details as { identity: string }).identity, reader.user);
    assert.ok(of("connection.pass-through").length > 0 && of("connection.pass-through").every((r) => r.subject === "warden.audit.mysql.debug"));
    // Each decision is traced with the export's id before its rows leave; each connection's summary when it ends.
    await until("the connections' summaries are traced", async () =>
      (await storedTraceRecords<{ kind: string; exportId?: string }>(nc, "warden.trace.export.>")).some(
        (t) => t.record.kind === "export.connection" && t.record.exportId === active.body.id,
      ),
    );
    const traces = await storedTraceRecords<{ kind: string; exportId?: string; userId?: string; rowsKept?: number }>(nc, "warden.trace.export.>");
    assert.ok(
      traces.some((t) => t.record.kind === "export.user" && t.record.exportId === active.body.id),
      "decisions are traced with the export's id",
    );
    assert.ok(traces.some((t) => t.record.kind === "export.connection" && t.record.exportId === active.body.id && (t.record.rowsKept ?? 0) >= 1));
    await nc.close();
  });
});
