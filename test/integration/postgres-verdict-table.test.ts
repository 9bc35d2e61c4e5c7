// The verdict table of a pushdown export (issue 27) against a real PostgreSQL and nats-server:
// built from every user the service stores, rebuilt at UTC midnight (an age override that ends at
// a birthday changes a verdict with the day, nothing else does), versioned from the clock, and a
// write older than the table's version (another node's, after a failover) rolled back.
// The decider is a stand-in whose verdict for "kid" turns with the test's clock: the engine's
// birthday rule is tested with the engine (test/unit); here the table must follow the day.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { Kvm } from "@nats-io/kv";
import type { NatsConnection } from "@nats-io/transport-node";
import pino from "pino";
import { Client } from "pg";
import { Buckets, stateKey } from "../../actors/runtime/addressing";
import type { MappingView, RowDecider, RowVerdict } from "../../exports/row-decider";
import { pushdownTarget, VerdictTable } from "../../proxies/postgres/verdict-table";
import type { NatsServerProcess } from "../../service/nats-server";
import { connectTo, startNats } from "../../testkit/nats";
import { PostgresServer } from "../../testkit/postgres";

const birthday = Date.UTC(2026, 10, 25);

describe("pushdown verdict tables", () => {
  let pg: PostgresServer;
  let nats: NatsServerProcess;
  let nc: NatsConnection;
  let now = birthday - 10_000;
  let midnight: (() => void) | undefined;
  const clock = {
    now: () => now,
    setTimeout: (run: () => void, ms: number) => {
      if (now + ms >= birthday) midnight = run;
      return setTimeout(() => undefined, 0);
    },
  };
  const mapping: MappingView = { key: "m", fields: new Map([["users.clicks", { recordField: "users.clicks", category: "usage", resourceOrder: -1 }]]) };
  const verdict = (allowed: boolean): RowVerdict => ({ allowed, reason: allowed ? "ALLOWED" : "DENIED", categories: new Set(allowed ? ["usage"] : []) });
  const decider: RowDecider = {
    mapping: () => mapping,
    verdict: (userId) => verdict(userId === "adult" || (userId === "kid" && now >= birthday)),
    expiresAt: () => undefined,
    load: async () => undefined,
  };
  const connection = () => ({ host: "127.0.0.1", port: pg.port, user: "postgres", password: "postgres" });
  const rows = async (table: string) => {
    const client = new Client({ ...connection(), database: "app" });
    await client.connect();
    try {
      const users = (await client.query(`SELECT user_id FROM ${table} ORDER BY 1`)).rows.map((r: { user_id: string }) => r.user_id);
      const [{ version }] = (await client.query("SELECT version FROM warden.verdict_versions")).rows as [{ version: string }];
      return { users, version: Number(version) };
    } finally {
      await client.end();
    }
  };
  const current = (table: VerdictTable) =>
    new Promise<void>((resolve, reject) => {
      const check = () => {
        const state = table.current;
        if (state.current) resolve();
        else if (state.error) reject(new Error(state.error));
      };
      table.onState(check);
      check();
    });

  before(async () => {
    pg = await PostgresServer.start();
    pg.sql("CREATE DATABASE app");
    nats = await startNats();
    nc = await connectTo(nats);
    const kv = await new Kvm(nc).create(Buckets.state);
    for (const id of ["adult", "kid"]) await kv.put(stateKey("user", id), JSON.stringify({ userId: id }));
  });

  after(async () => {
    await nc?.close();
    await nats?.stop();
    await pg?.stop();
  });

  test("built from the stored users, rebuilt at UTC midnight (the birthday), each write a higher version; an older writer is rolled back", async () => {
    const target = pushdownTarget("export-1", "00000000000000000000");
    const table = new VerdictTable({ target, database: "app", connection: connection(), decider, nc, log: pino({ level: "silent" }), clock });
    try {
      await current(table);
      const before = await rows(target.table);
      assert.deepEqual(before.users, ["adult"], "the child is not allowed before the birthday");
      assert.equal(before.version, table.current.version);
      assert.ok(midnight, "a rebuild is scheduled for the next UTC midnight");
      now = birthday + 1;
      midnight!();
      assert.equal(table.current.current, false, "from midnight on, statements wait for the rebuild");
      await current(table);
      const after = await rows(target.table);
      assert.deepEqual(after.users, ["adult", "kid"]);
      assert.ok(after.version > before.version);

      // A node whose clock is behind (it served the export before a failover) cannot overwrite newer verdicts.
      now = birthday - 60_000;
      const stale = new VerdictTable({ target, database: "app", connection: connection(), decider, nc, log: pino({ level: "silent" }), clock });
      try {
        const failed = await current(stale).then(
          () => undefined,
          (error: Error) => error.message,
        );
        assert.match(failed ?? "", /a newer version of the verdicts was written by another node/);
        assert.deepEqual(await rows(target.table), after, "the newer table stands");
      } finally {
        await stale.close();
      }
    } finally {
      await table.close();
    }
  });
});
