import { before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { loadSqlParser, parseStatements } from "../../proxies/postgres/analysis/sql-parser";
import { analyzeQuery, originalPosition, type QueryAnalysis, type ResultShape, type StatementPolicy } from "../../proxies/postgres/analysis/statement-analysis";
import { schemaView } from "../../proxies/postgres/analysis/schema-view";

const schema = schemaView([
  { schema: "public", name: "users", columns: ["id", "email", "login", "secret"], subjectColumns: ["id"], mapped: true },
  { schema: "public", name: "orders", columns: ["id", "user_id", "item"], subjectColumns: ["user_id"], mapped: true },
  { schema: "public", name: "countries", columns: ["code", "name"], subjectColumns: [], mapped: false },
]);
const readOnly: StatementPolicy = { allowWrites: false, strict: false };

const analyse = (sql: string, policy = readOnly) => analyzeQuery(sql, schema, policy);

/** The text as sent, hidden names made readable: `H` + their number. */
const sent = (analysis: QueryAnalysis) => analysis.text.replaceAll(analysis.hiddenPrefix, "H");

function shapeOf(analysis: QueryAnalysis, statement = 0): ResultShape {
  const effect = analysis.statements[statement]!;
  assert.ok("shape" in effect && effect.shape, `statement ${statement} has a shape`);
  return effect.shape;
}

/**
 * Each output column as `<group>:<relation>.<column>` (`-` for no group, `hidden` for an added
 * column, `…` for a run of unknown length), and each group's resource-context positions.
 */
function describeShape(shape: ResultShape): { columns: string[]; groups: number[][] } {
  const columns = shape.entries.map((entry) => {
    if (entry.kind === "gap") return "…";
    if (entry.column.hidden) return "hidden";
    if (entry.column.group < 0 || !entry.column.expect) return "-";
    return `${entry.column.group}:${entry.column.expect.relation.name}.${entry.column.expect.column}`;
  });
  return { columns, groups: shape.groups.map((g) => g.subjects) };
}

describe("PostgreSQL statement analysis: whose value is each output column", () => {
  before(() => loadSqlParser());

  test("a self-join: each instance's values get that instance's resource-context column", () => {
    const analysis = analyse("SELECT a.id, b.email FROM users a, users b WHERE a.id = 'adult'");
    assert.equal(sent(analysis), `SELECT a.id, b.email, "b"."id" AS "H0" FROM users a, users b WHERE a.id = 'adult'`);
    assert.deepEqual(describeShape(shapeOf(analysis)), { columns: ["0:users.id", "1:users.email", "hidden"], groups: [[0], [2]] });
  });

  test("JOIN ON true, CROSS JOIN, a.* and b.*: two instances, two groups", () => {
    for (const sql of ["SELECT a.id, b.email FROM users a JOIN users b ON true", "SELECT a.id, b.email FROM users a CROSS JOIN users b"]) {
      assert.deepEqual(describeShape(shapeOf(analyse(sql))).groups, [[0], [2]], sql);
    }
    const stars = describeShape(shapeOf(analyse("SELECT a.*, b.* FROM users a, users b")));
    assert.deepEqual(stars.columns, [
      "0:users.id",
      "0:users.email",
      "0:users.login",
      "0:users.secret",
      "1:users.id",
      "1:users.email",
      "1:users.login",
      "1:users.secret",
    ]);
    assert.deepEqual(stars.groups, [[0], [4]], "each instance's own id, already shown: no hidden column");
  });

  test("a join across two mapped tables: each side decided by its own resource-context column", () => {
    const analysis = analyse("SELECT o.user_id, u.email FROM orders o JOIN users u ON u.id <> o.user_id");
    assert.deepEqual(describeShape(shapeOf(analysis)), { columns: ["0:orders.user_id", "1:users.email", "hidden"], groups: [[0], [2]] });
  });

  test("LATERAL, subqueries in FROM and CTEs carry the hidden column up through every level", () => {
    const lateral = analyse("SELECT x.e FROM users a, LATERAL (SELECT email AS e FROM users b WHERE b.id <> a.id) x");
    assert.equal(sent(lateral), `SELECT x.e, "x"."H0" AS "H1" FROM users a, LATERAL (SELECT email AS e, "b"."id" AS "H0" FROM users b WHERE b.id <> a.id) x`);
    assert.deepEqual(describeShape(shapeOf(lateral)), { columns: ["0:users.email", "hidden"], groups: [[1]] });
    const correlated = analyse("SELECT x.e FROM users a, LATERAL (SELECT a.email AS e) x");
    assert.equal(
      sent(correlated),
      `SELECT x.e, "x"."H0" AS "H1" FROM users a, LATERAL (SELECT a.email AS e, "a"."id" AS "H0") x`,
      "a correlated value is the outer instance's: its id is read beside it",
    );
    const cte = analyse("WITH x AS (SELECT * FROM users) SELECT a.id, b.email FROM x a, x b");
    assert.equal(sent(cte), `WITH x AS (SELECT *, "users"."id" AS "H0" FROM users) SELECT a.id, b.email, "b"."H0" AS "H1" FROM x a, x b`);
    assert.deepEqual(describeShape(shapeOf(cte)).groups, [[0], [2]], "two references to one CTE are two instances");
    const nested = analyse("SELECT * FROM (SELECT b.email FROM users a, users b) s ORDER BY 1");
    assert.equal(
      sent(nested),
      `SELECT *, "s"."H0" AS "H1" FROM (SELECT b.email, "b"."id" AS "H0" FROM users a, users b) s ORDER BY 1`,
      "appended: ORDER BY 1 keeps its meaning",
    );
    assert.deepEqual(describeShape(shapeOf(nested)), { columns: ["0:users.email", "hidden", "hidden"], groups: [[2]] });
    const aliased = analyse("SELECT s.e FROM (SELECT email FROM users) s(e)");
    assert.equal(
      sent(aliased),
      `SELECT s.e, "s"."H0" AS "H1" FROM (SELECT email, "users"."id" AS "H0" FROM users) s(e)`,
      "a column alias list names the first columns: the hidden ones come last",
    );
  });

  test("what cannot be attributed has no group: scalar subqueries, set operations, recursive CTEs, grouped values, expressions, unknown and ambiguous names", () => {
    const none = (sql: string) =>
      assert.ok(
        describeShape(shapeOf(analyse(sql))).columns.every((c) => c === "-" || c === "…"),
        sql,
      );
    none("SELECT (SELECT email FROM users LIMIT 1) AS e");
    none("SELECT email FROM users UNION SELECT email FROM users");
    none("WITH RECURSIVE r AS (SELECT id, email FROM users UNION ALL SELECT u.id, u.email FROM users u JOIN r ON false) SELECT * FROM r");
    none("SELECT email FROM users GROUP BY email");
    none("SELECT DISTINCT ON (email) email FROM users");
    none("SELECT upper(email), email::text, (u).email FROM users u");
    none("SELECT id FROM users a JOIN orders o ON true");
    none("SELECT email FROM users a JOIN users b USING (id)");
    none("SELECT j.email FROM (users a JOIN orders o ON true) j");
    none("SELECT email FROM users_view");
    none("SELECT public.users.email FROM users");
    // One relation the export knows has the name: PostgreSQL takes it, or refuses the statement as ambiguous.
    assert.deepEqual(describeShape(shapeOf(analyse("SELECT email FROM users, unknown_table"))).columns, ["0:users.email", "hidden"]);
  });

  test("`*` over a relation the export does not know leaves a run of unknown length; the rest is still attributed", () => {
    assert.deepEqual(describeShape(shapeOf(analyse("SELECT * FROM users u JOIN foo f ON true"))).columns, [
      "0:users.id",
      "0:users.email",
      "0:users.login",
      "0:users.secret",
      "…",
    ]);
    assert.deepEqual(
      describeShape(shapeOf(analyse("SELECT * FROM countries, users"))).columns.slice(0, 3),
      ["-", "-", "0:users.id"],
      "an unmapped relation's columns have no group",
    );
  });

  test("cursors, SQL prepared statements and their uses", () => {
    const analysis = analyse(
      "BEGIN; DECLARE c CURSOR FOR SELECT a.id, b.email FROM users a, users b; FETCH ALL FROM c; MOVE ALL IN c; CLOSE c; PREPARE p AS SELECT email FROM users; EXECUTE p; DEALLOCATE p; DISCARD ALL",
    );
    assert.deepEqual(
      analysis.statements.map((s) => s.kind),
      ["control", "declare", "fetch", "other", "close", "prepare", "execute", "deallocate", "discard"],
    );
    assert.deepEqual(describeShape(shapeOf(analysis, 1)).groups, [[0], [2]]);
    assert.match(sent(analysis), /DECLARE c CURSOR FOR SELECT a.id, b.email, "b"."id" AS "H\d+" FROM users a, users b;/);
  });

  test("hidden columns are spliced after the last target whatever the expression holds, and the result must read back as intended", () => {
    for (const sql of [
      "SELECT x IS DISTINCT FROM y, email FROM users",
      "SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY 1) OVER (), email FROM users",
      "SELECT COLLATION FOR (email), email FROM users",
      "SELECT email, CASE WHEN true THEN (SELECT 1 FROM t LIMIT 1 OFFSET 0) END FROM users",
      'SELECT email AS "from" FROM users',
    ]) {
      const analysis = analyse(sql);
      assert.ok(analysis.text !== sql && /"H\d+" FROM users$/.test(sent(analysis)), `${sql} -> ${sent(analysis)}`);
    }
  });

  test("error positions map back to the client's text; inside an insertion there is none", () => {
    const sql = "SELECT 'é', email FROM users WHERE nope = 1";
    const analysis = analyse(sql);
    const inserted = sent(analysis).indexOf(', "users"');
    const nope = [...analysis.text].join("").indexOf("nope");
    assert.equal(originalPosition(analysis, nope + 1), sql.indexOf("nope") + 1);
    assert.equal(originalPosition(analysis, 3), 3);
    assert.equal(originalPosition(analysis, inserted + 3), undefined);
  });

  test("names the export reserves are refused", () => {
    assert.equal(analyse('SELECT 1 AS "__warden_x"').refusal?.sqlState, "42501");
    assert.equal(analyse("SELECT __warden_1 FROM users").refusal?.sqlState, "42501");
  });

  test("syntax errors are answered with PostgreSQL's own message and position", () => {
    const { refusal } = analyse("SELECT FROM WHERE x");
    assert.deepEqual(refusal, { sqlState: "42601", message: 'syntax error at or near "WHERE"', position: 13 });
  });
});

describe("PostgreSQL statement analysis: read-only exports", () => {
  before(() => loadSqlParser());

  const allowed = [
    "SELECT 1",
    "WITH x AS (SELECT 1) SELECT * FROM x",
    "VALUES (1)",
    "TABLE users",
    "BEGIN; DECLARE c CURSOR WITH HOLD FOR SELECT 1; FETCH 1 FROM c; MOVE ALL IN c; CLOSE c; COMMIT",
    "START TRANSACTION ISOLATION LEVEL SERIALIZABLE, READ ONLY",
    "SAVEPOINT s; RELEASE s; ROLLBACK TO s; ROLLBACK",
    "SHOW search_path",
    "SET search_path = public; RESET ALL; SET LOCAL statement_timeout = 5",
    "SET default_transaction_read_only = on",
    "PREPARE p AS SELECT 1; EXECUTE p; DEALLOCATE p; DEALLOCATE ALL",
    "EXPLAIN SELECT * FROM users",
    "EXPLAIN (VERBOSE) SELECT 1",
    "DISCARD ALL",
    "COPY users TO STDOUT",
    "SELECT set_config('search_path', 'public', false)",
    "SELECT set_config('TimeZone', $1::text, false)",
  ];
  const refused: Array<[string, string]> = [
    ["DO $$ BEGIN END $$", "25006"],
    ["CALL p()", "25006"],
    ["COPY users FROM STDIN", "25006"],
    ["COPY users TO '/tmp/x'", "42501"],
    ["INSERT INTO tmp SELECT generate_series(1, 3)", "25006"],
    ["UPDATE users SET email = 'x'", "25006"],
    ["DELETE FROM users", "25006"],
    ["MERGE INTO users u USING orders o ON u.id = o.user_id WHEN MATCHED THEN DELETE", "25006"],
    ["CREATE TABLE t (x int)", "25006"],
    ["ALTER ROLE CURRENT_USER SET application_name = 'x'", "25006"],
    ["DROP TABLE users", "25006"],
    ["GRANT SELECT ON users TO public", "25006"],
    ["SET ROLE postgres", "42501"],
    ["SET SESSION AUTHORIZATION postgres", "42501"],
    ["SET default_transaction_read_only = off", "25006"],
    ["SET transaction_read_only TO false", "25006"],
    ["SET TRANSACTION READ WRITE", "25006"],
    ["SET SESSION CHARACTERISTICS AS TRANSACTION READ WRITE", "25006"],
    ["BEGIN READ WRITE", "25006"],
    ["SELECT set_config('default_transaction_read_only', 'off', false)", "25006"],
    // a setting would keep a value read from a table, and a catalog read can show it (a TimeZone abbreviation)
    ["SELECT set_config('TimeZone', '<' || encode(convert_to(email, 'UTF8'), 'hex') || '>0', false) FROM users", "42501"],
    ["LISTEN leak", "25006"],
    ["NOTIFY leak", "25006"],
    ["LOCK users", "25006"],
    ["VACUUM users", "25006"],
    ["ANALYZE users", "25006"],
    ["EXPLAIN ANALYZE SELECT 1", "25006"],
    ["SELECT * INTO t FROM users", "25006"],
    ["SELECT * FROM users FOR UPDATE", "25006"],
    ["WITH d AS (DELETE FROM users RETURNING *) SELECT * FROM d", "25006"],
    ["PREPARE p AS DELETE FROM users", "25006"],
    ["DECLARE c CURSOR FOR SELECT * FROM users FOR SHARE", "25006"],
    ["PREPARE TRANSACTION 'x'", "25006"],
    ["SELECT 1; DELETE FROM users", "25006"],
    ["SELECT lo_create(0)", "25006"],
    ["SELECT lo_from_bytea(0, convert_to(email, 'UTF8')) FROM users", "25006"],
    ["SELECT pg_catalog.pg_notify('c', email) FROM users", "25006"],
    ["SELECT nextval('s')", "25006"],
    ["SELECT pg_logical_emit_message(true, 'p', email) FROM users", "25006"],
    ["SELECT dblink_exec('host=x', 'SELECT 1')", "25006"],
  ];

  test("settings of how the server reads statement text are refused on every export, writes allowed or not (standard_conforming_strings)", () => {
    for (const sql of [
      "SET standard_conforming_strings = off",
      "SET LOCAL standard_conforming_strings TO off",
      "RESET standard_conforming_strings",
      "ALTER ROLE me SET standard_conforming_strings = off",
      "ALTER DATABASE app SET standard_conforming_strings = off",
      "ALTER SYSTEM SET standard_conforming_strings = off",
      "SELECT set_config('standard_conforming_strings', 'off', false)",
      "SELECT 1 WHERE set_config(' STANDARD_conforming_STRINGS', 'off', true) IS NOT NULL",
      // a name that is not a constant could be any setting: pg_settings lists this one
      "SELECT set_config(name, 'off', false) FROM pg_settings",
    ])
      for (const policy of [undefined, { allowWrites: true, strict: false }]) {
        const { refusal } = analyse(sql, policy);
        assert.equal(refusal?.sqlState, "42501", sql);
        assert.match(refusal!.message, /changes how the server reads statement text/, sql);
      }
    assert.equal(analyse("SET TimeZone = 'UTC'").refusal, undefined, "other settings are as before");
  });

  test("reads pass", () => {
    for (const sql of allowed) assert.equal(analyse(sql).refusal, undefined, sql);
  });

  test("everything else is refused with a SQLSTATE and a message that says how to allow writes", () => {
    for (const [sql, code] of refused) {
      const { refusal } = analyse(sql);
      assert.equal(refusal?.sqlState, code, sql);
      assert.match(refusal!.message, /not allowed: this export is read-only \(create it with allowWrites: true/, sql);
    }
  });

  test("an export that allows writes runs them", () => {
    for (const [sql] of refused) assert.equal(analyse(sql, { allowWrites: true, strict: false }).refusal, undefined, sql);
  });

  test("every statement of the parser's grammar that is not a read is refused (none falls through)", () => {
    // The statement types the classifier names as reads: anything else must be refused.
    const reads = new Set([
      "SelectStmt",
      "DeclareCursorStmt",
      "PrepareStmt",
      "ExplainStmt",
      "FetchStmt",
      "ClosePortalStmt",
      "ExecuteStmt",
      "DeallocateStmt",
      "VariableShowStmt",
      "DiscardStmt",
      "TransactionStmt",
      "VariableSetStmt",
      "CopyStmt",
    ]);
    for (const [sql] of refused) for (const { node } of parseStatements(sql)) if (!reads.has(Object.keys(node)[0]!)) assert.ok(analyse(sql).refusal, sql);
  });
});

describe("PostgreSQL statement analysis: strict exports", () => {
  before(() => loadSqlParser());
  const strict: StatementPolicy = { allowWrites: false, strict: true };

  test("predicates, joins, grouping and ordering may use resource-context columns only", () => {
    for (const sql of [
      "SELECT email FROM users WHERE id = 'adult'",
      "SELECT u.email, o.item FROM users u JOIN orders o ON o.user_id = u.id ORDER BY u.id",
      "SELECT id, count(*) FROM orders GROUP BY user_id, id",
      "SELECT id AS id, email FROM users ORDER BY id",
    ]) {
      assert.equal(analyse(sql, strict).refusal, undefined, sql);
    }
    // PostgreSQL reads a simple name in ORDER BY and DISTINCT ON as an output column's name first: the alias's expression is checked.
    for (const sql of [
      "SELECT id AS uid, (secret LIKE 'a%')::int AS id FROM users WHERE id IN ('adult', 'child') ORDER BY id DESC LIMIT 1",
      "SELECT DISTINCT ON (id) email AS id FROM users",
    ]) {
      const { refusal } = analyse(sql, strict);
      assert.equal(refusal?.sqlState, "42501", sql);
      assert.match(refusal!.message, /this export is strict: (ORDER BY|DISTINCT ON) may use only .* \(through the output column id\)/, sql);
    }
    for (const sql of [
      "SELECT id FROM users WHERE email LIKE 'a%'",
      "SELECT u.id FROM users u JOIN orders o ON o.item = u.email",
      "SELECT id FROM users ORDER BY email",
      "SELECT id FROM users ORDER BY 2",
      "SELECT email FROM users ORDER BY 1",
      "SELECT id FROM users WHERE id IN (SELECT user_id FROM orders WHERE item = 'x')",
      "SELECT id FROM users GROUP BY email",
      "SELECT DISTINCT ON (email) id FROM users",
      "SELECT row_number() OVER (PARTITION BY email) FROM users",
      "SELECT id FROM users u, orders o HAVING max(o.item) > 'a'",
    ]) {
      const { refusal } = analyse(sql, strict);
      assert.equal(refusal?.sqlState, "42501", sql);
      assert.match(refusal!.message, /this export is strict/, sql);
    }
  });
});
