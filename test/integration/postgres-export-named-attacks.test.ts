// What a named statement, portal or cursor returns is what the backend confirmed: a Parse or Bind
// the backend refused (the name was taken: PostgreSQL keeps the old one) and names an ended
// transaction left behind must not make the export read rows with another statement's columns.
// The attacks are in test/fixtures/postgres-named-attacks.ts; each runs batch by batch and
// pipelined, directly (where it must leak a forbidden value) and through a read-only export (where
// none may cross). The same messages used as a client means them still show the allowed user's
// email through the export.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { PostgresServer } from "../../testkit/postgres";
import { WireClient } from "../helpers/pg-wire";
import { CatalogExports } from "../fixtures/postgres-catalog";
import { bind, close, execute, namedAttacks, namedAttackSetup, ownEmailSql, parse, query, runBatches, sync } from "../fixtures/postgres-named-attacks";
import { roles } from "../fixtures/postgres-population";

describe("PostgreSQL exports: a named statement, portal or cursor is read with the columns the backend confirmed", () => {
  const world = new CatalogExports();
  let pg: PostgresServer;
  let readOnlyPort: number;
  let forbidden: string[];

  const leaked = (text: string) => forbidden.filter((value) => text.includes(value));
  const open = (port: number) => () => WireClient.connect(port, roles.trusted.user, "app");

  before(async () => {
    await world.start("pg-named-attacks-1", { setupSql: namedAttackSetup });
    ({ pg, readOnlyPort, forbidden } = world);
  });

  after(() => world.stop());

  for (const [name, batches] of Object.entries(namedAttacks))
    for (const pipelined of [false, true])
      test(`${name}${pipelined ? ", pipelined" : ""}`, async () => {
        const direct = await runBatches(open(pg.port), batches, pipelined);
        assert.ok(leaked(direct).length > 0, `the attack is real: ${direct.slice(-300)}`);
        const exported = await runBatches(open(readOnlyPort), batches, pipelined);
        assert.deepEqual(leaked(exported), [], exported.slice(-300));
      });

  test("the same names used as meant (Close before Parse, a savepoint rolled back over nothing, a new transaction's Bind, cursors WITH HOLD after their transaction) still show the allowed user's email", async () => {
    const batches = [
      [parse("s", "SELECT relname::text FROM pg_catalog.pg_class"), sync()],
      [close("S", "s"), parse("s", ownEmailSql), bind("", "s"), execute(""), sync()],
      [query("BEGIN")],
      [bind("p", "s"), sync()],
      [query("SAVEPOINT sp")],
      [query("ROLLBACK TO sp")],
      [execute("p"), sync()],
      [close("P", "p"), bind("p", "s"), execute("p"), sync()],
      [query("COMMIT")],
      [query("BEGIN")],
      [bind("p", "s"), execute("p"), sync()],
      [query("COMMIT")],
      [query(`DECLARE h CURSOR WITH HOLD FOR ${ownEmailSql}`)],
      [query("FETCH ALL h")],
      [query("BEGIN")],
      [query(`DECLARE k CURSOR WITH HOLD FOR ${ownEmailSql}`)],
      [query("COMMIT")],
      [query("FETCH ALL k")],
      [query("CLOSE h; CLOSE k")],
    ];
    for (const pipelined of [false, true]) {
      const exported = await runBatches(open(readOnlyPort), batches, pipelined);
      assert.deepEqual(leaked(exported), [], exported.slice(-300));
      const shown = exported.match(/(?<![\w-])accepted@example\.com/g)?.length ?? 0;
      assert.equal(shown, 6, `${pipelined ? "pipelined" : "batch by batch"}: the allowed user's email, once per Execute and FETCH: ${exported.slice(-600)}`);
    }
  });
});
