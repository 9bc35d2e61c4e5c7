import { before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { loadSqlParser, parseStatements } from "../../proxies/postgres/analysis/sql-parser";
import { analyzeQuery, originalPosition, type StatementPolicy } from "../../proxies/postgres/analysis/statement-analysis";
import { schemaView } from "../../proxies/postgres/analysis/schema-view";
import { shadowsFrom } from "../../proxies/postgres/catalog-shadows";

const schema = schemaView(
  [
    {
      schema: "public",
      name: "users",
      columns: ["id", "email", "secret"],
      subjectColumns: ["id"],
      mapped: true,
      categories: [undefined, "contact", undefined],
    },
    {
      schema: "public",
      name: "orders",
      columns: ["id", "user_id", "item"],
      subjectColumns: ["user_id"],
      mapped: true,
      categories: [undefined, undefined, "usage"],
    },
    {
      schema: "other",
      name: "orders",
      columns: ["id", "user_id", "item"],
      subjectColumns: ["user_id"],
      mapped: true,
      categories: [undefined, undefined, "usage"],
    },
    { schema: "public", name: "countries", columns: ["code", "name"], subjectColumns: [], mapped: false },
  ],
  shadowsFrom([]),
);
const marker = "91234567890123456789";
const policy: StatementPolicy = { allowWrites: false, strict: false, pushdown: { table: 'warden."verdicts_k"', exportKey: "k", versionMarker: marker } };
const analyse = (sql: string) => analyzeQuery(sql, schema, policy);

describe("PostgreSQL exports with pushdown: how statements are rewritten", () => {
  before(() => loadSqlParser());

  test("each mapped table becomes a derived table of allowed rows, joined to the verdicts, with the version guard; the rest of the statement is the client's", () => {
    const analysis = analyse("SELECT count(*), u.email FROM users u JOIN public.orders o ON o.item = u.email WHERE u.email LIKE 'a%' GROUP BY 2");
    assert.equal(analysis.refusal, undefined);
    const [rewritten] = parseStatements(analysis.text);
    const text = JSON.stringify(rewritten!.node);
    assert.equal((text.match(/"relname":"verdicts_k"/g) ?? []).length, 2, "one join to the verdicts per mapped table");
    assert.equal((analysis.text.match(new RegExp(marker, "g")) ?? []).length, 2, "one guard per derived table, with the marker for the version");
    assert.match(analysis.text, /CASE\s+WHEN false THEN t\.secret\s+END AS secret/, "unmapped columns are always NULL, of their own type");
    assert.match(analysis.text, /THEN t\.item\s+END AS item/);
    assert.match(analysis.text, /\) AS u\b/);
    assert.match(analysis.text, /\) AS o\b/);
    assert.match(analysis.text, /u\.email LIKE 'a%'/);
    assert.deepEqual(
      analysis.statements.map((s) => ("shape" in s ? s.shape?.pushdown : undefined)),
      [true],
    );
    // Positions inside the rewritten statement map to none (errors then carry no position).
    assert.equal(originalPosition(analysis, 10), undefined);
  });

  test("cursors and prepared statements are rewritten too; catalog reads pass as they are; other statements are the client's", () => {
    const analysis = analyse(
      "BEGIN; DECLARE c CURSOR FOR SELECT email FROM users; SELECT relname FROM pg_catalog.pg_class; PREPARE p AS SELECT item FROM public.orders WHERE user_id = $1; COMMIT",
    );
    assert.equal(analysis.refusal, undefined, JSON.stringify(analysis.refusal));
    assert.deepEqual(
      analysis.statements.map((s) => [s.kind, "shape" in s ? (s.shape?.pushdown ? "pushdown" : s.shape?.catalog ? "catalog" : "-") : "-"]),
      [
        ["control", "-"],
        ["declare", "pushdown"],
        ["rows", "catalog"],
        ["prepare", "pushdown"],
        ["control", "-"],
      ],
    );
    assert.match(analysis.text, /^BEGIN; DECLARE c CURSOR FOR SELECT/);
    assert.match(analysis.text, /; SELECT relname FROM pg_catalog\.pg_class; /);
  });

  test("what could carry values past the derived tables is refused: other tables, views, the database's functions, the verdict schema, an ambiguous name", () => {
    for (const [sql, reason] of [
      ["SELECT * FROM countries", /countries is not a table of the export's mapping/],
      ["SELECT * FROM users_view", /users_view is not a table/],
      ["SELECT email, leak(email) FROM users", /built-in functions/],
      ["SELECT pg_catalog.query_to_xml('select 1', true, true, '')", /built-in functions/],
      ["SELECT * FROM warden.verdict_versions", /schema warden holds the export's verdicts/],
      ["SELECT item FROM orders", /orders names more than one mapped table/],
      ["SELECT * FROM users TABLESAMPLE SYSTEM (10)", /mapped tables/],
      ["SELECT most_common_vals FROM pg_stats", /mapped tables/],
    ] as const) {
      const refusal = analyse(sql).refusal;
      assert.equal(refusal?.sqlState, "42501", sql);
      assert.match(refusal!.message, reason, sql);
    }
    assert.equal(analyse("SELECT item FROM other.orders").refusal, undefined, "qualified, the name is not ambiguous");
  });
});
