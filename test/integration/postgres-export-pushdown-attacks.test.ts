// Adversarial pass over issue 27's pushdown (same harness as postgres-export-pushdown.test.ts): each
// attack leaks directly against PostgreSQL and must not leak through a read-only pushdown export.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { ALLOWED, PushdownHarness } from "../fixtures/postgres-pushdown";

describe("PostgreSQL exports with pushdown: attacks", () => {
  const harness = new PushdownHarness();
  const { run, call } = harness;

  before(() => harness.start("pushdown-attacks"));
  after(() => harness.stop());

  test("a statement prepared, bound or declared before a user's erase returns nothing of that user after it (a transaction's snapshot keeps the old verdicts)", async () => {
    const victim = `${ALLOWED}@example.com`;
    const sql = `SELECT email FROM users WHERE email = '${victim}'`;
    assert.deepEqual(await run("direct", sql), [[victim]], "directly, the value is in users");
    const client = harness.client("export");
    await client.connect();
    try {
      const rows = async (query: string | { name: string; text: string }) =>
        JSON.stringify((await client.query(typeof query === "string" ? { text: query, rowMode: "array" } : { ...query, rowMode: "array" })).rows);
      // REPEATABLE READ: every statement of the transaction reads the verdict table as it was at the first.
      await client.query("BEGIN ISOLATION LEVEL REPEATABLE READ");
      await client.query(`PREPARE by_sql AS ${sql}`);
      assert.equal(await rows({ name: "by_protocol", text: sql }), JSON.stringify([[victim]]), "allowed before the erase");
      await client.query(`DECLARE declared CURSOR FOR ${sql}`);
      assert.equal((await call("DELETE", `/user/${ALLOWED}`)).status, 200);
      const after = [await rows("EXECUTE by_sql"), await rows({ name: "by_protocol", text: sql }), await rows("FETCH ALL FROM declared")];
      assert.deepEqual(
        after.filter((text) => text.includes(victim)),
        [],
        "nothing of the erased user after the erase",
      );
      await client.query("COMMIT");
      // A fresh statement reads the new verdicts; the statements made before the erase can be made again.
      assert.equal(await rows(sql), "[]");
    } finally {
      await client.end().catch(() => undefined);
    }
  });
});
