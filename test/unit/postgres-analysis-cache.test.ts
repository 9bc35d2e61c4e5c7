import { before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { loadSqlParser } from "../../proxies/postgres/analysis/sql-parser";
import { AnalysisCache, spansReplaced } from "../../proxies/postgres/analysis/analysis-cache";
import { analyzeQuery, type QueryAnalysis, type StatementPolicy } from "../../proxies/postgres/analysis/statement-analysis";
import { schemaView } from "../../proxies/postgres/analysis/schema-view";

const users = { schema: "public", name: "users", columns: ["id", "email", "login", "secret"], subjectColumns: ["id"], mapped: true };
const schema = schemaView([users]);
const readOnly: StatementPolicy = { allowWrites: false, strict: false };

/** Everything of an analysis the proxy acts on, comparable with deepEqual (shapes as JSON; identifiers asked). */
const acted = (analysis: QueryAnalysis) => ({
  text: analysis.text,
  refusal: analysis.refusal,
  statements: JSON.stringify(analysis.statements),
  insertions: analysis.insertions,
  identifiers: [...analysis.identifiers()].sort(),
});

describe("PostgreSQL analysis cache: texts that differ only in constants", () => {
  before(() => loadSqlParser());

  test("a new text of a known form is answered by the form's analysis, exactly as its own analysis would be", () => {
    const cache = new AnalysisCache();
    const texts = [1, 2, 3].map((i) => `SELECT id, email FROM users WHERE id = '${i}' AND login <> 'x${i}'`);
    const answers = texts.map((sql) => cache.get(sql, schema, readOnly));
    assert.deepEqual({ misses: cache.misses, formHits: cache.formHits, hits: cache.hits }, { misses: 1, formHits: 3, hits: 0 });
    for (const [i, sql] of texts.entries()) assert.deepEqual(acted(answers[i]!), acted(analyzeQuery(sql, schema, readOnly)), sql);
    // The labels the client wrote come from its own text: a constant written as a quoted name in one text is its own.
    assert.ok(cache.get(`SELECT id AS "x9" FROM users WHERE id = '9'`, schema, readOnly).identifiers().has("x9"));
  });

  test("a hidden column is spliced into a new text where its form has it, exactly as the text's own analysis splices it", () => {
    const cache = new AnalysisCache();
    const cases = [
      (id: string) => `SELECT email FROM users WHERE id = '${id}'`,
      // The constant is the last target: the column goes after the client's constant.
      (id: string) => `SELECT email, ${id.length} FROM users WHERE id = '${id}'`,
      // Two levels each with their own hidden column; characters outside ASCII before the insertions.
      (id: string) => `SELECT 'é${id}' AS "é", s.email FROM (SELECT email FROM users WHERE login = 'l${id}') s, users u WHERE u.id = '${id}';`,
    ];
    for (const [index, text] of cases.entries()) {
      for (const id of ["a", "bb", "ccc"]) {
        const sql = text(id);
        const own = analyzeQuery(sql, schema, readOnly);
        assert.ok(own.insertions.length > 0, `case ${index} needs a hidden column`);
        assert.deepEqual(acted(cache.get(sql, schema, readOnly)), acted(own), sql);
      }
    }
    // Each form analysed once, every text answered from it.
    assert.deepEqual({ misses: cache.misses, formHits: cache.formHits, hits: cache.hits }, { misses: cases.length, formHits: 9, hits: 0 });
  });

  test("a spliced form's places are used only when the spliced text normalizes to the spliced form", () => {
    const cache = new AnalysisCache();
    // The form's text after its first parameter is also inside that constant: aligned by first match, the hidden
    // column would land inside the string (sent, it would be text of the constant and no column). The check finds
    // the spliced text is not of the spliced form, and the text is analysed itself.
    const tricky = (id: string) => `SELECT email, ' FROM users WHERE id = ' FROM users WHERE id = '${id}'`;
    for (const id of ["a", "b"]) {
      const sql = tricky(id);
      const answer = cache.get(sql, schema, readOnly);
      assert.deepEqual(acted(answer), acted(analyzeQuery(sql, schema, readOnly)), sql);
      assert.equal(answer.insertions.length, 1);
      assert.ok(answer.text.startsWith(`SELECT email, ' FROM users WHERE id = ', "users"."id" AS`), answer.text);
    }
    assert.deepEqual({ misses: cache.misses, formHits: cache.formHits }, { misses: 3, formHits: 0 });
  });

  test("what needs the constants or a refusal is analysed from the text itself, every time", () => {
    const cache = new AnalysisCache();
    // set_config: allowed or refused by its constant setting name, which the form does not have.
    const timezone = cache.get("SELECT set_config('timezone', 'UTC', false)", schema, readOnly);
    assert.equal(timezone.refusal, undefined);
    const guard = cache.get("SELECT set_config('default_transaction_read_only', 'off', false)", schema, readOnly);
    assert.equal(guard.refusal?.sqlState, "25006");
    // Not a plain SELECT: SET's value.
    assert.equal(cache.get("SET default_transaction_read_only = 'off'", schema, readOnly).refusal?.sqlState, "25006");
    assert.equal(cache.get("SET statement_timeout = '5s'", schema, readOnly).refusal, undefined);
    assert.equal(cache.formHits, 0);
  });

  test("strict exports, reserved names and texts the normalizer cannot read are analysed from the text", () => {
    const cache = new AnalysisCache();
    const strict: StatementPolicy = { allowWrites: false, strict: true };
    assert.equal(cache.get("SELECT id FROM users WHERE id = '1' ORDER BY 1", schema, strict).refusal, undefined);
    assert.equal(cache.get("SELECT id, email FROM users WHERE id = '1' ORDER BY 2", schema, strict).refusal?.sqlState, "42501");
    assert.equal(cache.get(`SELECT 1 AS "__warden_x" FROM users WHERE id = '2'`, schema, readOnly).refusal?.sqlState, "42501");
    // Invalid UTF-8 in an escape string: libpg-query's normalize returns its error text as if it were the form.
    assert.deepEqual(
      acted(cache.get("SELECT id FROM users WHERE id = e'\\xff'", schema, readOnly)),
      acted(analyzeQuery("SELECT id FROM users WHERE id = e'\\xff'", schema, readOnly)),
    );
    assert.equal(cache.formHits, 0);
  });

  test("forms are kept per schema and policy", () => {
    const cache = new AnalysisCache();
    const other = schemaView([{ ...users, columns: ["id", "email"] }]);
    const first = cache.get("SELECT * FROM users WHERE id = '1'", schema, readOnly);
    const second = cache.get("SELECT * FROM users WHERE id = '2'", other, readOnly);
    assert.equal(cache.misses, 2);
    assert.notEqual(JSON.stringify(first.statements), JSON.stringify(second.statements));
    assert.deepEqual(acted(second), acted(analyzeQuery("SELECT * FROM users WHERE id = '2'", other, readOnly)));
    cache.get("SELECT * FROM users WHERE id = '3'", schema, { allowWrites: true, strict: false });
    assert.equal(cache.misses, 3);
  });

  test("a form is the text with spans replaced by parameters, or it is not used", () => {
    assert.ok(spansReplaced("SELECT a FROM t WHERE x = 'abc' LIMIT 5", "SELECT a FROM t WHERE x = $1 LIMIT $2"));
    assert.ok(spansReplaced("SELECT 5", "SELECT $1"));
    assert.ok(spansReplaced("SELECT $1, 5", "SELECT $1, $2"));
    assert.ok(!spansReplaced("SELECT e'\\xff'", 'invalid byte sequence for encoding "UTF8": 0xff'));
    assert.ok(!spansReplaced("SELECT a FROM t", "SELECT a FROM t"));
    assert.ok(!spansReplaced("SELECT a FROM t WHERE x = 1", "SELECT b FROM t WHERE x = $1"));
    assert.ok(!spansReplaced("SELECT 1", "SELECT 1$1"));
  });
});
