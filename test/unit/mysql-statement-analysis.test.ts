import { describe, test } from "node:test";
import assert from "node:assert/strict";
import type { ColumnDefinition } from "../../protocols/mysql/column-definition";
import { ColumnType } from "../../protocols/mysql/column-types";
import type { ErrPacket } from "../../protocols/mysql/err-packet";
import type { MappedField, MappingView } from "../../exports/row-decider";
import { missingUserColumns, withHiddenColumns } from "../../proxies/mysql/analysis/hidden-user-columns";
import { resourceContextColumns, strictRefusal } from "../../proxies/mysql/analysis/strict-predicates";
import { analyseStatement, splitStatements, type StatementAnalysis } from "../../proxies/mysql/analysis/statement-analysis";
import { sanitizeError } from "../../proxies/mysql/error-texts";
import { planMysqlResult } from "../../proxies/mysql/result-plan";

const readOnly = { allowWrites: false };
const writable = { allowWrites: true };

function field(recordField: string, category: string | undefined, resourceOrder = -1): [string, MappedField] {
  return [recordField, { recordField, category, resourceOrder }];
}

const mapping: MappingView = {
  key: "1/users-table",
  fields: new Map([field("users.id", undefined, 0), field("users.email", "contact"), field("orders.user_id", undefined, 0), field("orders.item", "usage")]),
};

/** A column definition as MariaDB reports a base table's column. */
function column(table: string, orgTable: string, orgName: string, name = orgName, schema = "app"): ColumnDefinition {
  return { catalog: "def", schema, table, orgTable, name, orgName, characterSet: 45, columnLength: 160, type: ColumnType.VarString, flags: 0, decimals: 0 };
}

const expression = (name: string): ColumnDefinition => ({ ...column("", "", ""), name, schema: "" });

function shapeOf(sql: string) {
  const analysis = analyseStatement(sql, readOnly);
  assert.equal(analysis.kind, "select", `${sql}: ${JSON.stringify(analysis)}`);
  return (analysis as StatementAnalysis & { kind: "select" }).shape;
}

