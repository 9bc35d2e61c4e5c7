// Issue 27, part 2: policy pushdown. A pushdown export rewrites each mapped table of a SELECT into a
// derived table of the allowed rows with the disallowed values NULL, joined to a verdict table the
// service keeps in the backing database (schema warden). Aggregates, joins, window functions and
// predicates then compute over allowed data only: each query below gives through the export the
// answer it gives directly on a copy that holds only the allowed rows and values. A change to a
// user is in the table before the next statement; clients cannot reach the verdict schema; the
// attacks of the row-by-row suites that leak directly do not leak through a pushdown export.
// Sessions run in proxy worker processes (the default), so the verdict state crosses to them.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { Client } from "pg";
import { freePort } from "../../testkit/ports";
import { ALLOWED, analyst, DROPPED, PushdownHarness } from "../fixtures/postgres-pushdown";
import { roles } from "../fixtures/postgres-population";
import { usersRows } from "../fixtures/postgres-population";
import { forbiddenValues } from "../fixtures/postgres-verdicts";

describe("PostgreSQL exports with pushdown: aggregates, joins and predicates over allowed data only", () => {
  const harness = new PushdownHarness();
  const { run, onCopy, call } = harness;

  before(() => harness.start("pushdown"));
  after(() => harness.stop());

  test("pushdown needs the export's credentials", async () => {
    const refused = await call("PUT", "/export", {
      type: "postgres",
      endpoint: `127.0.0.1:${harness.pg.port}`,
      resolverGroup: "users-table",
      metadata: { type: "platformUse", purposeId: "service" },
      pushdown: true,
    });
    assert.equal(refused.status, 400);
    assert.match(JSON.stringify(refused.body), /pushdown needs the export's credentials/);
  });

  test("count, avg, GROUP BY, a window function, a CTE and a join of two mapped tables answer as on a copy of the allowed data", async () => {
    const queries = [
      "SELECT count(*) FROM users",
      "SELECT count(email), count(name), count(login), avg(clicks), sum(clicks) FROM users",
      "SELECT name IS NULL AS hidden, count(*), max(clicks) FROM users GROUP BY 1 ORDER BY 1",
      "SELECT email, row_number() OVER (ORDER BY clicks), rank() OVER (ORDER BY name) FROM users ORDER BY clicks",
      "WITH busy AS (SELECT clicks, email FROM users WHERE clicks > 2) SELECT count(*), sum(clicks), string_agg(email, ',' ORDER BY email) FROM busy",
      "SELECT count(*), count(o.item) FROM users u, orders o",
      "SELECT o.item, u.email FROM orders o JOIN users u ON split_part(o.item, '-', 2) = split_part(u.email, '@', 1) ORDER BY 1",
      "SELECT count(*) FROM users WHERE email LIKE 'not%'",
      "SELECT count(*) FROM users WHERE secret IS NOT NULL",
    ];
    for (const sql of queries) {
      const expected = await onCopy(sql);
      assert.deepEqual(await run("export", sql), expected, sql);
    }
    const [[count]] = (await run("export", "SELECT count(*) FROM users")) as [[string]];
    assert.equal(Number(count), [...harness.allowed.values()].filter(Boolean).length, "counts the allowed users only");
  });

  test("the attacks of the row-by-row suites that leak directly do not leak through a pushdown export", async () => {
    // Users' values, and orders items of users whose usage may not be used.
    const forbidden = [
      ...forbiddenValues(harness.allowed),
      ...usersRows().flatMap((r) => (r.id && !harness.allowed.get(r.id)?.has("usage") ? [`item-${r.id}`] : [])),
    ];
    const attacks = [
      "SELECT a.id, b.email FROM users a, users b",
      `SELECT (SELECT string_agg(email, ',') FROM users) AS everyone`,
      `WITH x AS (SELECT * FROM users) SELECT json_agg(x) FROM x`,
      `SELECT string_agg(item, ',') FROM orders`,
      `SELECT string_agg(secret, ',') FROM users`,
    ];
    for (const sql of attacks) {
      const direct = JSON.stringify(await run("direct", sql));
      assert.ok(
        forbidden.some((value) => direct.includes(value)),
        `the attack is real: ${sql}`,
      );
      const exported = JSON.stringify(await run("export", sql));
      assert.deepEqual(
        forbidden.filter((value) => exported.includes(value)),
        [],
        `${sql}: ${exported.slice(0, 200)}`,
      );
    }
    // The inference through WHERE: directly the predicate on the dropped user's email holds; through the export it sees NULL.
    const inference = `SELECT count(*) FROM users WHERE (SELECT email FROM users WHERE id = '${DROPPED}') LIKE 'not%'`;
    assert.notDeepEqual(await run("direct", inference), [["0"]]);
    assert.deepEqual(await run("export", `SELECT count(*) FROM users WHERE (SELECT email FROM users WHERE id = '${DROPPED}') LIKE 'not%'`), [["0"]]);
  });

  test("the verdict schema cannot be read, written or named through the export; directly it holds who may be used", async () => {
    const [[table]] = (await run(
      "direct",
      "SELECT relname FROM pg_catalog.pg_class WHERE relnamespace = 'warden'::regnamespace AND relname LIKE 'verdicts%'",
    )) as [[string]];
    const direct = (await run("direct", `SELECT user_id FROM warden."${table}"`)).flat();
    assert.ok(direct.includes(ALLOWED) && !direct.includes(DROPPED), "directly, the table names who may be used");
    for (const sql of [
      "SELECT * FROM warden.verdict_versions",
      "SELECT warden.require_verdicts('x', 0)",
      "DELETE FROM warden.verdict_versions",
      "SELECT * FROM users WHERE id IN (SELECT export_id FROM warden.verdict_versions)",
    ]) {
      await assert.rejects(run("export", sql), (error: Error & { code?: string }) => error.code === "42501" || error.code === "25006", sql);
    }
  });

  test("a consent revoked between two statements changes the second answer (an opt-in purpose)", async () => {
    const optInPort = await freePort();
    const created = await call("PUT", "/export", {
      type: "postgres",
      endpoint: `127.0.0.1:${harness.pg.port}`,
      resolverGroup: "users-table",
      metadata: { type: "platformUse", purposeId: "personalization" },
      port: optInPort,
      credentials: { user: roles.scram.user, password: roles.scram.password },
      pushdown: true,
    });
    assert.equal(created.status, 200, JSON.stringify(created.body));
    assert.equal((await call("PUT", "/user/consent", { userId: ALLOWED, consents: { affirmativeConsents: [{ purposeId: "personalization" }] } })).status, 200);
    const client = new Client({
      host: "127.0.0.1",
      port: optInPort,
      user: analyst.uid,
      password: analyst.password,
      database: "app",
      ssl: { ca: harness.ca, rejectUnauthorized: false },
    });
    const until = Date.now() + 15_000;
    while (
      !(await client.connect().then(
        () => true,
        () => false,
      ))
    ) {
      if (Date.now() > until) throw new Error("the opt-in export did not open");
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    try {
      const sql = `SELECT count(*), sum(clicks) FROM users WHERE clicks IS NOT NULL`;
      const before = (await client.query({ text: sql, rowMode: "array" })).rows;
      assert.equal(before[0][0], "1", "only the user who opted in");
      assert.equal((await call("PUT", "/user/consent/revoke", { userId: ALLOWED, purposeId: "personalization" })).status, 200);
      assert.deepEqual((await client.query({ text: sql, rowMode: "array" })).rows, [["0", null]], "the next statement on the same connection");
    } finally {
      await client.end().catch(() => undefined);
    }
  });

  test("a user's change is in the verdict table before the next statement: an erased user's rows are gone at once", async () => {
    const before = await run("export", `SELECT count(*) FROM users WHERE email = '${ALLOWED}@example.com'`);
    assert.deepEqual(before, [["1"]]);
    assert.equal((await call("DELETE", `/user/${ALLOWED}`)).status, 200);
    assert.deepEqual(await run("export", `SELECT count(*) FROM users WHERE email = '${ALLOWED}@example.com'`), [["0"]]);
  });
});
