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

/**
 * information_schema tables whose rows describe the schema (names, types, keys, constraints, DDL,
 * privileges, row counts): a SELECT reading only these passes whole. Never: PROCESSLIST, PROFILING,
 * OPTIMIZER_TRACE, QUERY_CACHE_INFO (statement texts, with their values), USER_VARIABLES (values a
 * statement set), GLOBAL/SESSION_STATUS and _VARIABLES (state a statement can set from a value),
 * INNODB_* (locked keys, buffer pages), and every other table not listed.
 */
const schemaTables = new Set([
  "SCHEMATA",
  "TABLES",
  "COLUMNS",
  "STATISTICS",
  "KEY_COLUMN_USAGE",
  "REFERENTIAL_CONSTRAINTS",
  "TABLE_CONSTRAINTS",
  "CHECK_CONSTRAINTS",
  "VIEWS",
  "ROUTINES",
  "PARAMETERS",
  "TRIGGERS",
  "PARTITIONS",
  "CHARACTER_SETS",
  "COLLATIONS",
  "COLLATION_CHARACTER_SET_APPLICABILITY",
  "ENGINES",
  "COLUMN_PRIVILEGES",
  "TABLE_PRIVILEGES",
  "SCHEMA_PRIVILEGES",
  "USER_PRIVILEGES",
  "KEYWORDS",
  "SQL_FUNCTIONS",
]);

/**
 * Built-in functions a schema read may call: pure functions of their arguments (the string and
 * comparison functions drivers' metadata queries use) and the session's names. Never: a stored
 * function (it can read any table), LAST_INSERT_ID (LAST_INSERT_ID(expr) stores a value),
 * FOUND_ROWS and ROW_COUNT (counts an earlier statement left, of rows it chose by any column),
 * SLEEP and BENCHMARK, and every other function not listed.
 */
const schemaFunctions = new Set([
  "IF",
  "IFNULL",
  "NULLIF",
  "COALESCE",
  "CONCAT",
  "CONCAT_WS",
  "UPPER",
  "UCASE",
  "LOWER",
  "LCASE",
  "SUBSTRING",
  "SUBSTR",
  "LEFT",
  "RIGHT",
  "LOCATE",
  "INSTR",
  "LENGTH",
  "CHAR_LENGTH",
  "REPLACE",
  "TRIM",
  "LTRIM",
  "RTRIM",
  "FIELD",
  "FIND_IN_SET",
  "GREATEST",
  "LEAST",
  "ABS",
  "DATABASE",
  "SCHEMA",
  "VERSION",
  "USER",
  "CURRENT_USER",
  "SESSION_USER",
  "SYSTEM_USER",
  "CONNECTION_ID",
]);
const schemaAggregates = new Set(["COUNT", "MIN", "MAX", "SUM", "GROUP_CONCAT"]);
/**
 * Server variables a schema read may show: those no session can set (version...), and session
 * settings drivers read at connect (MariaDB Connector/J asks for time_zone and
 * auto_increment_increment) whose value can only be a literal through an export: a read-only export
 * sets only the variables of session-settings.ts, to literals, and an allowWrites one takes only a
 * literal for these (session-settings.ts shownVariableSetToExpression), so none holds a value a
 * statement computed from data. Never: last_insert_id and identity (LAST_INSERT_ID(expr)), and
 * every variable not listed.
 */
export const shownVariables = new Set([
  "version",
  "version_comment",
  "version_compile_os",
  "version_compile_machine",
  "lower_case_table_names",
  "max_allowed_packet",
  "system_time_zone",
  "protocol_version",
  "license",
  "time_zone",
  "auto_increment_increment",
  "auto_increment_offset",
  "autocommit",
  "sql_mode",
  "tx_isolation",
  "transaction_isolation",
  "tx_read_only",
  "transaction_read_only",
  "net_write_timeout",
  "net_read_timeout",
  "wait_timeout",
  "interactive_timeout",
  "character_set_client",
  "character_set_connection",
  "character_set_results",
  "character_set_server",
  "character_set_database",
  "collation_connection",
  "collation_server",
  "collation_database",
  "session_track_schema",
]);

/**
 * The session variable a `@@name` or `@@session.name` names (lower case), and with `bare` a plain
 * `name` too (SET's left side); undefined for `@@global.`, `@user` and anything else.
 */
export function sessionVariableName(node: Node, bare = false): string | undefined {
  if (node.type !== "var" || typeof node.name !== "string") return undefined;
  const members = Array.isArray(node.members) ? (node.members as unknown[]) : [];
  if ((node.prefix === "@@" || (bare && node.prefix === null)) && members.length === 0) return node.name.toLowerCase();
  if (node.prefix === "@@" && node.name.toLowerCase() === "session" && members.length === 1 && typeof members[0] === "string") return members[0].toLowerCase();
  return undefined;
}