describe("MySQL statement analysis (node-sql-parser, MariaDB grammar)", () => {
  test("read-only by default: writes, SET and READ WRITE transactions refused (1792 25006); reads, USE, SHOW, transactions pass", () => {
    for (const sql of [
      "INSERT INTO t VALUES (1)",
      "UPDATE t SET a = 1",
      "DELETE FROM t",
      "CREATE TABLE x (a INT)",
      "DROP TABLE t",
      "SET @x = 1",
      "START TRANSACTION READ WRITE",
      "SELECT id FROM users FOR UPDATE",
    ]) {
      const analysis = analyseStatement(sql, readOnly);
      assert.equal(analysis.kind, "refused", sql);
      assert.deepEqual([(analysis as { code: number }).code, (analysis as { sqlState: string }).sqlState], [1792, "25006"], sql);
      assert.match((analysis as { message: string }).message, /allowWrites/, sql);
    }
    for (const sql of ["SELECT 1", "USE app", "SHOW TABLES", "BEGIN", "START TRANSACTION", "COMMIT", "ROLLBACK", "DESCRIBE users"])
      assert.notEqual(analyseStatement(sql, readOnly).kind, "refused", sql);
    assert.equal(analyseStatement("INSERT INTO t VALUES (1)", writable).kind, "other");
  });

  test("never run, writes allowed or not: LOAD DATA, CALL, SELECT INTO, executable comments, multi-statements, what the parser cannot read", () => {
    for (const policy of [readOnly, writable]) {
      for (const [sql, code] of [
        ["LOAD DATA LOCAL INFILE 'x' INTO TABLE t", 1227],
        ["CALL p()", 1227],
        ["SELECT a FROM t INTO OUTFILE '/tmp/x'", 1227],
        ["SELECT a INTO @v FROM t", 1227],
        ["SELECT a FROM t WHERE a IN (SELECT b INTO @v FROM u)", 1227],
        ["SELECT id /*!, email */ FROM users", 1064],
        ["SELECT id /*M!100000 , email */ FROM users", 1064],
        ["SELECT 'a /*! b */' FROM t", 1064],
        ["SELECT 1; SELECT 2", 1235],
        ["BEGIN NOT ATOMIC SELECT 1; END", 1064],
        ["SELECT id FROM users FORCE INDEX (i)", 1064],
        ["HANDLER t OPEN", 1064],
        ["CREATE TRIGGER tr BEFORE INSERT ON t FOR EACH ROW SET NEW.a = 1", policy.allowWrites ? 1227 : 1792],
        ["CREATE PROCEDURE p() SELECT 1", 1064],
        ["SET character_set_client = gbk", 1227],
        ["SET @@session.character_set_client = 28", 1227],
        ["SET SESSION collation_connection = 'gbk_chinese_ci'", 1227],
      ] as const) {
        const analysis = analyseStatement(sql, policy);
        assert.equal(analysis.kind, "refused", sql);
        assert.equal((analysis as { code: number }).code, code, `${sql}: ${JSON.stringify(analysis)}`);
      }
    }
  });

  test("SHOW WARNINGS and SHOW ERRORS (which the parser lacks) in their one fixed form", () => {
    for (const sql of ["SHOW WARNINGS", "show errors", " SHOW WARNINGS LIMIT 10 ;", "SHOW WARNINGS LIMIT 0, 5"])
      assert.equal(analyseStatement(sql, readOnly).kind, "diagnostics", sql);
    assert.equal(analyseStatement("SHOW WARNINGS; SELECT 1", readOnly).kind, "refused");
  });

  test("shapes: base-table instances by alias, derived tables and CTEs are not instances, grouping and set operations are not attributable", () => {
    const join = shapeOf("SELECT a.id, b.email, email, 1, a.* FROM app.users a JOIN users b ON a.id = b.id");
    assert.deepEqual(
      [...join.instances.values()],
      [
        { alias: "a", db: "app", table: "users" },
        { alias: "b", db: null, table: "users" },
      ],
    );
    assert.deepEqual(join.entries, [
      { kind: "column", table: "a", column: "id" },
      { kind: "column", table: "b", column: "email" },
      { kind: "column", table: null, column: "email" },
      { kind: "expression" },
      { kind: "star", table: "a" },
    ]);
    assert.equal(join.attributable, true);
    assert.deepEqual([...shapeOf("SELECT x.id FROM (SELECT id FROM users) x").instances.keys()], []);
    assert.deepEqual([...shapeOf("WITH users AS (SELECT 1 AS id) SELECT id FROM users").instances.keys()], [], "a CTE named like a table is not the table");
    assert.deepEqual([...shapeOf("WITH c AS (SELECT 1 AS id) SELECT id FROM app.users").instances.keys()], ["users"], "a qualified name is the table");
    for (const sql of [
      "SELECT id FROM users GROUP BY id",
      "SELECT id FROM users HAVING id > 1",
      "SELECT id, COUNT(*) FROM users",
      "SELECT id FROM users ORDER BY MAX(id)",
      "SELECT id, JSON_ARRAYAGG(email) FROM users",
      "SELECT id FROM users ORDER BY BIT_OR(clicks)",
      "SELECT id, email, STDDEV_POP(clicks) FROM users",
      "SELECT id FROM users UNION SELECT id FROM users",
      "SELECT a.id FROM users a JOIN users b USING (id)",
    ]) {
      assert.equal(shapeOf(sql).attributable, false, sql);
    }
    assert.equal(
      shapeOf("SELECT DISTINCT id, email FROM users").attributable,
      true,
      "DISTINCT compares every output column: each row is one source row's values",
    );
  });
});

