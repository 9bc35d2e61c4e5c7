import { before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { loadSqlParser } from "../../proxies/postgres/analysis/sql-parser";
import { normalizeSync } from "libpg-query";
import { AnalysisCache, spansReplaced } from "../../proxies/postgres/analysis/analysis-cache";
import { constantsKey, formOfKey } from "../../proxies/postgres/analysis/constants-key";
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

/** The normalizer's form of `sql`, or its error. */
const normalized = (sql: string) => {
  try {
    return normalizeSync(sql);
  } catch (error) {
    return `error: ${(error as Error).message}`;
  }
};

describe("PostgreSQL analysis cache: the quick constants key in front of the normalizer", () => {
  before(() => loadSqlParser());

  test("a text whose constants the quick pass finds is answered by its key, exactly as by the normalizer", () => {
    const cache = new AnalysisCache();
    const texts = ["1", "22", "333", "4.5"].map((aid) => `SELECT id, email FROM users WHERE id = '${aid}' AND login <> 'it''s' LIMIT ${aid.length}`);
    for (const sql of texts) assert.deepEqual(acted(cache.get(sql, schema, readOnly)), acted(analyzeQuery(sql, schema, readOnly)), sql);
    // The first text confirms the key with the normalizer; the others need neither it nor the parser.
    assert.deepEqual({ misses: cache.misses, formHits: cache.formHits, keyHits: cache.keyHits }, { misses: 1, formHits: 4, keyHits: 3 });
  });

  test("a key is used only while the normalizer's form of a text with it was the key's form", () => {
    const cache = new AnalysisCache();
    // Where the quick pass and PostgreSQL disagree: a negative number is one constant with its sign, strings continued
    // over a line break are one constant, LIMIT's and OFFSET's parameters are numbered in the parse tree's order, ORDER BY's
    // ordinals and type modifiers are not replaced. Every text is still answered by its form, through the normalizer.
    const disagreeing = [
      (i: number) => `SELECT id FROM users WHERE id = -${i}`,
      (i: number) => `SELECT id FROM users WHERE id = '${i}'\n'x'`,
      (i: number) => `SELECT id FROM users WHERE login = 'x' LIMIT ${i} OFFSET ${i + 1}`,
      (i: number) => `SELECT id FROM users WHERE id = '${i}' ORDER BY ${i}`,
      (i: number) => `SELECT CAST(id AS varchar(${i})) FROM users WHERE id = '${i}'`,
    ];
    for (const text of disagreeing) {
      const key = constantsKey(text(1));
      assert.ok(key !== undefined && formOfKey(key) !== normalized(text(1)), `${text(1)} has a key the normalizer disagrees with`);
      for (const i of [1, 2, 3]) assert.deepEqual(acted(cache.get(text(i), schema, readOnly)), acted(analyzeQuery(text(i), schema, readOnly)), text(i));
    }
    assert.equal(cache.keyHits, 0);
  });

  test("texts that differ in anything but a constant's value never share a key", () => {
    const pairs = [
      ["SELECT id FROM users WHERE id = 1", "SELECT id FROM users WHERE login = 1"],
      ["SELECT id FROM users WHERE id = 1", "SELECT id FROM users WHERE id <> 1"],
      ["SELECT id FROM users WHERE id = 1", "SELECT id FROM users WHERE id  = 1"],
      ["SELECT id FROM users WHERE id = 1", "SELECT id FROM users WHERE id = '1'"],
      ["SELECT id FROM users WHERE id = 1", "SELECT id FROM users WHERE id = 1.0"],
      [`SELECT "a'", 1 FROM users`, `SELECT "b'", 1 FROM users`],
      [`SELECT "a""'", 1 FROM users`, `SELECT "a""", 1 FROM users`],
      ["SELECT t1.id, 1 FROM users t1", "SELECT t2.id, 1 FROM users t2"],
    ];
    for (const [a, b] of pairs) {
      const [keyA, keyB] = [constantsKey(a!), constantsKey(b!)];
      assert.ok(keyA !== undefined && keyB !== undefined, `${a} and ${b} have keys`);
      assert.notEqual(keyA, keyB, `${a} / ${b}`);
    }
    // A quoted name's content is the name's, not a constant: a quote inside it does not start a string.
    assert.equal(formOfKey(constantsKey(`SELECT "x'", 'y' FROM users WHERE id = "z'"`)!), `SELECT "x'", $1 FROM users WHERE id = "z'"`);
  });

  test("texts the quick pass cannot read for certain get no key", () => {
    const unread = [
      "SELECT id FROM users -- 1",
      "SELECT id /* 1 */ FROM users",
      "SELECT $1, 2",
      "SELECT $$x$$, 2",
      "SELECT 'a\\', 2",
      "SELECT E'a', 2",
      "SELECT x'1F', 2",
      "SELECT 1e5",
      "SELECT .5",
      "SELECT 0x1F",
      "SELECT 1_000",
      "SELECT 1.",
      "SELECT 1.2.3",
      "SELECT 'é', 1",
      "SELECT 'a\nb', 1",
      "SELECT 'unterminated",
      `SELECT "unterminated, 1`,
      "SELECT id FROM users",
    ];
    for (const sql of unread) assert.equal(constantsKey(sql), undefined, sql);
  });

  test("every text of a key the normalizer confirmed has that form (random texts of tricky tokens)", () => {
    const tokens = [
      "SELECT",
      " ",
      "\n",
      "id",
      "users",
      ",",
      "(",
      ")",
      "-",
      "+",
      "::",
      "=",
      "'a'",
      "''''",
      "'--'",
      `"q'"`,
      "5",
      "5.25",
      "e",
      ".",
      "/",
      "*",
      "E",
      "U&",
      "$",
      "LIMIT",
      "ORDER BY",
      "'",
      `"`,
    ];
    const constants: Record<string, string[]> = { i: ["0", "7", "99999999999999999999"], d: ["1.5", "0.25"], s: ["''", "'x'", "'it''s'", "' -- /* '", `'"'`] };
    let seed = 18;
    const random = (n: number) => {
      seed = (seed * 1103515245 + 12345) % 2147483648;
      return seed % n;
    };
    let confirmed = 0;
    for (let round = 0; round < 3000; round++) {
      let sql = "SELECT ";
      for (let length = 1 + random(8); length > 0; length--) sql += tokens[random(tokens.length)];
      const key = constantsKey(sql);
      if (key === undefined || normalized(sql) !== formOfKey(key)) continue;
      confirmed++;
      const kinds = key.slice(0, key.indexOf("\u0000"));
      const other = formOfKey(key).replace(/\$(\d+)/g, (_, n: string) => {
        const choices = constants[kinds[Number(n) - 1]!]!;
        return choices[random(choices.length)]!;
      });
      assert.equal(constantsKey(other), key, other);
      assert.equal(normalized(other), formOfKey(key), `${sql} / ${other}`);
    }
    assert.ok(confirmed > 100, `${confirmed} random texts had a confirmed key`);
  });
});
