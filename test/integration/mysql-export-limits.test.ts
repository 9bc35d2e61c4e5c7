// Issue 26 item 3 for MySQL exports: connections that have not logged in have places of their own
// (per export and per address) and a login timeout, apart from logged-in sessions; an idle session
// ends; a logged-in client's packets are limited well under 64 MiB, and a client that has not
// logged in gets far less. A real MariaDB, nats-server and node; mysql2 as the logged-in client.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { connect, type Socket } from "node:net";
import mysql from "mysql2/promise";
import type { AuditRecord } from "../../actors/runtime/event-log";
import type { NatsServerProcess } from "../../service/nats-server";
import { call as request } from "../../testkit/http";
import { connectTo, startNats, storedMessages } from "../../testkit/nats";
import { NodeProcess } from "../../testkit/node-process";
import { realisticPolicy } from "../../testkit/policy";
import { freePort } from "../../testkit/ports";
import { MariaDbServer } from "../../testkit/mariadb";
import { createMysqlPopulation, reader } from "../fixtures/mysql-population";
import { createPopulation } from "../fixtures/population";

const loginTimeoutMs = 3_000;
const idleTimeoutMs = 4_000;
// Each connection logging in holds a backend connection (the greeting is the server's): the test MariaDB takes 50.
const maxLoggingIn = 32;
const perAddress = 8;

/** A connection that never logs in: it connects (from `localAddress`), reads what it is told, and says nothing. */
function silent(port: number, localAddress: string): Promise<{ socket: Socket; closed: Promise<string> }> {
  return new Promise((resolve) => {
    const socket = connect({ host: "127.0.0.1", port, localAddress });
    let told = "";
    socket.on("data", (chunk: Buffer) => (told += chunk.toString("latin1")));
    socket.on("error", () => undefined);
    const closed = new Promise<string>((done) => socket.once("close", () => done(told)));
    socket.once("connect", () => resolve({ socket, closed }));
    socket.once("error", () => resolve({ socket, closed }));
  });
}

