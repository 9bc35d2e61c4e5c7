import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { analyseStatement } from "../../proxies/mysql/analysis/statement-analysis";

const kindOf = (sql: string) => analyseStatement(sql, { allowWrites: false }).kind;

describe("MySQL schema reads (proxies/mysql/analysis/metadata-reads.ts)", () => {
  test("SHOW and DESCRIBE forms that name only schema objects pass whole", () => {
    for (const sql of [
      "SHOW TABLES",
      "SHOW DATABASES",
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
    // Rows pass whole, so the server runs what the parser read: its printing.
    assert.equal((analyseStatement("SHOW /* listed */ TABLES", { allowWrites: false }) as { text?: string }).text, "SHOW TABLES");
    assert.equal((analyseStatement("describe users", { allowWrites: false }) as { text?: string }).text, "DESC `users`");
  });

  test("other SHOWs, and any form with a WHERE (its subqueries read any table), keep their rows decided (none pass)", () => {
    for (const sql of [
      // The parser prints it without its filter: it cannot run as the parser read it.
      "SHOW DATABASES LIKE 'ap%'",
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

  test("SELECTs of information_schema's schema tables, or of no table, with listed functions and server variables pass whole", () => {
    for (const sql of [
      "SELECT 1",
      "SELECT DATABASE()",
      "SELECT VERSION(), USER(), CONNECTION_ID()",
      "SELECT @@version_comment LIMIT 1",
      "SELECT * FROM information_schema.SCHEMATA",
      "SELECT COUNT(*) FROM information_schema.TABLES",
      "SELECT TABLE_SCHEMA TABLE_CAT, NULL TABLE_SCHEM, TABLE_NAME, IF(TABLE_TYPE='BASE TABLE' or TABLE_TYPE='SYSTEM VERSIONED', 'TABLE', TABLE_TYPE) as TABLE_TYPE, TABLE_COMMENT REMARKS FROM INFORMATION_SCHEMA.TABLES WHERE TABLE_SCHEMA = 'app' AND TABLE_NAME LIKE '%' ORDER BY TABLE_TYPE, TABLE_SCHEMA, TABLE_NAME",
      "SELECT c.COLUMN_NAME, UCASE(IF(COLUMN_TYPE LIKE '%(%)%', CONCAT(SUBSTRING(COLUMN_TYPE, 1, LOCATE('(', COLUMN_TYPE) - 1)), COLUMN_TYPE)) TYPE_NAME, CAST(c.ORDINAL_POSITION AS SIGNED) pos FROM information_schema.COLUMNS c JOIN information_schema.TABLES t ON t.TABLE_NAME = c.TABLE_NAME WHERE c.TABLE_SCHEMA = DATABASE() AND c.TABLE_NAME IN (SELECT TABLE_NAME FROM information_schema.TABLES) ORDER BY 1 DESC",
      "SELECT TABLE_NAME FROM information_schema.TABLES UNION SELECT TABLE_NAME FROM information_schema.VIEWS",
      "SELECT * FROM (SELECT TABLE_NAME FROM information_schema.TABLES) d",
    ])
      assert.equal(kindOf(sql), "metadata", sql);
  });

  test("a SELECT that reads a table, a statement text, a stored value or state an earlier statement left is decided as before (no row passes)", () => {
    for (const sql of [
      "SELECT id FROM users",
      "SELECT TABLE_NAME FROM information_schema.TABLES WHERE TABLE_NAME = (SELECT secret FROM users LIMIT 1)",
      "SELECT TABLE_NAME FROM information_schema.TABLES t, users u",
      "SELECT 1 UNION SELECT secret FROM users",
      "SELECT * FROM (SELECT id FROM users) d",
      "SELECT INFO FROM information_schema.PROCESSLIST",
      "SELECT * FROM information_schema.USER_VARIABLES",
      "SELECT * FROM information_schema.SESSION_VARIABLES",
      "SELECT TABLE_NAME FROM TABLES",
      "SELECT * FROM mysql.column_stats",
      "SELECT LAST_INSERT_ID()",
      "SELECT FOUND_ROWS()",
      "SELECT ROW_COUNT()",
      "SELECT SLEEP(1)",
      "SELECT f(TABLE_NAME) FROM information_schema.TABLES",
      "SELECT app.f(TABLE_NAME) FROM information_schema.TABLES",
      "SELECT @@last_insert_id",
      "SELECT @@global.time_zone",
      "SELECT @@session.sql_select_limit",
      "SELECT SQL_CALC_FOUND_ROWS TABLE_NAME FROM information_schema.TABLES",
      "SELECT TABLE_NAME FROM information_schema.TABLES FOR UPDATE",
    ])
      assert.notEqual(kindOf(sql), "metadata", sql);
  });
});
