import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { connect, type Socket } from "node:net";
import { Client } from "pg";
import type { AuditRecord } from "../../actors/runtime/event-log";
import type { NatsServerProcess } from "../../service/nats-server";
import { realisticPolicy } from "../../testkit/policy";
import { roles } from "../fixtures/postgres-population";
import { connectTo, storedMessages } from "../../testkit/nats";
import { PostgresServer } from "../../testkit/postgres";
import { startUsersExport, type UsersExportStack } from "../helpers/users-export";

const loginTimeoutMs = 3_000;
const maxLoggingIn = 64;
const perAddress = 16;

/** A connection that never logs in: it connects (from `localAddress`) and says nothing. */
function idle(port: number, localAddress: string): Promise<{ socket: Socket; closed: Promise<string> }> {
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

describe("PostgreSQL exports: connections logging in are limited apart from sessions", () => {
  let nats: NatsServerProcess;
  let pg: PostgresServer;
  let exportPort: number;
  let exportId: string;
  const loggedIn = async (): Promise<Client> => {
    const c = new Client({
      host: "127.0.0.1",
      port: exportPort,
      user: roles.scram.user,
      password: roles.scram.password,
      database: "app",
      connectionTimeoutMillis: 5_000,
    });
    c.on("error", () => undefined);
    await c.connect();
    return c;
  };
  const rows = async (c: Client): Promise<number> => (await c.query("SELECT id, email FROM users")).rowCount ?? -1;

  let stack: UsersExportStack | undefined;
  before(async () => {
    // Proxy workers (the default): sessions log in in a worker, which tells the node.
    const env = {
      EXPORT_WORKERS: "2",
      EXPORT_LOGIN_TIMEOUT_MS: String(loginTimeoutMs),
      EXPORT_MAX_LOGGING_IN: String(maxLoggingIn),
      EXPORT_MAX_LOGGING_IN_PER_ADDRESS: String(perAddress),
    };
    stack = await startUsersExport({
      nodeId: "pg-limits-1",
      env,
      policy: realisticPolicy(),
      connect: (port) => {
        exportPort = port;
        return loggedIn();
      },
    });
    ({ pg, nats, exportPort, exportId } = stack);
  });

  after(async () => {
    await stack?.stop();
  });

  test("600 connections that never log in: a logged-in client keeps working, the flood gets at most its places, and they free at the login timeout", async () => {
    const client = await loggedIn();
    const expected = await rows(client);
    assert.ok(expected > 0);
    // From 60 loopback addresses, 10 each: the per-export cap is what stops them, not the per-address one.
    const flood = await Promise.all(Array.from({ length: 600 }, (_, i) => idle(exportPort, `127.0.0.${10 + (i % 60)}`)));
    const floodStarted = Date.now();
    try {
      for (let i = 0; i < 10; i++) assert.equal(await rows(client), expected, "the logged-in session answers as before");
      const refused = await Promise.race([
        Promise.all(flood.slice(maxLoggingIn + 50).map((f) => f.closed)),
        new Promise<never>((_, reject) => setTimeout(() => reject(new Error("refusals not sent at once")), loginTimeoutMs - 500)),
      ]);
      assert.ok(
        refused.every((told) => told.includes("53300") && told.includes("too many connections are logging in")),
        "the connections over the cap are told why (SQLSTATE 53300)",
      );
      const told = await Promise.all(flood.map((f) => f.closed));
      const cutAtTimeout = told.filter((t) => t.includes("08006")).length;
      assert.ok(cutAtTimeout > 0 && cutAtTimeout <= maxLoggingIn, `at most ${maxLoggingIn} held a place until the login timeout, got ${cutAtTimeout}`);
      assert.ok(Date.now() - floodStarted >= loginTimeoutMs * 0.9, "held places were cut at the timeout, not before");
      assert.equal(await rows(client), expected, "still working after the flood");
      const fresh = await loggedIn();
      assert.equal(await rows(fresh), expected, "the places are free again: a new client logs in");
      await fresh.end();
    } finally {
      for (const f of flood) f.socket.destroy();
      await client.end();
    }
    const nc = await connectTo(nats.url);
    try {
      const records = (await storedMessages<AuditRecord>(nc, "WARDEN_AUDIT", "warden.audit.postgres.>")).filter(
        (m) => m.data.event === "connection.refused" && (m.data.details as { exportId: string }).exportId === exportId,
      );
      assert.ok(records.length >= 1 && records.length <= 4, `refusals audited as counts, not ${600 - maxLoggingIn} records: ${records.length}`);
    } finally {
      await nc.close();
    }
  });

  test("one address gets at most its share of the places", async () => {
    const flood = await Promise.all(Array.from({ length: perAddress + 10 }, () => idle(exportPort, "127.0.0.5")));
    try {
      const refused = await Promise.all(flood.slice(perAddress).map((f) => f.closed));
      assert.ok(
        refused.every((told) => told.includes("too many connections from your address")),
        "the address's extra connections are refused at once",
      );
      const client = await loggedIn();
      assert.ok((await rows(client)) > 0, "another address still logs in");
      await client.end();
    } finally {
      for (const f of flood) f.socket.destroy();
    }
  });

  test("a logged-in client's message over EXPORT_MAX_MESSAGE_BYTES ends its connection; PostgreSQL itself would buffer it", async () => {
    const big = `SELECT '${"x".repeat(9 * 1024 * 1024)}' AS padding`;
    const direct = new Client({ host: "127.0.0.1", port: pg.port, user: roles.scram.user, password: roles.scram.password, database: "app" });
    await direct.connect();
    assert.equal((await direct.query(big)).rowCount, 1, "directly, a 9 MiB statement is taken");
    await direct.end();
    const client = await loggedIn();
    await assert.rejects(client.query(big), /message|terminat|Connection/i, "through the export it is refused");
    await client.end().catch(() => undefined);
    const after = await loggedIn();
    assert.ok((await rows(after)) > 0, "the export goes on");
    await after.end();
  });
});