describe("MySQL exports: connections logging in are limited apart from sessions; idle sessions and large packets end", () => {
  let db: MariaDbServer;
  let nats: NatsServerProcess;
  let node: NodeProcess;
  let port: number;
  let exportId: string;
  const openClient = (p = port) =>
    mysql.createConnection({ host: "127.0.0.1", port: p, user: reader.user, password: reader.password, database: "app", connectTimeout: 5_000 });
  const rows = async (c: mysql.Connection): Promise<number> => ((await c.query("SELECT id, email FROM users"))[0] as unknown[]).length;

  before(async () => {
    db = await MariaDbServer.start();
    await createMysqlPopulation(db);
    nats = await startNats();
    node = await NodeProcess.start({
      nodeId: "mysql-limits-1",
      natsUrl: nats.url,
      env: {
        EXPORT_LOGIN_TIMEOUT_MS: String(loginTimeoutMs),
        EXPORT_IDLE_TIMEOUT_MS: String(idleTimeoutMs),
        EXPORT_MAX_LOGGING_IN: String(maxLoggingIn),
        EXPORT_MAX_LOGGING_IN_PER_ADDRESS: String(perAddress),
      },
    });
    const call = (method: string, path: string, body?: unknown) => request(node, method, path, body);
    assert.equal((await call("PUT", "/config", realisticPolicy())).status, 200);
    await createPopulation(call);
    port = await freePort();
    const created = await call("PUT", "/export", {
      type: "mysql",
      endpoint: `127.0.0.1:${db.port}`,
      resolverGroup: "users-table",
      metadata: { type: "platformUse", purposeId: "service" },
      port,
    });
    assert.equal(created.status, 200, JSON.stringify(created.body));
    exportId = (created.body as { id: string }).id;
    const until = Date.now() + 15_000;
    for (;;) {
      const ready = await openClient().then(
        async (c) => (await c.end(), true),
        () => false,
      );
      if (ready) break;
      if (Date.now() > until) throw new Error("the export did not open");
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  });

  after(async () => {
    await node?.stop();
    await nats?.stop();
    await db?.stop();
  });

  test("600 connections that never log in: a logged-in client keeps working, the flood gets at most its places, and they free at the login timeout", async () => {
    const client = await openClient();
    const expected = await rows(client);
    assert.ok(expected > 0);
    // From 100 loopback addresses, 6 each: the per-export cap is what stops them, not the per-address one.
    const flood = await Promise.all(Array.from({ length: 600 }, (_, i) => silent(port, `127.0.0.${10 + (i % 100)}`)));
    const floodStarted = Date.now();
    try {
      for (let i = 0; i < 10; i++) assert.equal(await rows(client), expected, "the logged-in session answers as before");
      const refused = await Promise.race([
        Promise.all(flood.slice(maxLoggingIn + 50).map((f) => f.closed)),
        new Promise<never>((_, reject) => setTimeout(() => reject(new Error("refusals not sent at once")), loginTimeoutMs - 500)),
      ]);
      assert.ok(
        refused.every((told) => told.includes("#08004") && told.includes("too many connections are logging in")),
        `the connections over the cap are told why (1040, SQLSTATE 08004) in place of the greeting: ${JSON.stringify([...new Set(refused)].slice(0, 3))}`,
      );
      assert.equal(await rows(client), expected, "still working during the flood");
      const told = await Promise.all(flood.map((f) => f.closed));
      const cutAtTimeout = told.filter((t) => t.includes("took too long")).length;
      assert.ok(cutAtTimeout > 0 && cutAtTimeout <= maxLoggingIn, `at most ${maxLoggingIn} held a place until the login timeout, got ${cutAtTimeout}`);
      assert.ok(Date.now() - floodStarted >= loginTimeoutMs * 0.9, "held places were cut at the timeout, not before");
      const fresh = await openClient();
      assert.equal(await rows(fresh), expected, "the places are free again: a new client logs in");
      await fresh.end();
    } finally {
      for (const f of flood) f.socket.destroy();
      await client.end().catch(() => undefined);
    }
    const nc = await connectTo(nats.url);
    try {
      const records = (await storedMessages<AuditRecord>(nc, "WARDEN_AUDIT", "warden.audit.mysql.>")).filter(
        (m) => m.data.event === "connection.refused" && (m.data.details as { exportId: string }).exportId === exportId,
      );
      assert.ok(records.length >= 1 && records.length <= 4, `refusals audited as counts, not ${600 - maxLoggingIn} records: ${records.length}`);
    } finally {
      await nc.close();
    }
  });

  test("one address gets at most its share of the places", async () => {
    const flood = await Promise.all(Array.from({ length: perAddress + 10 }, () => silent(port, "127.0.0.5")));
    try {
      const refused = await Promise.all(flood.slice(perAddress).map((f) => f.closed));
      assert.ok(
        refused.every((told) => told.includes("too many connections from your address")),
        "the address's extra connections are refused at once",
      );
      const client = await openClient();
      assert.ok((await rows(client)) > 0, "another address still logs in");
      await client.end();
    } finally {
      for (const f of flood) f.socket.destroy();
    }
  });

  test("a client that has not logged in cannot send a large packet: its connection ends at once", async () => {
    const { socket, closed } = await silent(port, "127.0.0.6");
    const started = Date.now();
    // After the greeting: a packet header announcing a 1 MiB HandshakeResponse.
    socket.write(Buffer.from([0x00, 0x00, 0x10, 0x01]));
    await closed;
    assert.ok(Date.now() - started < loginTimeoutMs - 500, "closed on the header, not at the login timeout");
  });

  test("an idle session ends after EXPORT_IDLE_TIMEOUT_MS with 1159; one that sends commands stays; MariaDB itself keeps both", async () => {
    const direct = await openClient(db.port);
    const idle = await openClient();
    const busy = await openClient();
    // mysql2 reports an error that answers no command with the number as `code`.
    const lost = new Promise<{ code?: unknown; message?: string }>((resolve) => idle.on("error", resolve));
    const until = Date.now() + idleTimeoutMs + 1_500;
    while (Date.now() < until) {
      await busy.query("SELECT 1");
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
    const error = await Promise.race([lost, new Promise<undefined>((resolve) => setTimeout(() => resolve(undefined), 1_000))]);
    assert.equal(error?.code, 1159, "the idle session was told why it ended (ER_NET_READ_INTERRUPTED)");
    assert.match(String(error?.message), /no command for 4 s/);
    assert.ok((await rows(busy)) > 0, "the busy session goes on");
    assert.deepEqual((await direct.query({ sql: "SELECT 1", rowsAsArray: true }))[0], [[1]], "directly, an idle connection stays");
    await busy.end();
    await direct.end();
    idle.destroy();
  });

  test("a logged-in client's packet over EXPORT_MAX_MESSAGE_BYTES (8 MiB) ends its connection; MariaDB itself takes it", async () => {
    const big = `SELECT '${"x".repeat(9 * 1024 * 1024)}' AS padding`;
    const direct = await openClient(db.port);
    assert.equal(((await direct.query(big))[0] as unknown[]).length, 1, "directly, a 9 MiB statement is taken");
    await direct.end();
    const client = await openClient();
    client.on("error", () => undefined);
    await assert.rejects(client.query(big), "through the export the connection ends");
    client.destroy();
    const after = await openClient();
    assert.ok((await rows(after)) > 0, "the export goes on");
    await after.end();
  });
});
