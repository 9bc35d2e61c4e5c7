import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { Client } from "pg";
import type { NatsServerProcess } from "../../service/nats-server";
import { realisticPolicy } from "../../testkit/policy";
import { roles } from "../fixtures/postgres-population";
import { PostgresServer } from "../../testkit/postgres";
import { startUsersExport, type UsersExportStack } from "../helpers/users-export";
import { assertAddressShare, assertLoginFloodHeld, assertRefusalsCounted } from "../helpers/login-flood";

const loginTimeoutMs = 3_000;
const maxLoggingIn = 64;
const perAddress = 16;

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
    try {
      // From 60 loopback addresses, 10 each: the per-export cap is what stops them, not the per-address one.
      await assertLoginFloodHeld({
        port: exportPort,
        maxLoggingIn,
        loginTimeoutMs,
        addresses: 60,
        refusedTold: "53300",
        cutTold: "08006",
        stillWorking: async () => assert.equal(await rows(client), expected, "the logged-in session answers as before"),
      });
      const fresh = await loggedIn();
      assert.equal(await rows(fresh), expected, "the places are free again: a new client logs in");
      await fresh.end();
    } finally {
      await client.end();
    }
    await assertRefusalsCounted(nats.url, "postgres", exportId, 600 - maxLoggingIn);
  });

  test("one address gets at most its share of the places", async () => {
    await assertAddressShare(exportPort, perAddress, async () => {
      const client = await loggedIn();
      assert.ok((await rows(client)) > 0, "another address still logs in");
      await client.end();
    });
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
