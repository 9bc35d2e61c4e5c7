import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { analyseStatement } from "../../proxies/mysql/analysis/statement-analysis";

const analysed = (sql: string, allowWrites = false) => analyseStatement(sql, { allowWrites });

describe("MySQL session settings (proxies/mysql/analysis/session-settings.ts)", () => {
  test("drivers' session set-up runs on a read-only export", () => {
    for (const sql of [
      "set autocommit=1, sql_mode = concat(@@sql_mode,',STRICT_TRANS_TABLES')",
      "SET SESSION autocommit = 0",
      "SET @@session.autocommit = 1",
      "SET sql_mode = 'STRICT_TRANS_TABLES,NO_ENGINE_SUBSTITUTION'",
      "SET net_write_timeout = 600, wait_timeout = 28800",
    ]) {
      const analysis = analysed(sql) as { kind: string; write: boolean; text?: string };
      assert.deepEqual([analysis.kind, analysis.write], ["other", false], sql);
      assert.match(analysis.text ?? "", /^SET /, `${sql}: runs as the parser printed it`);
    }
    // What the server runs is the parser's printing: a comment, or anything the two read otherwise in it, is gone.
    assert.equal((analysed("SET autocommit /* a driver's note */ = 1") as { text?: string }).text, "SET autocommit = 1");
  });

  test("anything more keeps its refusal: other variables, global scope, expressions, modes that change how statements are read", () => {
    for (const [sql, pattern] of [
      ["SET transaction_read_only = 0", /read-only export/],
      ["SET GLOBAL autocommit = 1", /read-only export/],
      ["SET autocommit = (SELECT 1)", /takes only a literal/],
      ["SET constructor = 1", /read-only export/],
      ["SET sql_mode = 'ANSI_QUOTES'", /sql_mode is fixed/],
      ["SET sql_mode = concat(@@sql_mode, ',NO_BACKSLASH_ESCAPES')", /sql_mode is fixed/],
      ["SET sql_mode = concat(@@sql_mode, ',ANSI')", /sql_mode is fixed/],
      ["SET sql_mode = concat(@@global.sql_mode, ',STRICT_TRANS_TABLES')", /sql_mode is fixed/],
    ] as const) {
      const analysis = analysed(sql);
      assert.equal(analysis.kind, "refused", sql);
      assert.match((analysis as { message: string }).message, pattern, sql);
    }
  });

  test("on an allowWrites export, a variable schema reads show takes only a literal", () => {
    assert.equal(analysed("SET time_zone = '+01:00'", true).kind, "other");
    for (const sql of [
      "SET time_zone = (SELECT CONCAT('+0', LENGTH(secret), ':00') FROM users LIMIT 1)",
      "SET @@session.auto_increment_increment = (SELECT LENGTH(secret) FROM users LIMIT 1)",
    ]) {
      const analysis = analysed(sql, true);
      assert.equal(analysis.kind, "refused", sql);
      assert.match((analysis as { message: string }).message, /takes only a literal/, sql);
    }
    assert.equal(analysed("SET sql_select_limit = (SELECT 5)", true).kind, "other", "a variable schema reads do not show runs as before");
  });
});
