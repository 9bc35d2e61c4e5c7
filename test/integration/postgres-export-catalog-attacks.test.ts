// Issue 27, part 1, attacked: statements that passed as catalog reads and were not. Session state
// a row-by-row statement set from a value it may not show (its rows are dropped, its functions
// still run), statement texts of cursors application code opened, and functions of a row that
// attribute notation (`c.name`) calls; a catalog read's Parse or Bind that the backend refused
// because the name was taken (the old statement or cursor stays). The attacks are in
// test/fixtures/postgres-catalog-attacks.ts (the pushdown suite runs them too). Each is a sequence
// on one connection through a read-only export; each is shown leaking a forbidden value directly
// and not through it.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { PostgresServer } from "../../testkit/postgres";
import { WireClient } from "../helpers/pg-wire";
import { CatalogExports } from "../fixtures/postgres-catalog";
import { catalogAttacks, catalogAttackSetup, catalogVia } from "../fixtures/postgres-catalog-attacks";
import { roles } from "../fixtures/postgres-population";

describe("PostgreSQL exports: catalog reads do not read back state a statement set from values", () => {
  const world = new CatalogExports();
  let pg: PostgresServer;
  let readOnlyPort: number;
  let forbidden: string[];

  const leaked = (text: string) => forbidden.filter((value) => text.includes(value));

  before(async () => {
    await world.start("pg-catalog-attacks-1", { setupSql: catalogAttackSetup });
    ({ pg, readOnlyPort, forbidden } = world);
  });

  after(() => world.stop());

  const via = (port: number) =>
    catalogVia(
      () => world.client(port),
      () => WireClient.connect(port, roles.trusted.user, "app"),
    );
  for (const [name, attack] of Object.entries(catalogAttacks)) {
    test(name, async () => {
      const direct = await attack(via(pg.port), via(pg.port));
      assert.ok(leaked(direct).length > 0, `the attack is real: ${direct.slice(-300)}`);
      const exported = await attack(via(readOnlyPort), via(pg.port));
      assert.deepEqual(leaked(exported), [], exported.slice(-300));
    });
  }
});
