// Wire exports fail closed on a full audit stream, as the HTTP doors do (503 ERR_AUDIT_UNAVAILABLE):
// a connection is served only once its `connection.outgoing` (and, passed through, its
// `connection.pass-through`) record is stored (spec 6 items 4 and 8), else its login ends with the
// protocol's own error and no row crosses; a port is served only once its `port.opened` is stored
// (item 3), else it is closed again and GET /export says why. With room again, all of it works.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { createServer, type Server } from "node:net";
import { Client } from "pg";
import mysql from "mysql2/promise";
import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import type { AuditRecord } from "../../actors/runtime/event-log";
import type { ServingReport } from "../../exports/export-supervisor";
import { ExportSubjects } from "../../exports/subjects";
import type { NatsServerProcess } from "../../service/nats-server";
import { call as request } from "../../testkit/http";
import { MariaDbServer } from "../../testkit/mariadb";
import { connectTo, startNats, storedMessages } from "../../testkit/nats";
import { NodeProcess } from "../../testkit/node-process";
import { realisticPolicy } from "../../testkit/policy";
import { freePort } from "../../testkit/ports";
import { PostgresServer } from "../../testkit/postgres";
import { firstSuccess, until } from "../../testkit/wait";
import { createMysqlPopulation, reader } from "../fixtures/mysql-population";
import { createPopulation } from "../fixtures/population";
import { createAppDatabase, populationHba, roles } from "../fixtures/postgres-population";

/** The smallest audit stream a node takes. */
const auditMaxBytes = 65_536;
const fillerSubject = "warden.audit.filler.info";

/** Rows of `SELECT id, email FROM users` through a PostgreSQL export (node-postgres, pass-through SCRAM login). */
async function postgresRows(port: number): Promise<unknown[]> {
  const client = new Client({
    host: "127.0.0.1",
    port,
    user: roles.scram.user,
    password: roles.scram.password,
    database: "app",
    connectionTimeoutMillis: 5000,
  });
  client.on("error", () => undefined);
  try {
    await client.connect();
    return (await client.query("SELECT id, email FROM users ORDER BY email")).rows;
  } finally {
    await client.end().catch(() => undefined);
  }
}

/** The same through a MySQL export (mysql2, pass-through login). */
async function mysqlRows(port: number): Promise<unknown[]> {
  const connection = await mysql.createConnection({
    host: "127.0.0.1",
    port,
    user: reader.user,
    password: reader.password,
    database: "app",
    connectTimeout: 5000,
  });
  try {
    const [rows] = await connection.query("SELECT id, email FROM users ORDER BY email");
    return rows as unknown[];
  } finally {
    await connection.end().catch(() => undefined);
  }
}

/** What the node serving an export says of it (GET /export's servingError), asked over NATS: the gateway needs an audit record per new connection. */
async function servingReport(nc: NatsConnection, exportId: string): Promise<ServingReport | undefined> {
  try {
    return (await nc.request(ExportSubjects.serving(exportId), "", { timeout: 1000 })).json<ServingReport>();
  } catch {
    return undefined;
  }
}