/** Expression node types that hold nothing but their children and literals. */
const plainTypes = new Set(["binary_expr", "unary_expr", "expr_list", "case", "when", "else", "cast"]);
const literalTypes = new Set(["column_ref", "star", "number", "single_quote_string", "double_quote_string", "bool", "null"]);

/** A built-in function's name (upper case): one unqualified part; undefined otherwise. */
export function functionName(node: Node): string | undefined {
  const parts = (node.name as { name?: Array<{ value?: unknown }> } | undefined)?.name;
  return Array.isArray(parts) && parts.length === 1 && typeof parts[0]?.value === "string" ? parts[0].value.toUpperCase() : undefined;
}

/** A table of FROM (or a JOIN): an allowlisted information_schema table, or a derived table that is itself a schema read. */
function schemaRelation(entry: unknown): boolean {
  if (typeof entry !== "object" || entry === null) return false;
  const relation = entry as Node;
  const joined =
    (relation.on === undefined || relation.on === null || schemaExpression(relation.on)) && (relation.using === undefined || relation.using === null);
  if (relation.expr !== undefined) {
    const ast = (relation.expr as Node | null)?.ast;
    return only(relation, ["expr", "as", "join", "on"]) && joined && typeof ast === "object" && ast !== null && schemaSelectNode(ast as Node);
  }
  return (
    only(relation, ["db", "table", "as", "join", "on"]) &&
    joined &&
    typeof relation.db === "string" &&
    relation.db.toLowerCase() === "information_schema" &&
    typeof relation.table === "string" &&
    schemaTables.has(relation.table.toUpperCase())
  );
}

/** An expression of a schema read: every node a known kind, functions and variables from the lists, subqueries schema reads. */
function schemaExpression(value: unknown): boolean {
  if (Array.isArray(value)) return value.every(schemaExpression);
  if (typeof value !== "object" || value === null) return true;
  const node = value as Node;
  if (node.type === undefined) {
    // A subquery ({ast}), or a holder of expressions (a select list entry, ORDER BY, LIMIT).
    if (node.ast !== undefined) return typeof node.ast === "object" && node.ast !== null && schemaSelectNode(node.ast as Node);
    return Object.values(node).every(schemaExpression);
  }
  const type = node.type;
  if (type === null) return Object.values(node).every(schemaExpression);
  if (type === "select") return schemaSelectNode(node);
  if (literalTypes.has(String(type))) return node.collate === undefined || node.collate === null;
  if (plainTypes.has(String(type))) return Object.entries(node).every(([key, child]) => key === "type" || schemaExpression(child));
  if (type === "function") {
    const name = functionName(node);
    return name !== undefined && schemaFunctions.has(name) && !node.over && schemaExpression(node.args);
  }
  if (type === "aggr_func") return typeof node.name === "string" && schemaAggregates.has(node.name.toUpperCase()) && !node.over && schemaExpression(node.args);
  if (type === "var") {
    const name = sessionVariableName(node);
    return name !== undefined && shownVariables.has(name);
  }
  return false;
}

/** A SELECT (and the SELECTs of its UNION) reading nothing but allowlisted information_schema tables, or no table. */
function schemaSelectNode(select: Node): boolean {
  const none = (key: string) => select[key] === undefined || select[key] === null;
  const into = select.into as Node | undefined | null;
  if (!none("with") || !none("options") || !none("locking_read") || !none("window") || !none("collate")) return false;
  if (into && into.position !== null && into.position !== undefined) return false;
  const from = select.from;
  if (from !== null && from !== undefined && !(Array.isArray(from) && from.every(schemaRelation))) return false;
  const known = [
    "with",
    "type",
    "options",
    "distinct",
    "columns",
    "into",
    "from",
    "where",
    "groupby",
    "having",
    "orderby",
    "collate",
    "limit",
    "locking_read",
    "window",
    "_next",
    "set_op",
  ];
  if (!only(select, known)) return false;
  const orderby = select.orderby;
  // ORDER BY entries carry their direction as `type` ("ASC", "DESC"): their expressions are what is checked.
  const ordered =
    orderby === null ||
    orderby === undefined ||
    (Array.isArray(orderby) && orderby.every((entry: Node) => only(entry, ["expr", "type", "nulls"]) && schemaExpression(entry.expr)));
  return ordered && ["columns", "where", "groupby", "having", "limit", "_next"].every((key) => schemaExpression(select[key]));
}

/**
 * Whether a parsed SELECT is a schema read: it reads only information_schema tables that describe
 * the schema (schemaTables), or no table at all (`SELECT DATABASE()`, `SELECT @@version_comment`),
 * calls only the functions and server variables listed above, and so has no value of any table
 * in its rows: they pass whole (docs/mysql-export.md, "Schema browsing").
 */
export function isSchemaSelect(statement: Node): boolean {
  return statement.type === "select" && schemaSelectNode(statement);
}