describe("MySQL statements run as the parser printed them", () => {
  const run = (sql: string) => analyseStatement(sql, readOnly);

  test("a SELECT's text is the parser's printing: names it read as columns are quoted, so the server reads columns too", () => {
    for (const [sql, printed] of [
      ["SELECT id, email FROM users", "SELECT `id`, `email` FROM `users`"],
      ["SELECT 1e3 FROM users", "SELECT `1e3` FROM `users`"],
      ["SELECT 0b01 AS x FROM users", "SELECT `0b01` AS `x` FROM `users`"],
      ["SELECT 0x41g FROM users", "SELECT 0x41 AS `g` FROM `users`"],
      ["SELECT _utf8mb4/**/'accepted' FROM users", "SELECT `_utf8mb4` AS `accepted` FROM `users`"],
      ["SELECT _binary'x', _latin1 X'41' FROM users", "SELECT _BINARY 'x', _LATIN1 X'41' FROM `users`"],
      ["SELECT email FROM users WHERE id = ? LIMIT ? OFFSET ?", "SELECT `email` FROM `users` WHERE `id` = ? LIMIT ? OFFSET ?"],
    ] as const) {
      const analysis = run(sql);
      assert.equal(analysis.kind, "select", `${sql}: ${JSON.stringify(analysis)}`);
      assert.equal((analysis as StatementAnalysis & { kind: "select" }).text, printed);
    }
  });

  test("refused: introducers the parser misreads, a 0x MariaDB reads as a name, printings that do not read back", () => {
    for (const [sql, code, message] of [
      ["SELECT _utf8mb4'accepted' FROM users", 1064, /introducer _utf8mb4/],
      ["SELECT _latin1 'a' FROM users", 1064, /introducer _latin1/],
      ["SELECT 1 FROM users WHERE id = _UTF8'a'", 1064, /introducer _UTF8/],
      ["SELECT 0xg FROM users", 1064, /0x with no hexadecimal digit/],
      ["SELECT 1 FROM users WHERE 0x = 1", 1064, /0x with no hexadecimal digit/],
      ["DELETE FROM users WHERE 0x LIKE 'a%'", 1064, /0x with no hexadecimal digit/],
      // The printer writes `- -1` as `--1` (a comment to the parser): refused by the dash guard on the printing.
      ["SELECT - -1 FROM users", 1064, /as the export's parser prints it: '--'/],
      // An alias holding a backquote is printed unquoted inside backquotes.
      ["SELECT 'x' AS 'a`b' FROM users", 1235, /runs a SELECT as its parser prints it/],
    ] as const) {
      const analysis = run(sql);
      assert.equal(analysis.kind, "refused", sql);
      assert.equal((analysis as StatementAnalysis & { kind: "refused" }).code, code, sql);
      assert.match((analysis as StatementAnalysis & { kind: "refused" }).message, message, sql);
    }
    // The parser ends a `#` or `-- ` comment at a carriage return, MariaDB only at a line feed: a settings SET and a SHOW run as written.
    for (const sql of [
      `SET autocommit = 1 #\r, autocommit = '\n, sql_mode = "NO_BACKSLASH_ESCAPES" #'`,
      `SET autocommit = 1 -- \r, autocommit = '\n, sql_mode = "ANSI_QUOTES" -- '`,
      `SHOW DATABASES #\r LIKE 'a\n WHERE (SELECT COUNT(*) FROM app.users) > 0 #'`,
      "SELECT email FROM users WHERE id = 'a\rb'",
    ]) {
      const analysis = run(sql);
      assert.equal(analysis.kind, "refused", sql);
      assert.match((analysis as StatementAnalysis & { kind: "refused" }).message, /carriage return not followed by a line feed/, sql);
    }
    assert.equal(run("SELECT email\r\nFROM users # a comment\r\nWHERE id = 'a'").kind, "select", "CR LF ends a comment at the same place for both");
    // Strings, backquoted names and _binary are not introducers the guard refuses.
    for (const sql of ["SELECT id FROM users WHERE name = '_utf8mb4''x'", "SELECT `_utf8mb4` FROM users", "SELECT _binary 'x' FROM users"])
      assert.equal(run(sql).kind, "select", sql);
  });
});

describe("MySQL statement analysis: bounded work", () => {
  test("a chain of CTEs each reading the one before twice is traced within a budget, not in time doubling per CTE", () => {
    const ctes = ["c1 AS (SELECT id FROM users)"];
    for (let i = 2; i <= 24; i++) ctes.push(`c${i} AS (SELECT a.id FROM c${i - 1} a JOIN c${i - 1} b ON a.id = b.id WHERE a.id = 'x')`);
    const started = Date.now();
    const analysis = analyseStatement(`WITH ${ctes.join(", ")} SELECT id FROM c24 WHERE id = 'x'`, readOnly);
    const took = Date.now() - started;
    // Without the budget this took over 10 s (the node's loop, which every session shares); with it, well under one.
    assert.ok(took < 4000, `analysed in ${took} ms`);
    assert.equal(analysis.kind, "select");
    const refusal = strictRefusal((analysis as StatementAnalysis & { kind: "select" }).predicates, resourceContextColumns(mapping));
    assert.match(refusal?.message ?? "", /cannot trace/, "past the budget, a CTE's column is untraced: strict refuses predicates on it");
  });
});

describe("MySQL result plans: the parse and the server's column definitions must agree", () => {
  test("a self-join: each value in its own instance's group, told apart by the alias the server reports", () => {
    const shape = shapeOf("SELECT a.id, a.email, b.id, b.email FROM users a JOIN users b ON a.id = b.id");
    const plan = planMysqlResult(
      [column("a", "users", "id"), column("a", "users", "email"), column("b", "users", "id"), column("b", "users", "email")],
      shape,
      mapping,
      () => true,
      "app",
    );
    assert.deepEqual(plan.groups, [[0], [2]]);
    assert.deepEqual(plan.groupOf, [0, 0, 1, 1]);
    assert.deepEqual(plan.categories, [undefined, "contact", undefined, "contact"]);
  });

  test("nothing is attributed when the two disagree or the instance's user column is missing", () => {
    const shape = shapeOf("SELECT a.id, a.email, b.email FROM users a JOIN users b ON a.id = b.id");
    const swapped = planMysqlResult(
      [column("a", "users", "id"), column("b", "users", "email"), column("b", "users", "email")],
      shape,
      mapping,
      () => true,
      "app",
    );
    assert.deepEqual(swapped.groupOf, [0, -1, -1], "the server says b where the parse says a: not attributed; b has no user column: not attributed");
    const derived = planMysqlResult(
      [column("x", "x", "id", "id", ""), column("x", "x", "email", "email", "")],
      shapeOf("SELECT x.id, x.email FROM (SELECT id, email FROM users) x"),
      mapping,
      () => true,
      "app",
    );
    assert.deepEqual(derived.groups, [[0]], "a derived table that passes users' columns through: decided by the base row's user");
    assert.deepEqual(derived.categories, [undefined, "contact"]);
    const notDerived = planMysqlResult(
      [column("x", "users", "id"), column("x", "users", "email")],
      shapeOf("SELECT x.id, x.email FROM (SELECT id, email FROM users) x"),
      mapping,
      () => true,
      "app",
    );
    assert.deepEqual(notDerived.groups, [[0]], "MariaDB reports the base table as org_table when it merges or materialises the derived table (DISTINCT)");
    const otherTable = planMysqlResult(
      [column("x", "orders", "id"), column("x", "orders", "email")],
      shapeOf("SELECT x.id, x.email FROM (SELECT id, email FROM users) x"),
      mapping,
      () => true,
      "app",
    );
    assert.deepEqual(otherTable.groups, [], "an org_table that is neither the derived table nor the traced base table: not attributed");
    const counted = planMysqlResult([column("users", "users", "id"), expression("email")], shapeOf("SELECT id, email FROM users"), mapping, () => true, "app");
    assert.deepEqual(counted.groupOf, [0, -1], "an expression where the parse expects a column: NULL");
    const wrongCount = planMysqlResult([column("users", "users", "id")], shapeOf("SELECT id, email FROM users"), mapping, () => true, "app");
    assert.deepEqual(wrongCount.groups, [], "a column count the parse does not expect: nothing");
    const otherDb = planMysqlResult(
      [column("users", "users", "id", "id", "other"), column("users", "users", "email", "email", "other")],
      shapeOf("SELECT id, email FROM app.users"),
      mapping,
      () => true,
      "app",
    );
    assert.deepEqual(otherDb.groups, [], "the statement names app, the server reports another database");
    const session = planMysqlResult(
      [column("users", "users", "id"), column("users", "users", "email")],
      shapeOf("SELECT id, email FROM users"),
      mapping,
      () => true,
      "other",
    );
    assert.deepEqual(session.groups, [], "an unqualified table of the session's database (other), reported in app: a view over app's table, not attributed");
    const caseOnly = planMysqlResult(
      [column("users", "users", "id"), column("users", "users", "email")],
      shapeOf("SELECT id, email FROM App.users"),
      mapping,
      () => true,
      "app",
    );
    assert.deepEqual(caseOnly.groups, [], "database names are compared exactly (App is not app on the server)");
  });

  test("stars: every column the server reports for an instance of the star", () => {
    const plan = planMysqlResult(
      [
        column("u", "users", "id"),
        column("u", "users", "email"),
        column("u", "users", "secret"),
        column("o", "orders", "user_id"),
        column("o", "orders", "item"),
      ],
      shapeOf("SELECT * FROM users u JOIN orders o ON o.user_id = u.id"),
      mapping,
      () => true,
      "app",
    );
    assert.deepEqual(plan.groups, [[0], [3]]);
    assert.deepEqual(plan.categories, [undefined, "contact", undefined, undefined, "usage"]);
    assert.deepEqual(plan.groupOf, [0, 0, -1, 1, 1]);
  });
});

describe("MySQL hidden user columns: an instance's missing resource-context column is added, decided on, never sent", () => {
  test("which columns are missing: per instance, only for the relation the mapping names, none when the select list returns them", () => {
    const all = () => true;
    assert.deepEqual(missingUserColumns(shapeOf("SELECT email FROM users"), mapping, all, "app"), [{ path: ["users"], column: "id" }]);
    assert.deepEqual(missingUserColumns(shapeOf("SELECT id, email FROM users"), mapping, all, "app"), []);
    assert.deepEqual(missingUserColumns(shapeOf("SELECT * FROM users u"), mapping, all, "app"), []);
    assert.deepEqual(missingUserColumns(shapeOf("SELECT a.email, b.email, b.id FROM users a JOIN users b ON a.id = b.id"), mapping, all, "app"), [
      { path: ["a"], column: "id" },
    ]);
    assert.deepEqual(missingUserColumns(shapeOf("SELECT u.email, o.item FROM users u JOIN orders o ON o.user_id = u.id"), mapping, all, "app"), [
      { path: ["u"], column: "id" },
      { path: ["o"], column: "user_id" },
    ]);
    assert.deepEqual(
      missingUserColumns(shapeOf("SELECT email FROM users"), mapping, () => false, "app"),
      [],
      "a relation the mapping does not name",
    );
    assert.deepEqual(
      missingUserColumns(shapeOf("SELECT DISTINCT email FROM users"), mapping, all, "app"),
      [{ path: ["users"], column: "id" }],
      "DISTINCT gets them too (as in the PostgreSQL export): equal values of two users are two rows",
    );
    assert.deepEqual(missingUserColumns(shapeOf("SELECT COUNT(email) FROM users"), mapping, all, "app"), [], "not attributable");
    assert.deepEqual(
      missingUserColumns(shapeOf("SELECT x.email FROM (SELECT email FROM users) x"), mapping, all, "app"),
      [{ path: ["x", "users"], column: "id" }],
      "an instance inside a derived table: carried up",
    );
    assert.deepEqual(
      missingUserColumns(shapeOf("SELECT x.id, x.email FROM (SELECT id, email FROM users) x"), mapping, all, "app"),
      [],
      "passed through already",
    );
  });

  test("the statement is printed with them last; its own analysis is what runs; the plan leaves them out of every row", () => {
    const rewritten = withHiddenColumns(
      "SELECT email AS e, 'accepted' AS warden_user_0 FROM app.users u WHERE u.name = ?",
      [{ path: ["u"], column: "id" }],
      readOnly,
    );
    assert.ok(rewritten);
    assert.equal(
      rewritten.text,
      "SELECT `email` AS `e`, 'accepted' AS `warden_user_0`, `u`.`id` AS `warden_user_0` FROM `app`.`users` AS `u` WHERE `u`.`name` = ?",
    );
    assert.equal(rewritten.shape.hiddenCount, 1);
    const columns = [column("u", "users", "email", "e"), expression("warden_user_0"), column("u", "users", "id", "warden_user_0")];
    const plan = planMysqlResult(columns, rewritten.shape, mapping, () => true, "app");
    assert.deepEqual(plan.hidden, [false, false, true]);
    assert.deepEqual(plan.groups, [[2]], "the user is read from the added column, not from the client's column of the same name");
    assert.deepEqual(plan.categories, ["contact", undefined, undefined]);
    const renamed = planMysqlResult([columns[0]!, columns[1]!, { ...columns[2]!, name: "other" }], rewritten.shape, mapping, () => true, "app");
    assert.deepEqual(renamed.groups, [], "the added column is not where it was put: nothing is attributed");
    assert.deepEqual(renamed.hidden, [false, false, true], "and it is still never sent");
    assert.equal(withHiddenColumns("SELECT 1 UNION SELECT 2", [{ path: ["u"], column: "id" }], readOnly), undefined);
  });
});

describe("MySQL attribution through derived tables and CTEs (the parse tree traces, the server names the derived column)", () => {
  const all = () => true;
  /** A column definition as MariaDB reports a derived table's or CTE's column: the relation is its own org_table. */
  const derivedColumn = (relation: string, name: string) => column(relation, relation, name, name);

  /** The plan of the rewritten statement (hidden user columns carried up) for the columns the server reports. */
  function rewrittenPlan(sql: string, columns: ColumnDefinition[]) {
    const hidden = missingUserColumns(shapeOf(sql), mapping, all, "app");
    const rewritten = withHiddenColumns(sql, hidden, readOnly);
    assert.ok(rewritten, sql);
    return { text: rewritten.text, hidden, plan: planMysqlResult(columns, rewritten.shape, mapping, all, "app") };
  }

  test("a self-join inside a derived table: each output column under the user of the instance it comes from, the missing one carried up", () => {
    const sql = "SELECT * FROM (SELECT a.email, b.id FROM users a JOIN users b ON a.id <> b.id) d";
    const before = planMysqlResult([derivedColumn("d", "email"), derivedColumn("d", "id")], shapeOf(sql), mapping, all, "app");
    assert.deepEqual(before.groupOf, [-1, 0], "b's id is b's user; a's email has no user of its own in the result: not attributed");
    const { text, hidden, plan } = rewrittenPlan(sql, [derivedColumn("d", "email"), derivedColumn("d", "id"), derivedColumn("d", "warden_user_0")]);
    assert.deepEqual(hidden, [{ path: ["d", "a"], column: "id" }]);
    assert.equal(
      text,
      "SELECT * FROM (SELECT `a`.`email`, `b`.`id`, `a`.`id` AS `warden_user_0` FROM `users` AS `a` INNER JOIN `users` AS `b` ON `a`.`id` <> `b`.`id`) AS `d`",
    );
    assert.deepEqual(plan.hidden, [false, false, true], "the lone * carries the added column to the end of the result, never sent");
    assert.deepEqual(plan.groups, [[1], [2]]);
    assert.deepEqual(plan.groupOf, [1, 0, 1], "email is decided by a's user (the added column), id by b's");
    assert.deepEqual(plan.categories, ["contact", undefined, undefined]);
  });

  test("a CTE that renames (and swaps) columns: the user is read from the column that is the user column", () => {
    const sql = "WITH c(id, email) AS (SELECT email, id FROM users) SELECT id, email FROM c";
    const plan = planMysqlResult([derivedColumn("c", "id"), derivedColumn("c", "email")], shapeOf(sql), mapping, all, "app");
    assert.deepEqual(plan.groups, [[1]], "c.email is users.id");
    assert.deepEqual(plan.categories, ["contact", undefined], "c.id is users.email");
    const { text, plan: carried } = rewrittenPlan("WITH c(mail) AS (SELECT email FROM users) SELECT mail FROM c", [
      derivedColumn("c", "mail"),
      derivedColumn("c", "warden_user_0"),
    ]);
    assert.equal(
      text,
      "WITH `c`(`mail`, `warden_user_0`) AS (SELECT `email`, `users`.`id` AS `warden_user_0` FROM `users`) SELECT `mail`, `c`.`warden_user_0` AS `warden_user_0` FROM `c`",
    );
    assert.deepEqual(carried.groupOf, [0, 0]);
    assert.deepEqual(carried.categories, ["contact", undefined]);
  });

  test("a derived table joined to its own base table, nested derived tables, a CTE read twice: one user per instance", () => {
    const joined = rewrittenPlan("SELECT d.email, u.email FROM (SELECT email FROM users) d JOIN users u ON u.email <> d.email", [
      derivedColumn("d", "email"),
      column("u", "users", "email"),
      derivedColumn("d", "warden_user_0"),
      column("u", "users", "id", "warden_user_1"),
    ]);
    assert.deepEqual(joined.hidden, [
      { path: ["d", "users"], column: "id" },
      { path: ["u"], column: "id" },
    ]);
    assert.deepEqual(joined.plan.groupOf, [0, 1, 0, 1]);
    assert.deepEqual(joined.plan.categories, ["contact", "contact", undefined, undefined]);
    const nested = rewrittenPlan("SELECT e FROM (SELECT m AS e FROM (SELECT email AS m FROM users) i) o", [
      derivedColumn("o", "e"),
      derivedColumn("o", "warden_user_0"),
    ]);
    assert.equal(
      nested.text,
      "SELECT `e`, `o`.`warden_user_0` AS `warden_user_0` FROM (SELECT `m` AS `e`, `i`.`warden_user_0` AS `warden_user_0` FROM (SELECT `email` AS `m`, `users`.`id` AS `warden_user_0` FROM `users`) AS `i`) AS `o`",
    );
    assert.deepEqual(nested.plan.groupOf, [0, 0]);
    assert.deepEqual(nested.plan.categories, ["contact", undefined]);
    const twice = "WITH c AS (SELECT id, email FROM users) SELECT a.email, b.email, a.id, b.id FROM c a JOIN c b ON a.email < b.email";
    const both = planMysqlResult(
      [derivedColumn("a", "email"), derivedColumn("b", "email"), derivedColumn("a", "id"), derivedColumn("b", "id")],
      shapeOf(twice),
      mapping,
      all,
      "app",
    );
    assert.deepEqual(both.groupOf, [0, 1, 0, 1], "each reading of the CTE is its own instance");
    assert.deepEqual(
      missingUserColumns(shapeOf("WITH c AS (SELECT email FROM users) SELECT a.email, b.email FROM c a JOIN c b ON a.email < b.email"), mapping, all, "app"),
      [],
      "a CTE read twice is not rewritten (a column added for one reading would show through the other's *)",
    );
    const renamed = planMysqlResult(
      [derivedColumn("o", "e"), derivedColumn("o", "warden_user_1")],
      withHiddenColumns("SELECT e FROM (SELECT m AS e FROM (SELECT email AS m FROM users) i) o", nested.hidden, readOnly)!.shape,
      mapping,
      all,
      "app",
    );
    assert.deepEqual(renamed.groups, [], "the added column not under the name it was given: nothing is attributed");
  });

  test("what is not traced: UNION, recursion, grouping, unnamed expressions beside a *, a * over the relation a column would be carried through, CTE names in another case", () => {
    for (const sql of [
      "SELECT x.id, x.email FROM (SELECT id, email FROM users UNION ALL SELECT id, email FROM users) x",
      "WITH RECURSIVE x AS (SELECT id, email FROM users) SELECT id, email FROM x",
      "SELECT x.id, x.email FROM (SELECT id, MAX(email) AS email FROM users GROUP BY id) x",
      "SELECT x.id, x.email FROM (SELECT DISTINCT id, email FROM users LIMIT 3) x LIMIT 1",
      "WITH X AS (SELECT id, email FROM users) SELECT id, email FROM x",
    ]) {
      const traced = sql.includes("DISTINCT");
      const plan = planMysqlResult([derivedColumn("x", "id"), derivedColumn("x", "email")], shapeOf(sql), mapping, all, "app");
      assert.deepEqual(plan.groups, traced ? [[0]] : [], sql);
    }
    const unnamed = shapeOf("SELECT x.id, x.email FROM (SELECT u.*, CONCAT(u.email) FROM users u) x");
    assert.deepEqual(
      planMysqlResult([derivedColumn("x", "id"), derivedColumn("x", "email")], unnamed, mapping, all, "app").groups,
      [],
      "an unnamed expression could take any name",
    );
    assert.deepEqual(
      planMysqlResult(
        [derivedColumn("x", "id"), derivedColumn("x", "email")],
        shapeOf("SELECT x.id, x.email FROM (SELECT * FROM users) x"),
        mapping,
        all,
        "app",
      ).groups,
      [[0]],
      "a lone * over users names users' columns",
    );
    assert.deepEqual(missingUserColumns(shapeOf("SELECT d.*, 1 FROM (SELECT email FROM users) d"), mapping, all, "app"), [], "d.* would show the added column");
    assert.deepEqual(
      missingUserColumns(shapeOf("SELECT x.email FROM (SELECT email FROM users) x GROUP BY x.email"), mapping, all, "app"),
      [],
      "not attributable",
    );
  });
});

describe("MySQL strict exports: rows chosen, grouped and ordered only by resource-context columns", () => {
  const subjects = resourceContextColumns(mapping);
  const refusedFor = (sql: string) => {
    const analysis = analyseStatement(sql, writable);
    assert.ok(analysis.kind === "select" || analysis.kind === "other", sql);
    return strictRefusal(analysis.predicates, subjects)?.message;
  };

  test("every clause that chooses, groups or orders rows is checked, subqueries and writes included", () => {
    assert.deepEqual([...subjects], ["id", "user_id"]);
    for (const [sql, named] of [
      ["SELECT id FROM users WHERE email LIKE 'a%'", "WHERE may use only resource-context columns (id, user_id), not email"],
      ["SELECT id FROM users u JOIN orders o ON o.item = u.email", "JOIN ON"],
      ["SELECT id FROM users JOIN orders USING (item)", "JOIN USING"],
      ["SELECT id FROM users GROUP BY name", "GROUP BY"],
      ["SELECT id FROM users GROUP BY id HAVING MAX(clicks) > 1", "HAVING"],
      ["SELECT id, email FROM users ORDER BY 2", "not output column 2"],
      ["SELECT id, LENGTH(email) FROM users ORDER BY 2", "not output column 2"],
      ["SELECT id FROM users ORDER BY `email`", "ORDER BY"],
      ["SELECT id, RANK() OVER (PARTITION BY login) FROM users", "PARTITION BY"],
      ["SELECT id, RANK() OVER (ORDER BY clicks) FROM users", "window ORDER BY"],
      ["SELECT id FROM users WHERE id IN (SELECT user_id FROM orders WHERE item = 'x')", "not item"],
      ["SELECT * FROM (SELECT id FROM users WHERE email = 'x') t", "not email"],
      ["UPDATE users SET name = 'x' WHERE email = 'y'", "not email"],
      ["DELETE FROM orders WHERE item = 'y'", "not item"],
      ["SELECT id FROM users WHERE EXISTS (SELECT * FROM orders)", "not *"],
    ] as const) {
      const message = refusedFor(sql);
      assert.ok(message?.includes(named), `${sql}: ${message}`);
    }
    // A qualifier naming a derived table none of whose (known) names is the reference's: nothing vouches for what MariaDB
    // reads there (a name it normalises otherwise), so it is not read by its name.
    assert.match(refusedFor("SELECT u.id FROM users u, (SELECT secret AS x FROM users) d WHERE d.id LIKE 'a%'") ?? "", /WHERE/);
    // A named window: the parser reads only `ORDER BY … WINDOW …` (which MariaDB refuses) and prints it as `WINDOW … ORDER BY` (which it cannot read back): refused before strictness is asked.
    assert.equal(analyseStatement("SELECT id FROM users ORDER BY id WINDOW w AS (PARTITION BY clicks)", writable).kind, "refused");
    // A derived table's or CTE's column is checked as the base column it traces to; untraced ones are refused.
    for (const [sql, named] of [
      [
        "SELECT d.user_id FROM (SELECT id AS user_id, secret AS id FROM users) d WHERE d.id LIKE 'a%'",
        "not id (a derived table's or CTE's column from secret)",
      ],
      ["SELECT d.user_id FROM (SELECT id AS user_id, secret AS id FROM users) `d` WHERE `d`.`id` LIKE 'a%'", "from secret"],
      ["WITH c AS (SELECT id AS user_id, secret AS id FROM users) SELECT user_id FROM c WHERE id = 'x'", "from secret"],
      ["WITH c(user_id, id) AS (SELECT id, secret FROM users) SELECT user_id FROM c ORDER BY id", "from secret"],
      ["SELECT d.id FROM (SELECT id FROM users UNION SELECT secret FROM users) d WHERE d.id = 'x'", "cannot trace"],
      ["SELECT d.id FROM (SELECT id FROM users GROUP BY id) d WHERE d.id = 'x'", "cannot trace"],
      ["SELECT d.id FROM (SELECT CONCAT(secret) AS id FROM users) d WHERE d.id = 'x'", "cannot trace"],
      ["SELECT u.id FROM users u, (SELECT secret AS id FROM users) d WHERE id = 'x'", "from secret"],
      ["SELECT u.id FROM users u WHERE u.id IN (SELECT d.id FROM (SELECT secret AS id FROM users) d)", "from secret"],
      ["WITH RECURSIVE r AS (SELECT id FROM users UNION ALL SELECT id FROM r WHERE r.id = 'x') SELECT id FROM users", "cannot trace"],
      ["SELECT x.id FROM (SELECT * FROM users u JOIN orders o ON o.user_id = u.id) x WHERE x.id = 'a'", "cannot trace"],
    ] as const) {
      const message = refusedFor(sql);
      assert.ok(message?.includes(named), `${sql}: ${message}`);
    }
    for (const sql of [
      "SELECT d.uid FROM (SELECT id AS uid FROM users) d WHERE d.uid = 'a' ORDER BY d.uid",
      "SELECT x.email FROM (SELECT * FROM users) x WHERE x.id = 'a'",
      "WITH c AS (SELECT user_id, item FROM orders) SELECT item FROM c WHERE user_id = 'a'",
    ])
      assert.equal(refusedFor(sql), undefined, sql);
    for (const sql of [
      "SELECT id, email FROM users WHERE id = 'a' ORDER BY 1",
      "SELECT u.email, o.item FROM users u JOIN orders o ON o.user_id = u.id WHERE u.ID IN ('a', 'b') GROUP BY u.id ORDER BY o.user_id",
      "SELECT email FROM users",
    ])
      assert.equal(refusedFor(sql), undefined, sql);
  });
});

describe("MySQL error texts", () => {
  const err = (code: number, message: string): ErrPacket => ({ code, sqlState: "42000", message });
  test("kept only in the server's wording and when every quoted part is the client's own text", () => {
    assert.equal(
      sanitizeError(err(1054, "Unknown column 'nosuch' in 'field list'"), "SELECT nosuch FROM t").message,
      "Unknown column 'nosuch' in 'field list'",
    );
    assert.match(sanitizeError(err(1054, "Unknown column 'secret-value' in 'field list'"), "SELECT nosuch FROM t").message, /withheld/);
    assert.match(sanitizeError(err(1062, "Duplicate entry 'a@b' for key 'PRIMARY'"), "INSERT INTO k SELECT email FROM users").message, /withheld/);
    assert.match(
      sanitizeError(err(1064, "leaked-value"), "SELECT f()").message,
      /withheld/,
      "a 1064 not in the server's wording (SIGNAL SET MYSQL_ERRNO = 1064)",
    );
    assert.equal(sanitizeError(err(1146, "Table 'app.nope' doesn't exist"), "SELECT * FROM nope", "app").message, "Table 'app.nope' doesn't exist");
    assert.equal(sanitizeError(err(1146, "Table 'db2.nope' doesn't exist"), "SELECT * FROM db2.nope", "app").message, "Table 'db2.nope' doesn't exist");
    assert.match(
      sanitizeError(err(1146, "Table 'secret-value.nope' doesn't exist"), "SELECT f() AS nope", "app").message,
      /withheld/,
      "a database neither the statement's nor the session's (a stored function's table)",
    );
    const withheld = sanitizeError(err(1105, "XPATH syntax error: 'x@y'"), "SELECT ExtractValue(...)");
    assert.deepEqual([withheld.code, withheld.sqlState], [1105, "42000"], "the number and SQLSTATE stay");
  });
});

describe("multi-statements (splitStatements)", () => {
  test("each statement is run as the parser prints it; one whose printing is another statement refuses the text", () => {
    assert.deepEqual(splitStatements("SELECT id FROM users; DESCRIBE users; SET autocommit=1"), [
      "SELECT `id` FROM `users`",
      "DESC `users`",
      "SET autocommit = 1",
    ]);
    // The parser prints SHOW DATABASES LIKE 'ap%' without its filter: run so, it would list every database.
    assert.equal(splitStatements("SHOW DATABASES LIKE 'ap%'; SELECT 1"), undefined);
    assert.equal(
      analyseStatement("SHOW DATABASES LIKE 'ap%'", { allowWrites: false }).kind,
      "other",
      "alone, it is no schema read either (its rows are decided)",
    );
  });
});