for (const workers of [2, 0]) {
  describe(`wire exports with a full audit stream refuse logins and ports (EXPORT_WORKERS=${workers})`, () => {
    let pg: PostgresServer;
    let db: MariaDbServer;
    let nats: NatsServerProcess;
    let node: NodeProcess;
    let nc: NatsConnection;
    let pgPort: number;
    let mysqlPort: number;
    /** Held by another program when the exports are created (a PostgreSQL one, a pipeline's HTTP port), freed once the audit stream is full. */
    let blockedPort: number;
    let blockedHttpPort: number;
    let blockers: Server[] = [];
    let blockedExport: string;
    let blockedPipeline: string;
    const call = (method: string, path: string, body?: unknown) => request(node, method, path, body);
    const base = { resolverGroup: "users-table", metadata: { type: "platformUse", purposeId: "service" } };

    before(async () => {
      pg = await PostgresServer.start({ hba: populationHba });
      createAppDatabase(pg);
      db = await MariaDbServer.start();
      await createMysqlPopulation(db);
      nats = await startNats();
      node = await NodeProcess.start({
        nodeId: `export-audit-full-${workers}`,
        natsUrl: nats.url,
        env: { AUDIT_MAX_BYTES: String(auditMaxBytes), EXPORT_WORKERS: String(workers) },
      });
      nc = await connectTo(nats.url);
      assert.equal((await call("PUT", "/config", realisticPolicy())).status, 200);
      await createPopulation(call);
      [pgPort, mysqlPort, blockedPort, blockedHttpPort] = [await freePort(), await freePort(), await freePort(), await freePort()];
      for (const port of [blockedPort, blockedHttpPort]) {
        const blocker = createServer();
        await new Promise<void>((resolve) => blocker.listen(port, "127.0.0.1", resolve));
        blockers.push(blocker);
      }
      for (const [type, endpoint, port] of [
        ["postgres", `127.0.0.1:${pg.port}`, pgPort],
        ["mysql", `127.0.0.1:${db.port}`, mysqlPort],
      ] as const) {
        const created = await call("PUT", "/export", { type, endpoint, port, ...base });
        assert.equal(created.status, 200, JSON.stringify(created.body));
      }
      const blocked = await call("PUT", "/export", { type: "postgres", endpoint: `127.0.0.1:${pg.port}`, port: blockedPort, ...base });
      assert.equal(blocked.status, 200, JSON.stringify(blocked.body));
      blockedExport = blocked.body.id as string;
      const pipeline = await call("PUT", "/export", { type: "pipeline", port: blockedHttpPort, ...base });
      assert.equal(pipeline.status, 200, JSON.stringify(pipeline.body));
      blockedPipeline = pipeline.body.id as string;
    });

    after(async () => {
      for (const blocker of blockers) blocker.close();
      await nc?.close();
      await node?.stop();
      await nats?.stop();
      await db?.stop();
      await pg?.stop();
    });

    test("with room, pass-through logins are served and their records stored", async () => {
      assert.ok((await firstSuccess(() => postgresRows(pgPort))).length > 0);
      assert.ok((await firstSuccess(() => mysqlRows(mysqlPort))).length > 0);
      const postgres = (await storedMessages<AuditRecord>(nc, "WARDEN_AUDIT", "warden.audit.postgres.>")).map((r) => r.data.event);
      const mysqlEvents = (await storedMessages<AuditRecord>(nc, "WARDEN_AUDIT", "warden.audit.mysql.>")).map((r) => r.data.event);
      for (const events of [postgres, mysqlEvents]) {
        assert.ok(events.includes("port.opened"), events.join());
        assert.ok(events.includes("connection.outgoing"), events.join());
        assert.ok(events.includes("connection.pass-through"), events.join());
      }
      for (const id of [blockedExport, blockedPipeline]) assert.match((await servingReport(nc, id))?.error ?? "", /in use by another program/);
    });

    test("full: the logins end with the protocol's error, no row crosses, and a port whose opening is not stored is closed again", async () => {
      const jsm = await jetstreamManager(nc);
      const js = jetstream(nc);
      // A MySQL connection made while there is room: its COM_CHANGE_USER later is a new login, refused as one.
      const kept = await mysql.createConnection({ host: "127.0.0.1", port: mysqlPort, user: reader.user, password: reader.password, database: "app" });
      // Filled from outside (another node's records) to within the node's headroom: the node refuses every new record.
      const filler = JSON.stringify({ event: "filler", message: "x".repeat(900) });
      while ((await jsm.streams.info("WARDEN_AUDIT")).state.bytes <= auditMaxBytes - 1200) await js.publish(fillerSubject, filler);
      // The node reads the stream's fill once a second.
      await new Promise((resolve) => setTimeout(resolve, 1500));
      const storedBefore = (await jsm.streams.info("WARDEN_AUDIT")).state.messages;

      const pgRefusal = await postgresRows(pgPort).then(
        (rows) => assert.fail(`rows crossed a PostgreSQL export with no audit record: ${JSON.stringify(rows).slice(0, 200)}`),
        (error: { code?: string; message: string }) => error,
      );
      assert.equal(pgRefusal.code, "08006", pgRefusal.message);
      assert.match(pgRefusal.message, /cannot record this connection in its audit log/);

      const mysqlRefusal = await mysqlRows(mysqlPort).then(
        (rows) => assert.fail(`rows crossed a MySQL export with no audit record: ${JSON.stringify(rows).slice(0, 200)}`),
        (error: { errno?: number; sqlState?: string; message: string }) => error,
      );
      assert.equal(mysqlRefusal.errno, 1040, mysqlRefusal.message);
      assert.equal(mysqlRefusal.sqlState, "08004");
      assert.match(mysqlRefusal.message, /cannot record this connection in its audit log/);
      const changed = await kept.changeUser({ user: reader.user, password: reader.password }).then(
        () => assert.fail("COM_CHANGE_USER logged in again with no audit record"),
        (error: { errno?: number; message: string }) => error,
      );
      assert.equal(changed.errno, 1040, changed.message);
      assert.match(changed.message, /cannot record this login in its audit log/);
      await kept.end().catch(() => undefined);
      assert.equal((await jsm.streams.info("WARDEN_AUDIT")).state.messages, storedBefore, "nothing more was stored");
      assert.ok(
        node.lines.some((line) => line.includes("audit record not stored") && line.includes("connection.outgoing")),
        "the unstored records are in the node's log",
      );

      // The ports are free now: the node opens them at its next try (within 5 s), but may not serve them unaudited.
      for (const blocker of blockers) await new Promise<void>((resolve) => blocker.close(() => resolve()));
      blockers = [];
      for (const id of [blockedExport, blockedPipeline]) {
        await until(
          `export ${id} reports its unaudited opening`,
          async () => /audit log did not store the opening of its port/.test((await servingReport(nc, id))?.error ?? ""),
          15_000,
        );
        assert.equal((await servingReport(nc, id))?.serving, null, "not served");
      }
      await assert.rejects(postgresRows(blockedPort), "nothing is served on the port");
      await assert.rejects(fetch(`http://127.0.0.1:${blockedHttpPort}/`), "nothing is served on the pipeline's port");
    });

    test("with room again, the same logins are served and the port opens", async () => {
      const jsm = await jetstreamManager(nc);
      await jsm.streams.purge("WARDEN_AUDIT", { filter: fillerSubject });
      assert.ok((await firstSuccess(() => postgresRows(pgPort), 10_000)).length > 0);
      assert.ok((await firstSuccess(() => mysqlRows(mysqlPort), 10_000)).length > 0);
      assert.ok((await firstSuccess(() => postgresRows(blockedPort), 15_000)).length > 0);
      assert.equal((await servingReport(nc, blockedExport))?.error, null);
      await until("the pipeline's port is served", async () => (await servingReport(nc, blockedPipeline))?.serving != null, 15_000);
    });
  });
}
