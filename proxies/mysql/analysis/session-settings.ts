/**
 * The SET statements drivers send to set a session up, which every export runs, read-only or not
 * (docs/mysql-export.md, "Session settings"): MariaDB Connector/J opens each connection with
 * `set autocommit=1, sql_mode = concat(@@sql_mode,',STRICT_TRANS_TABLES')`, and a read-only export
 * that refused every SET refused every JDBC connection. Taken: session (not global) settings of the
 * variables below, each to a literal, and sql_mode only with modes that change nothing in how the
 * server reads a statement's text. Anything else keeps the rules it had (refused on a read-only
 * export; sql_mode and character sets refused everywhere).
 */

import { functionName, sessionVariableName, shownVariables } from "./metadata-reads";

type Node = Record<string, unknown>;

/**
 * SQL modes that do not change how MariaDB reads quotes, backslashes, names, operators or
 * function calls (the export's parser reads statements as the default mode does): strictness,
 * zero dates, engine substitution, SHOW CREATE's options. Never: ANSI_QUOTES, NO_BACKSLASH_ESCAPES,
 * PIPES_AS_CONCAT, IGNORE_SPACE, HIGH_NOT_PRECEDENCE, EMPTY_STRING_IS_NULL, and the combinations
 * that include them (ANSI, ORACLE, MSSQL, DB2, POSTGRESQL, MAXDB...).
 */
const readingNeutralModes = new Set([
  "STRICT_TRANS_TABLES",
  "STRICT_ALL_TABLES",
  "TRADITIONAL",
  "ERROR_FOR_DIVISION_BY_ZERO",
  "NO_ZERO_DATE",
  "NO_ZERO_IN_DATE",
  "NO_ENGINE_SUBSTITUTION",
  "NO_AUTO_CREATE_USER",
  "NO_AUTO_VALUE_ON_ZERO",
  "ONLY_FULL_GROUP_BY",
  "ALLOW_INVALID_DATES",
  "NO_UNSIGNED_SUBTRACTION",
  "PAD_CHAR_TO_FULL_LENGTH",
  "REAL_AS_FLOAT",
  "TIME_ROUND_FRACTIONAL",
  "NO_DIR_IN_CREATE",
  "NO_FIELD_OPTIONS",
  "NO_KEY_OPTIONS",
  "NO_TABLE_OPTIONS",
]);

const isNumber = (value: Node) => value.type === "number" && typeof value.value === "number";
const isString = (value: Node) => (value.type === "single_quote_string" || value.type === "double_quote_string") && typeof value.value === "string";
const isLiteral = (value: Node) => isNumber(value) || isString(value) || value.type === "bool";

/** Session variables drivers set, and the literal each may take. */
const settable = new Map<string, (value: Node) => boolean>([
  ["autocommit", isLiteral],
  ["session_track_schema", isLiteral],
  ["session_track_state_change", isLiteral],
  ["session_track_transaction_info", isLiteral],
  ["net_read_timeout", isNumber],
  ["net_write_timeout", isNumber],
  ["wait_timeout", isNumber],
  ["interactive_timeout", isNumber],
  ["lock_wait_timeout", isNumber],
  ["innodb_lock_wait_timeout", isNumber],
  ["max_statement_time", isNumber],
  ["group_concat_max_len", isNumber],
  ["sql_mode", sqlModeValue],
]);

/** Every mode named in a comma-separated list is reading-neutral. */
function neutralModes(list: string): boolean {
  return list
    .split(",")
    .map((mode) => mode.trim().toUpperCase())
    .every((mode) => mode === "" || readingNeutralModes.has(mode));
}

/** A list of reading-neutral modes, or the current modes with such a list added (`concat(@@sql_mode, ',STRICT_TRANS_TABLES')`). */
function sqlModeValue(value: Node): boolean {
  if (isString(value)) return neutralModes(value.value as string);
  if (value.type !== "function" || functionName(value) !== "CONCAT") return false;
  const args = ((value.args as Node | undefined)?.value ?? []) as Node[];
  // The session's own modes first (`@@sql_mode`, `@@session.sql_mode`; never `@@global.`).
  return args.length >= 2 && sessionVariableName(args[0]!) === "sql_mode" && args.slice(1).every((arg) => isString(arg) && neutralModes(arg.value as string));
}

/**
 * On an allowWrites export, which runs any SET: the first variable a schema read may show
 * (metadata-reads.ts shownVariables) that this SET gives something other than a literal (a value
 * computed from a table would come back through `SELECT @@time_zone`), else undefined.
 */
export function shownVariableSetToExpression(statement: Node): string | undefined {
  if (statement.type !== "set" || !Array.isArray(statement.expr)) return undefined;
  for (const assignment of statement.expr as Node[]) {
    const left = assignment?.left as Node | undefined;
    const right = assignment?.right as Node | undefined;
    if (left?.type !== "var") continue;
    const members = Array.isArray(left.members) ? (left.members as unknown[]) : [];
    const names = [left.name, ...members].filter((name): name is string => typeof name === "string").map((name) => name.toLowerCase());
    const shown = names.find((name) => shownVariables.has(name));
    if (shown !== undefined && !(right && isLiteral(right))) return shown;
  }
  return undefined;
}

/** Whether a parsed SET only sets session variables drivers set, each to a value it may take. */
export function isSessionSetting(statement: Node): boolean {
  if (statement.type !== "set") return false;
  if (statement.keyword !== null && statement.keyword !== undefined && String(statement.keyword).toUpperCase() !== "SESSION") return false;
  const assignments = statement.expr;
  if (!Array.isArray(assignments) || assignments.length === 0) return false;
  return assignments.every((assignment: Node) => {
    if (assignment?.type !== "assign" || assignment.symbol !== "=") return false;
    // `name`, `@@name`, `@@session.name` (never `@@global.`, never `@user`).
    const name = sessionVariableName(assignment.left as Node, true);
    const valueRule = name === undefined ? undefined : settable.get(name);
    return valueRule !== undefined && typeof assignment.right === "object" && assignment.right !== null && valueRule(assignment.right as Node);
  });
}
