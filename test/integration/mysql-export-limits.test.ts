// Issue 26 item 3 for MySQL exports: connections that have not logged in have places of their own
// (per export and per address) and a login timeout, apart from logged-in sessions; an idle session
// ends; a logged-in client's packets are limited well under 64 MiB, and a client that has not
// logged in gets far less. A real MariaDB, nats-server and node; mysql2 as the logged-in client.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import mysql from "mysql2/promise";
import type { NatsServerProcess } from "../../service/nats-server";
import { call as request } from "../../testkit/http";
import { startNats } from "../../testkit/nats";
import { NodeProcess } from "../../testkit/node-process";
import { realisticPolicy } from "../../testkit/policy";
import { freePort } from "../../testkit/ports";
import { firstSuccess } from "../../testkit/wait";
import { MariaDbServer } from "../../testkit/mariadb";
import { createMysqlPopulation, reader } from "../fixtures/mysql-population";
import { createPopulation } from "../fixtures/population";
import { assertAddressShare, assertLoginFloodHeld, assertRefusalsCounted, silentConnection } from "../helpers/login-flood";

const loginTimeoutMs = 3_000;
const idleTimeoutMs = 4_000;
// Each connection logging in holds a backend connection (the greeting is the server's): the test MariaDB takes 50.
const maxLoggingIn = 32;
const perAddress = 8;

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
    await (await firstSuccess(() => openClient(), 15_000)).end();
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
    try {
      // From 100 loopback addresses, 6 each: the per-export cap is what stops them, not the per-address one.
      await assertLoginFloodHeld({
        port,
        maxLoggingIn,
        loginTimeoutMs,
        addresses: 100,
        // 1040, SQLSTATE 08004, in place of the greeting; the login timeout is 1159.
        refusedTold: "#08004",
        cutTold: "took too long",
        stillWorking: async () => assert.equal(await rows(client), expected, "the logged-in session answers as before"),
      });
      const fresh = await openClient();
      assert.equal(await rows(fresh), expected, "the places are free again: a new client logs in");
      await fresh.end();
    } finally {
      await client.end().catch(() => undefined);
    }
    await assertRefusalsCounted(nats.url, "mysql", exportId, 600 - maxLoggingIn);
  });

  test("one address gets at most its share of the places", async () => {
    await assertAddressShare(port, perAddress, async () => {
      const client = await openClient();
      assert.ok((await rows(client)) > 0, "another address still logs in");
      await client.end();
    });
  });

  test("a client that has not logged in cannot send a large packet: its connection ends at once", async () => {
    const { socket, closed } = await silentConnection(port, "127.0.0.6");
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
