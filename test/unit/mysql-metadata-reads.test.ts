import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { analyseStatement } from "../../proxies/mysql/analysis/statement-analysis";

const kindOf = (sql: string) => analyseStatement(sql, { allowWrites: false }).kind;

describe("MySQL schema reads (proxies/mysql/analysis/metadata-reads.ts)", () => {
  test("SHOW and DESCRIBE forms that name only schema objects pass whole", () => {
    for (const sql of [
      "SHOW TABLES",
      "SHOW DATABASES",
      "SHOW DATABASES LIKE 'ap%'",
      'SHOW DATABASES LIKE "ap%"',
      "DESCRIBE users",
      "DESC users",
      "SHOW COLUMNS FROM users",
      "SHOW COLUMNS FROM app.users",
      "SHOW INDEX FROM orders",
      "SHOW INDEXES FROM orders",
      "SHOW CREATE TABLE users",
      "SHOW CREATE TABLE app.users",
      "SHOW CREATE VIEW v",
      "SHOW COLLATION",
      "SHOW CHARACTER SET LIKE 'utf8%'",
    ])
      assert.equal(kindOf(sql), "metadata", sql);
  });

  test("other SHOWs, and any form with a WHERE (its subqueries read any table), keep their rows decided (none pass)", () => {
    for (const sql of [
      "SHOW PROCESSLIST",
      "SHOW STATUS",
      "SHOW TRIGGERS",
      "SHOW BINLOG EVENTS",
      "SHOW GRANTS",
      "SHOW PROCEDURE STATUS",
      "SHOW CREATE PROCEDURE p",
      "SHOW CREATE TRIGGER t",
      "SHOW CREATE EVENT e",
      "SHOW DATABASES WHERE `Database` = (SELECT secret FROM users LIMIT 1)",
      "SHOW COLLATION WHERE Charset = (SELECT secret FROM users LIMIT 1)",
    ])
      assert.equal(kindOf(sql), "other", sql);
  });
});
