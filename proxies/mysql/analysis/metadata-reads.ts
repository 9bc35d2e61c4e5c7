/**
 * Schema browsing through a MySQL export (docs/mysql-export.md, "Schema browsing"): SHOW and
 * DESCRIBE statements that name nothing but schema objects answer as the server sends them, as
 * the PostgreSQL export's catalog reads do, so `SHOW TABLES`, `DESCRIBE users` and `SHOW CREATE
 * TABLE users` work in the mariadb client and in tools. Their rows are names, types, keys, defaults
 * and DDL: what the schema is, not what the tables hold.
 *
 * Decided on node-sql-parser's tree, by an allowlist of forms whose every part is known: a form
 * with anything more (a WHERE, whose subqueries can read any table; a key this code does not
 * know) is not a metadata read, and its rows are dropped as before. Never metadata reads: SHOW
 * PROCESSLIST (other sessions' statements, with their values), SHOW BINLOG EVENTS (written rows),
 * SHOW VARIABLES and STATUS (state a statement can set from a value), SHOW GRANTS, and every SHOW
 * the parser reads otherwise or not at all (those are refused as unparsable).
 */

type Node = Record<string, unknown>;

/** The node has no keys but these, apart from ones the parser left undefined (a key added by another parser version makes the form unknown). */
function only(node: Node, keys: readonly string[]): boolean {
  return Object.entries(node).every(([key, value]) => value === undefined || keys.includes(key));
}

/** A table as the parser gives it in SHOW ... FROM and SHOW CREATE: a name, maybe a database, no more. */
function isTableName(value: unknown): boolean {
  if (typeof value !== "object" || value === null) return false;
  const table = value as Node;
  return only(table, ["db", "table", "as"]) && typeof table.table === "string" && (table.db === null || typeof table.db === "string") && !table.as;
}

/** No filter, or `LIKE '<pattern>'` with a string literal. */
function isNameFilter(expr: unknown): boolean {
  if (expr === null || expr === undefined) return true;
  if (typeof expr !== "object") return false;
  const like = expr as Node;
  const right = like.right as Node | undefined;
  return (
    only(like, ["op", "right"]) &&
    like.op === "LIKE" &&
    typeof right === "object" &&
    right !== null &&
    only(right, ["type", "value"]) &&
    // A double-quoted string is a string too: the export's sessions keep sql_mode without ANSI_QUOTES.
    (right.type === "single_quote_string" || right.type === "double_quote_string") &&
    typeof right.value === "string"
  );
}

/** Whether the parsed statement is a schema read whose rows pass whole. */
export function isMetadataRead(statement: Node): boolean {
  if (statement.type === "desc") return only(statement, ["type", "table"]) && typeof statement.table === "string";
  if (statement.type !== "show") return false;
  switch (statement.keyword) {
    case "tables":
      return only(statement, ["type", "keyword"]);
    case "databases":
    case "collation":
      return only(statement, ["type", "keyword", "expr"]) && isNameFilter(statement.expr);
    case "character":
      return only(statement, ["type", "keyword", "suffix", "expr"]) && statement.suffix === "set" && isNameFilter(statement.expr);
    case "columns":
    case "index":
    case "indexes":
      return only(statement, ["type", "keyword", "from"]) && Array.isArray(statement.from) && statement.from.length === 1 && isTableName(statement.from[0]);
    case "create": {
      const suffix = statement.suffix;
      if (suffix !== "table" && suffix !== "view") return false;
      return only(statement, ["type", "keyword", "suffix", suffix]) && isTableName(statement[suffix]);
    }
    default:
      return false;
  }
}
