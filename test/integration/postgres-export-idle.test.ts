import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { Client } from "pg";
import { realisticPolicy } from "../../testkit/policy";
import { roles } from "../fixtures/postgres-population";
import { startUsersExport, type UsersExportStack } from "../helpers/users-export";

const idleTimeoutMs = 3_000;

// EXPORT_IDLE_TIMEOUT_MS: a session with no traffic either way ends with 57P05; traffic in
// either direction keeps it. PostgreSQL itself (idle_session_timeout 0) keeps both.
describe("PostgreSQL exports: idle sessions end after EXPORT_IDLE_TIMEOUT_MS", () => {
  let stack: UsersExportStack | undefined;
  let exportPort = 0;
  const open = async (port: number): Promise<Client> => {
    const c = new Client({ host: "127.0.0.1", port, user: roles.scram.user, password: roles.scram.password, database: "app", connectionTimeoutMillis: 5_000 });
    await c.connect();
    return c;
  };
  const rows = async (c: Client): Promise<number> => (await c.query("SELECT id, email FROM users")).rowCount ?? -1;

  before(async () => {
    stack = await startUsersExport({
      nodeId: "pg-idle-1",
      // In proxy workers (the default) and on the node's own loop the session code is the same; workers are what runs in production.
      env: { EXPORT_WORKERS: "1", EXPORT_IDLE_TIMEOUT_MS: String(idleTimeoutMs) },
      policy: realisticPolicy(),
      connect: (port) => {
        exportPort = port;
        return open(port);
      },
    });
  });

  after(async () => {
    await stack?.stop();
  });

  test("an idle session is told 57P05 and ended, not before the timeout; a busy one and a direct one stay", async () => {
    const direct = await open(stack!.pg.port);
    const idle = await open(exportPort);
    const busy = await open(exportPort);
    const idleSince = Date.now();
    const lost = new Promise<{ code?: unknown; message?: string; at: number }>((resolve) =>
      idle.on("error", (error: Error & { code?: unknown }) => resolve({ code: error.code, message: error.message, at: Date.now() })),
    );
    // The busy client sends a query every half second for longer than twice the timeout.
    const until = Date.now() + idleTimeoutMs * 2 + 500;
    while (Date.now() < until) {
      assert.ok((await rows(busy)) > 0, "the busy session answers");
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
    const ended = await Promise.race([lost, new Promise<undefined>((resolve) => setTimeout(() => resolve(undefined), 2_000))]);
    assert.ok(ended, "the idle session ended");
    assert.equal(ended.code, "57P05", "it was told why (idle_session_timeout's SQLSTATE)");
    assert.match(String(ended.message), /nothing was sent or received for 3 s/);
    assert.ok(ended.at - idleSince >= idleTimeoutMs * 0.9, `not before the timeout (after ${ended.at - idleSince} ms)`);
    assert.ok(ended.at - idleSince <= idleTimeoutMs * 2, `not long after it (after ${ended.at - idleSince} ms)`);
    assert.ok((await rows(busy)) > 0, "the busy session goes on");
    assert.equal((await direct.query("SELECT 1 AS one")).rows[0].one, 1, "directly, an idle connection stays");
    await busy.end();
    await direct.end();
  });
});
