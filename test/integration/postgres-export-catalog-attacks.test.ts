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
import { catalogAttacks, catalogAttackSetup, type CatalogVia } from "../fixtures/postgres-catalog-attacks";
import { roles } from "../fixtures/postgres-population";

describe("PostgreSQL exports: catalog reads do not read back state a statement set from values", () => {
  const world = new CatalogExports();
  let pg: PostgresServer;
  let readOnlyPort: number;
  let forbidden: string[];

  /** Runs the statements in order on one connection; the rows of each (or its error message), as text. */
  const session = async (port: number, statements: readonly string[]): Promise<string[]> => {
    const client = world.client(port);
    await client.connect();
    try {
      const out: string[] = [];
      for (const sql of statements) {
        out.push(
          await client.query({ text: sql, rowMode: "array" }).then(
            (result) => JSON.stringify(result.rows),
            (error: Error) => `error: ${error.message}`,
          ),
        );
      }
      return out;
    } finally {
      await client.end().catch(() => undefined);
    }
  };
  /** Sends each batch of messages on one bare protocol connection, waiting for its ReadyForQuery; the text of every answer. */
  const wire = async (port: number, batches: readonly Buffer[][]): Promise<string> => {
    const client = await WireClient.connect(port, roles.trusted.user, "app");
    try {
      let out = "";
      for (const batch of batches) {
        client.send(...batch);
        out += (await client.until((m) => m.code === "Z")).map((m) => m.code + m.body.toString("latin1")).join("");
      }
      return out;
    } finally {
      client.close();
    }
  };
  const leaked = (text: string) => forbidden.filter((value) => text.includes(value));

  before(async () => {
    await world.start("pg-catalog-attacks-1", { setupSql: catalogAttackSetup });
    ({ pg, readOnlyPort, forbidden } = world);
  });

  after(() => world.stop());

  const via = (port: number): CatalogVia => ({ session: (statements) => session(port, statements), wire: (batches) => wire(port, batches) });
  for (const [name, attack] of Object.entries(catalogAttacks)) {
    test(name, async () => {
      const direct = await attack(via(pg.port), via(pg.port));
      assert.ok(leaked(direct).length > 0, `the attack is real: ${direct.slice(-300)}`);
      const exported = await attack(via(readOnlyPort), via(pg.port));
      assert.deepEqual(leaked(exported), [], exported.slice(-300));
    });
  }
});
