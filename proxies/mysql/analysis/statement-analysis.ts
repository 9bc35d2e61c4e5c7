import { Parser } from "node-sql-parser/build/mariadb";
import { isMetadataRead, isSchemaSelect } from "./metadata-reads";
import { isSessionSetting, shownVariableSetToExpression } from "./session-settings";
import { withHiddenColumns, type HiddenColumn, type RewrittenSelect } from "./hidden-user-columns";
import { resolutionFacts, resolveReference, starCovers, type DerivedRelation, type Relation, type Source } from "./derived-relations";
import { predicateReferences, type PredicateReference } from "./strict-predicates";

/** A base table the outer SELECT reads, under the name its columns are reported with (its alias, else its name). */
export interface Instance {
  alias: string;
  /** The database named in the statement; null: the session's. */
  db: string | null;
  table: string;
}

/** One item of the outer select list as the parse tree says. */
export type OutputEntry = { kind: "column"; table: string | null; column: string } | { kind: "star"; table: string | null } | { kind: "expression" };

/** What the outer SELECT reads and returns: enough to attribute each result column with the server's column definitions (with the session's database for unqualified names). */
export interface SelectShape {
  /** Base-table instances by alias (exact: aliases are case-sensitive on the server). */
  instances: ReadonlyMap<string, Instance>;
  /** Derived tables and CTE references by alias, with what each passes through. */
  derived: ReadonlyMap<string, DerivedRelation & { kind: "derived" }>;
  /** Every relation of the outer FROM list, in order (base and derived). */
  relations: readonly Relation[];
  entries: readonly OutputEntry[];
  /** False for results whose values cannot stand for one row of each instance (set operations, grouping, aggregates, USING joins): nothing is attributed. */
  attributable: boolean;
  /** SELECT DISTINCT (an added column makes equal values of two users two rows). */
  distinct: boolean;
  /** How many columns at the end of the result the export added (hidden-user-columns.ts): never sent. */
  hiddenCount: number;
}

/** A refusal in MySQL's terms (error number and SQLSTATE) and the audit event that records it. */
export interface Refusal {
  kind: "refused";
  code: number;
  sqlState: string;
  message: string;
  event: string;
  /** The text holds several statements (each may still run on its own: session/command-phase.ts, multi-statements). */
  multiStatement?: true;
}

export type StatementAnalysis =
  | Refusal
  /**
   * A SELECT: its rows are decided with the shape; `predicates` for strict exports. `text` is
   * what the backend runs: the parser's own printing of the statement, which analyses as the
   * client's text did (`printedSelect`), never the client's text itself.
   */
  | { kind: "select"; shape: SelectShape; predicates: readonly PredicateReference[]; text: string }
  /** SHOW WARNINGS / SHOW ERRORS: level and code pass, texts are replaced. */
  | { kind: "diagnostics" }
  /**
   * Schema browsing (metadata-reads.ts: SHOW TABLES, DESCRIBE t, SELECTs of information_schema's
   * schema tables...): rows pass as the server sends them. A SELECT runs as printed (`text`).
   */
  | { kind: "metadata"; text?: string }
  /** USE: the session's database becomes `db` once the server says OK. */
  | { kind: "use"; db: string }
  /** Anything else allowed: its rows (SHOW, DESCRIBE...) have no attributable instance and are dropped. */
  | {
      kind: "other";
      write: boolean;
      predicates: readonly PredicateReference[];
      /** What the backend runs instead of the client's text: a session setting as the parser printed it (runAsPrinted). */
      text?: string;
    };

export interface StatementPolicy {
  allowWrites: boolean;
  /** Rows chosen, grouped and ordered only by resource-context columns (strict-predicates.ts; applied with the mapping when a statement runs). */
  strict?: boolean;
}

/** Error numbers the proxy answers refusals with (MariaDB's own, so clients react as to the server). */
export const RefusalCode = {
  /** ER_PARSE_ERROR */
  parse: { code: 1064, sqlState: "42000" },
  /** ER_CANT_EXECUTE_IN_READ_ONLY_TRANSACTION */
  readOnly: { code: 1792, sqlState: "25006" },
  /** ER_SPECIFIC_ACCESS_DENIED_ERROR */
  denied: { code: 1227, sqlState: "42000" },
  /** ER_NOT_SUPPORTED_YET */
  unsupported: { code: 1235, sqlState: "42000" },
} as const;

function refusal(kind: keyof typeof RefusalCode, event: string, message: string): Refusal {
  return { kind: "refused", ...RefusalCode[kind], event, message };
}

const parser = new Parser();
const parseOptions = { database: "mariadb" };

/**
 * MariaDB runs `/*! ... *\/` and `/*M! ... *\/` comments as SQL; node-sql-parser skips them as
 * comments. A text holding either sequence anywhere (even inside a string literal: telling the
 * two apart would take a tokenizer of our own) is refused.
 */
const executableComment = /\/\*M?!/;

/**
 * MariaDB reads `--` as a comment only when whitespace or a control character follows it; the
 * parser reads any `--` as one, so `0 --'…` is a comment to it and a string to the server (an
 * adversarial review hid a user-id column that way). A text with `--` followed by anything else
 * (or by nothing) is refused, even inside a string literal, as executable comments are.
 */
const dashesWithoutSpace = /--(?![\x00-\x20])/;

/**
 * The parser ends a `#` or `-- ` comment at a carriage return; MariaDB only at a line feed. So
 * after `#\r` the parser reads on where the server still skips a comment: `SET autocommit = 1
 * #\r, autocommit = '\n, sql_mode = "NO_BACKSLASH_ESCAPES" #'` was two settings of autocommit to
 * the export and set sql_mode to the server, and every statement after it was read otherwise (an
 * adversarial review passed users' rows whole as a schema read). A carriage return not followed by
 * a line feed is refused anywhere (`\r\n` ends a comment at the same place for both).
 */
const bareCarriageReturn = /\r(?!\n)/;

/**
 * MariaDB reads `_utf8mb4'x'` (any character set's name after `_`, then a string) as a string
 * in that character set; the parser reads only `_binary` so (and `_latin1` before a hex or bit
 * literal), and reads the others as a column named `_utf8mb4` with the string as its alias (an adversarial
 * review read every user's row as user 'accepted' that way). What runs is the parser's printing,
 * which names that column, so the server can no longer read a literal there; this guard only
 * answers such texts with a clear refusal rather than an unknown column. Even inside a string
 * literal, as the guards above.
 */
const unknownIntroducer =
  /(?<![\w$@.`'"\\])_(armscii8|ascii|big5|cp1250|cp1251|cp1256|cp1257|cp850|cp852|cp866|cp932|dec8|eucjpms|euckr|filename|gb2312|gbk|geostd8|greek|hebrew|hp8|keybcs2|koi8r|koi8u|latin1|latin2|latin5|latin7|macce|macroman|sjis|swe7|tis620|ucs2|ujis|utf16le|utf16|utf32|utf8mb3|utf8mb4|utf8)(?=\s*['"])/i;

/** SHOW WARNINGS / SHOW ERRORS (the parser has no rule for them): one fixed form, with an optional LIMIT. */
const diagnostics = /^\s*SHOW\s+(?:WARNINGS|ERRORS)(?:\s+LIMIT\s+\d+(?:\s*,\s*\d+)?)?\s*;?\s*$/i;

/** Statement types a read-only export runs (besides SELECT, checked on its own). */
const readTypes = new Set(["show", "desc", "use", "explain"]);

/** Statement types refused even with allowWrites: files on the server or the client, server-side code, sessions the proxy cannot follow. */
const neverTypes = new Map<string, string>([
  ["load_data", "LOAD DATA reads files into tables"],
  ["call", "CALL runs stored programs, whose results the export cannot attribute"],
  ["grant", "GRANT changes privileges"],
  ["revoke", "REVOKE changes privileges"],
]);

/**
 * The analysis of one COM_QUERY or COM_STMT_PREPARE text: refused (with why), or what its
 * results are. Parsed with node-sql-parser's MariaDB grammar; a text it cannot parse is refused.
 */
export function analyseStatement(text: string, policy: StatementPolicy): StatementAnalysis {
  const lexical = lexicalRefusal(text);
  if (lexical) return lexical;
  if (diagnostics.test(text)) return { kind: "diagnostics" };
  let ast: unknown;
  try {
    ast = parser.astify(text, parseOptions);
  } catch (error) {
    const reason = error instanceof Error ? error.message.split("\n")[0]!.slice(0, 200) : "unparsable";
    return refusal("parse", "statement.unparsable", `the export cannot parse this statement, so it is refused (${reason})`);
  }
  const statements = (Array.isArray(ast) ? ast : [ast]) as Array<Record<string, unknown>>;
  if (statements.length !== 1)
    return {
      ...refusal("unsupported", "statement.refused", "one statement per query: multi-statements need CLIENT_MULTI_STATEMENTS, and COM_STMT_PREPARE takes one"),
      multiStatement: true,
    };
  const statement = statements[0]!;
  // Any statement: a strict export's UPDATE or DELETE runs as written, and `WHERE 0x LIKE …` would hide a column from the strict check.
  const ambiguous = ambiguousLiteral(statement);
  if (ambiguous) return refusal("parse", "statement.refused", `${ambiguous}: refused by the export, whose parser and MariaDB read it differently`);
  const parenthesised = parenthesisedFrom(statement);
  if (parenthesised) return refusal("unsupported", "statement.refused", `${parenthesised}: refused by the export`);
  // Decided on the client's tree, before printing changes it; the printing must be a schema read too.
  const schemaRead = isSchemaSelect(statement);
  const analysis = statement.type === "select" ? printedSelect(statement, policy) : analyseParsed(statement, policy);
  // After the statement's own refusals (a SET on a read-only export, SELECT ... INTO keep their codes).
  if (analysis.kind === "refused") return analysis;
  const shape = refusedShape(statement);
  if (shape) return refusal("unsupported", "statement.refused", `${shape}: refused by the export`);
  if (schemaRead && analysis.kind === "select") {
    const printed = parseOne(analysis.text);
    if (printed && isSchemaSelect(printed)) return { kind: "metadata", text: analysis.text };
  }
  return analysis;
}

/** The guards on the client's text (and on the printed text) against what the parser and MariaDB read differently. */
function lexicalRefusal(text: string): Refusal | undefined {
  if (executableComment.test(text))
    return refusal(
      "parse",
      "statement.refused",
      "executable comments (/*! */, /*M! */) are refused by the export: the export's parser would not see what they run",
    );
  if (dashesWithoutSpace.test(text))
    return refusal(
      "parse",
      "statement.refused",
      "'--' not followed by a space is refused by the export: the server reads it as two minus signs, the export's parser as a comment",
    );
  if (bareCarriageReturn.test(text))
    return refusal(
      "parse",
      "statement.refused",
      "a carriage return not followed by a line feed is refused by the export: the server ends a comment only at a line feed, the export's parser at either",
    );
  const introducer = unknownIntroducer.exec(text);
  if (introducer)
    return refusal(
      "parse",
      "statement.refused",
      `the character set introducer _${introducer[1]} is refused by the export: before a string its parser knows only _binary and would read it as a column name (write CONVERT('…' USING ${introducer[1]}) instead)`,
    );
  return undefined;
}

/**
 * A SELECT as it runs: printed by the parser from its own tree, and that printing parsed and
 * analysed again. The server then reads what the parser read (a column the parser took for a
 * literal's character set introducer, `_utf8mb4'x'`, or a number, `1e3`, is printed as a quoted
 * name, and the server reads a name); the client's own text never runs. Refused when the
 * printing is not the parser's reading: a literal it prints in a form MariaDB reads otherwise
 * (`ambiguousLiteral`), a printing that the guards refuse, that does not parse, that prints
 * otherwise again, or whose analysis (select list, relations and what each derived relation
 * passes through, strict predicates) differs from the client's text's.
 */
function printedSelect(statement: Record<string, unknown>, policy: StatementPolicy): StatementAnalysis {
  // Analysed before it is printed: printing changes the tree.
  const analysis = analyseParsed(statement, policy);
  if (analysis.kind !== "select") return analysis;
  const unprintable = (why: string) =>
    refusal("unsupported", "statement.unprintable", `the export runs a SELECT as its parser prints it, and ${why}: the statement is refused`);
  const printed = printStatement(statement);
  if (printed === undefined) return unprintable("it cannot print this one");
  const lexical = lexicalRefusal(printed);
  if (lexical) return { ...lexical, message: `as the export's parser prints it: ${lexical.message}` };
  const again = parseOne(printed);
  if (again?.type !== "select") return unprintable("its printing of this one does not parse as a SELECT");
  // Analysed before it is printed: printing changes the tree (backquoted qualifiers...).
  const reread = analyseParsed(again, policy);
  if (reread.kind !== "select" || selectFacts(reread) !== selectFacts(analysis))
    return unprintable("its printing of this one does not analyse as the client's text does");
  if (ambiguousLiteral(again) || printStatement(again) !== printed) return unprintable("its printing of this one does not print back the same");
  return { ...reread, text: printed };
}

/** What an analysis of a SELECT says about its rows: two readings of one statement must say the same. */
function selectFacts(analysis: { shape: SelectShape; predicates: readonly PredicateReference[] }): string {
  const { shape } = analysis;
  return JSON.stringify([
    shape.entries,
    shape.attributable,
    shape.distinct,
    shape.hiddenCount,
    [...resolutionFacts(shape.relations)].sort(),
    analysis.predicates,
  ]);
}

/**
 * A literal the parser's printer writes in a form MariaDB reads otherwise: `0x` without digits
 * (the parser reads `0xg` as an empty hex literal named `g`; MariaDB reads `0x` and `0xg` as
 * column names). Undefined when there is none.
 */
function ambiguousLiteral(statement: unknown): string | undefined {
  let found: string | undefined;
  walk(statement, (value) => {
    if (value.type === "full_hex_string" && value.value === "") found = "a 0x with no hexadecimal digit after it";
  });
  return found;
}

/**
 * Shapes the export refuses in any statement (an adversarial review of the printed SELECTs):
 * - user variables (`@v`, and `:=`): a value assigned in one statement (`SELECT @v := secret ... WHERE id = 'dropped'`,
 *   whose rows are dropped) would come back in a later one (`SELECT @v`, or a strict predicate on it) past any decision;
 * - a WITH inside a derived table or a subquery: MariaDB does not let its CTE bodies see the statement's own CTEs (a name
 *   there reads the base table), while the parser's scopes do, so columns would be traced to the wrong relation;
 * - an alias starting with whitespace: MariaDB drops the leading spaces (`AS \` id\`` is `id`), the analysis would not.
 */
function refusedShape(statement: Record<string, unknown>): string | undefined {
  let found: string | undefined;
  walk(statement, (value) => {
    if (found) return;
    if ((value.type === "var" && value.prefix === "@") || (value.type === "assign" && value.symbol === ":="))
      found = "user variables (@name, :=) carry values from one statement to another past the export's decisions";
    else if (value !== statement && value.type === "select" && Array.isArray(value.with) && value.with.length > 0)
      found = "a WITH inside a derived table or subquery (its CTEs and the statement's are scoped otherwise by MariaDB than by the export's parser)";
    else if (typeof value.as === "string" && /^\s/.test(value.as)) found = `an alias with leading whitespace ('${value.as}': MariaDB drops it)`;
    else if (value.type === "column_ref" && typeof value.column === "string" && /^\s/.test(value.column))
      found = `a column name with leading whitespace ('${value.column}': MariaDB drops it in the names it gives)`;
  });
  return found;
}

/** A parenthesised table list (`FROM (users u, orders o)`), which the analysis does not take apart: refused before it is analysed. */
function parenthesisedFrom(statement: Record<string, unknown>): string | undefined {
  let found: string | undefined;
  walk(statement, (value) => {
    if (!found && value.type === "select" && value.from !== null && value.from !== undefined && !Array.isArray(value.from))
      found = "a parenthesised list of tables in FROM (write the joins without the parentheses)";
  });
  return found;
}

/** The analysis of one parsed statement (a SELECT's `text` is set by `printedSelect`). */
function analyseParsed(statement: Record<string, unknown>, policy: StatementPolicy): StatementAnalysis {
  const type = String(statement.type ?? "");
  const never = neverTypes.get(type);
  if (never) return refusal("denied", "statement.refused", `${never}: refused by the export`);
  if (type === "select") return analyseSelect(statement, policy);
  if (type === "transaction") return analyseTransaction(statement, policy);
  if (type === "use" && typeof statement.db === "string") return { kind: "use", db: statement.db };
  const predicates = predicateReferences(statement);
  if (isMetadataRead(statement)) {
    // Rows pass whole: the server runs what the parser read. A form whose printing reads otherwise (SHOW DATABASES LIKE
    // prints without its filter) keeps its rows decided, as before schema reads (none passes).
    const printed = runAsPrinted(statement);
    return printed === undefined ? { kind: "other", write: false, predicates } : { kind: "metadata", text: printed };
  }
  if (readTypes.has(type)) return { kind: "other", write: false, predicates };
  // Drivers' session set-up (autocommit, a strict sql_mode...), on every export.
  if (isSessionSetting(statement)) {
    const printed = runAsPrinted(statement);
    if (printed !== undefined) return { kind: "other", write: false, predicates: [], text: printed };
    return refusal(
      "unsupported",
      "statement.unprintable",
      "the export runs a session setting as its parser prints it, and cannot print this one: it is refused",
    );
  }
  if (type === "set" && setsVariable(statement, characterSetVariable))
    return refusal(
      "denied",
      "statement.refused",
      "the connection's character set is fixed at login: a multi-byte character set whose bytes can stand for a quote or backslash would make the server read the statement otherwise than the export's parser",
    );
  if (type === "set" && setsVariable(statement, sqlModeVariable))
    return refusal(
      "denied",
      "statement.refused",
      "sql_mode is fixed for the export's sessions but for modes that leave how statements are read alone (STRICT_TRANS_TABLES...): NO_BACKSLASH_ESCAPES or ANSI_QUOTES would make the server read strings and names otherwise than the export's parser",
    );
  const shownExpression = type === "set" ? shownVariableSetToExpression(statement) : undefined;
  if (shownExpression !== undefined)
    return refusal(
      "denied",
      "statement.refused",
      `${shownExpression} takes only a literal through the export: schema reads show it (SELECT @@${shownExpression}), so it may not hold a value computed from a table`,
    );
  if (type === "set")
    return policy.allowWrites
      ? { kind: "other", write: true, predicates }
      : refusal(
          "readOnly",
          "statement.refused",
          "SET is refused by a read-only export (session variables can turn read-only off); allowWrites: true allows it",
        );
  if (!policy.allowWrites)
    return refusal("readOnly", "statement.refused", `${type.toUpperCase()} is refused: the export is read-only (allowWrites: true allows writes)`);
  if (type === "create" && /procedure|function|trigger|event/i.test(String(statement.keyword ?? "")))
    return refusal("denied", "statement.refused", "stored programs are refused by the export");
  return { kind: "other", write: true, predicates };
}

/** SET of a variable whose name (or a member of it: `@@session.sql_mode`) matches `name`. */
function setsVariable(statement: Record<string, unknown>, name: RegExp): boolean {
  let found = false;
  walk(statement.expr, (value) => {
    if (value.type !== "var") return;
    const names = [value.name, ...(Array.isArray(value.members) ? value.members : [])];
    if (names.some((each) => typeof each === "string" && name.test(each))) found = true;
  });
  return found;
}

/** Variables that choose how the server reads statement bytes (character_set_client, collation_connection...). */
const characterSetVariable = /^(character_set|collation|names|charset)/i;
/** sql_mode (session or global): NO_BACKSLASH_ESCAPES and ANSI_QUOTES change how the server reads quotes and backslashes. */
const sqlModeVariable = /sql_mode/i;

function analyseTransaction(statement: Record<string, unknown>, policy: StatementPolicy): StatementAnalysis {
  const expr = statement.expr as { modes?: Array<{ value?: string }> | null } | undefined;
  const readWrite = (expr?.modes ?? []).some((mode) => /write/i.test(String(mode.value ?? "")));
  if (readWrite && !policy.allowWrites)
    return refusal("readOnly", "statement.refused", "START TRANSACTION READ WRITE is refused: the export is read-only (allowWrites: true allows writes)");
  return { kind: "other", write: false, predicates: [] };
}

function analyseSelect(select: Record<string, unknown>, policy: StatementPolicy): StatementAnalysis {
  if (containsSelectInto(select))
    return refusal(
      "denied",
      "statement.refused",
      "SELECT ... INTO (OUTFILE, DUMPFILE, variables) is refused by the export: the values would leave without being decided",
    );
  if (select.locking_read && !policy.allowWrites)
    return refusal("readOnly", "statement.refused", "SELECT ... FOR UPDATE is refused: the export is read-only (allowWrites: true allows it)");
  return { kind: "select", shape: selectShape(select), predicates: predicateReferences(select), text: "" };
}

/** INTO anywhere in the statement (a subquery's too). */
function containsSelectInto(node: unknown): boolean {
  let found = false;
  walk(node, (value) => {
    const into = (value as { into?: { position?: unknown } }).into;
    if ((value as { type?: unknown }).type === "select" && into && into.position !== null && into.position !== undefined) found = true;
  });
  return found;
}

/** Visits every object of an AST. */
function walk(node: unknown, visit: (value: Record<string, unknown>) => void): void {
  if (Array.isArray(node)) {
    for (const item of node) walk(item, visit);
    return;
  }
  if (node === null || typeof node !== "object") return;
  visit(node as Record<string, unknown>);
  for (const value of Object.values(node)) walk(value, visit);
}

/** Aggregate functions the parser reads as plain function calls (COUNT, SUM, GROUP_CONCAT... it reads as `aggr_func`). */
const aggregateFunctions = new Set([
  "JSON_ARRAYAGG",
  "JSON_OBJECTAGG",
  "BIT_AND",
  "BIT_OR",
  "BIT_XOR",
  "STD",
  "STDDEV",
  "STDDEV_POP",
  "STDDEV_SAMP",
  "VARIANCE",
  "VAR_POP",
  "VAR_SAMP",
  "MEDIAN",
  "PERCENTILE_CONT",
  "PERCENTILE_DISC",
]);

/** Whether an aggregate appears in these parts (a subquery's aggregate may aggregate the outer query's columns). */
function hasAggregate(parts: unknown[]): boolean {
  let found = false;
  walk(parts, (value) => {
    if (value.type === "aggr_func") found = true;
    if (value.type === "function" && aggregateFunctions.has(functionName(value).toUpperCase())) found = true;
  });
  return found;
}

/** A function call's name as the parser gives it ({name: [{value}]} or a string). */
function functionName(call: Record<string, unknown>): string {
  const name = call.name as { name?: Array<{ value?: unknown }> } | string | undefined;
  if (typeof name === "string") return name;
  return (name?.name ?? []).map((part) => String(part.value ?? "")).join(".");
}

function nameOf(column: unknown): string | undefined {
  if (typeof column === "string") return column;
  const expr = (column as { expr?: { value?: unknown } } | null)?.expr;
  return typeof expr?.value === "string" ? expr.value : undefined;
}

/** A CTE visible to a SELECT: its body, the CTEs its body sees, its column list. */
export interface CteDefinition {
  name: string;
  /** The WITH item (its column list is extended when a column is carried up through it). */
  node: Record<string, unknown>;
  body: Record<string, unknown> | undefined;
  env: CteEnvironment;
  columnList: string[] | null;
  /** WITH RECURSIVE: its rows are not traced (a recursive CTE's rows come from a UNION of itself). */
  recursive: boolean;
}

/** CTEs by exact name (the server compares them as table names: case-sensitively). */
export type CteEnvironment = ReadonlyMap<string, CteDefinition>;

/** The environment inside a SELECT: the outer one plus its own WITH list (each CTE sees those before it). */
export function cteEnvironment(select: Record<string, unknown>, outer: CteEnvironment): CteEnvironment {
  const list = (select.with as Array<Record<string, unknown>> | null) ?? [];
  if (list.length === 0) return outer;
  const recursive = list.some((cte) => Boolean(cte.recursive));
  const env = new Map(outer);
  for (const cte of list) {
    const name = nameOf({ expr: cte.name });
    if (name === undefined) continue;
    const body = (cte.stmt as { ast?: Record<string, unknown> } | undefined)?.ast;
    const columnList = Array.isArray(cte.columns) ? cte.columns.map((c: { column?: unknown }) => nameOf(c.column) ?? "") : null;
    env.set(name, { name, node: cte, body, env: new Map(env), columnList, recursive });
  }
  return env;
}

/** Nesting deeper than this is not traced (its values are not attributed). */
const maxDepth = 16;

/** One SELECT's FROM relations and select list. */
interface Scope {
  relations: Relation[];
  entries: Array<{ entry: OutputEntry; as: string | undefined }>;
  /** False for rows that are not one row of each relation (set operations, grouping, aggregates, USING joins). */
  attributable: boolean;
}

/** An alias as the parser gives it (a string, or a backquoted name's node). */
export function aliasOf(as: unknown): string | undefined {
  return typeof as === "string" ? as : nameOf({ expr: as });
}

/** A derived relation that passes nothing through. */
function opaque(alias: string, cte: string | null = null): Relation {
  return { kind: "derived", alias, columns: new Map(), star: null, relations: [], carry: "none", cteColumnList: false, cte, namesKnown: false };
}

function scopeOf(select: Record<string, unknown>, outerEnv: CteEnvironment, prefix: readonly string[], depth: number, budget: TraceBudget): Scope {
  const env = cteEnvironment(select, outerEnv);
  let attributable =
    !select._next && !select.set_op && !select.groupby && !select.having && !hasAggregate([select.columns, select.orderby, select.having, select.window]);
  const relations: Relation[] = [];
  const seen = new Set<string>();
  const repeated = new Set<string>();
  for (const item of (select.from as Array<Record<string, unknown>> | null) ?? []) {
    if (item.using) attributable = false;
    if (item.type === "dual") continue;
    const alias = aliasOf(item.as);
    let relation: Relation;
    if (item.expr || typeof item.table !== "string") {
      if (alias === undefined) continue;
      const body = (item.expr as { ast?: Record<string, unknown> } | undefined)?.ast;
      relation = derivedRelation(alias, body, env, null, [...prefix, alias], depth, budget);
    } else {
      const table = item.table;
      const name = alias ?? table;
      const unqualified = item.db === null || item.db === undefined;
      const cte = unqualified ? env.get(table) : undefined;
      if (cte) relation = derivedRelation(name, cte.recursive ? undefined : cte.body, cte.env, cte.columnList, [...prefix, name], depth, budget, cte.name);
      // A name that differs from a CTE's only in case: which one the server reads is not worth guessing.
      else if (unqualified && [...env.keys()].some((k) => k.toLowerCase() === table.toLowerCase())) relation = opaque(name);
      else relation = { kind: "base", alias: name, origin: { path: [...prefix, name], db: unqualified ? null : String(item.db), table } };
    }
    // A repeated name would make the server refuse the statement; attributing neither is the safe reading.
    if (seen.has(relation.alias)) repeated.add(relation.alias);
    seen.add(relation.alias);
    relations.push(relation);
  }
  const entries = selectEntries(select);
  const kept = relations.map((r) => (repeated.has(r.alias) ? opaque(r.alias, r.kind === "derived" ? r.cte : null) : r));
  const loneStar = entries.length === 1 && entries[0]!.entry.kind === "star" && kept.length === 1 && starCovers(entries[0]!.entry, kept[0]!.alias);
  for (const relation of kept) {
    if (relation.kind === "base") continue;
    const covered = entries.some(({ entry }) => entry.kind === "star" && starCovers(entry, relation.alias));
    relation.carry = loneStar ? "star" : covered ? "none" : relation.relations.length > 0 ? "append" : "none";
  }
  return { relations: kept, entries, attributable };
}

/**
 * The relations of one SELECT's FROM list (derived tables and CTEs traced as for attribution) and
 * the CTEs its parts see (strict-predicates.ts resolves predicate columns with them).
 */
export function scopeRelations(
  select: Record<string, unknown>,
  outerEnv: CteEnvironment,
  budget: TraceBudget,
): { relations: readonly Relation[]; env: CteEnvironment } {
  return { relations: scopeOf(select, outerEnv, [], 0, budget).relations, env: cteEnvironment(select, outerEnv) };
}

/**
 * How many derived tables and CTE readings one walk traces at most. A chain of CTEs each reading
 * the one before twice doubles the work per CTE (18 of them, 1.3 kB of text, took seconds of the
 * node's loop): past the budget, relations are untraced (their values NULL, strict refuses
 * predicates on them).
 */
export interface TraceBudget {
  left: number;
}
export const traceBudget = (): TraceBudget => ({ left: 512 });

/**
 * A derived table's or CTE's output columns traced through its body (`body`: its SELECT;
 * undefined: not traced). A body whose rows are not one row of each of its relations (UNION,
 * grouping, recursion) or that nests too deep passes nothing through.
 */
function derivedRelation(
  alias: string,
  body: Record<string, unknown> | undefined,
  env: CteEnvironment,
  columnList: string[] | null,
  path: readonly string[],
  depth: number,
  budget: TraceBudget,
  cte: string | null = null,
): Relation {
  if (body?.type !== "select" || depth >= maxDepth || budget.left-- <= 0) return opaque(alias, cte);
  const inner = scopeOf(body, env, path, depth + 1, budget);
  const stars = inner.entries.filter(({ entry }) => entry.kind === "star");
  if (!inner.attributable || (columnList !== null && (stars.length > 0 || columnList.length !== inner.entries.length))) return opaque(alias, cte);
  const columns = new Map<string, Source | null>();
  let unnamed = false;
  inner.entries.forEach(({ entry, as }, i) => {
    if (entry.kind === "star") return;
    const name = columnList ? columnList[i] : (as ?? (entry.kind === "column" ? entry.column : undefined));
    if (name === undefined) {
      unnamed = true;
      return;
    }
    const source = entry.kind === "column" ? (resolveReference(inner.relations, entry.table, entry.column) ?? null) : null;
    const key = name.toLowerCase();
    columns.set(key, columns.has(key) ? null : source);
  });
  // A lone `*` over one relation names the other outputs, unless an unnamed expression could take any name.
  let star: Relation | null = null;
  if (stars.length === 1 && !unnamed) {
    const covered = inner.relations.filter((r) => starCovers(stars[0]!.entry as { table: string | null }, r.alias));
    if (covered.length === 1) star = covered[0]!;
  }
  const namesKnown = !unnamed && (stars.length === 0 || star !== null);
  return { kind: "derived", alias, columns, star, relations: inner.relations, carry: "none", cteColumnList: columnList !== null, cte, namesKnown };
}

/** The select list as plain columns, stars and expressions, with their aliases. */
function selectEntries(select: Record<string, unknown>): Scope["entries"] {
  const entries: Scope["entries"] = [];
  const columns = select.columns;
  for (const item of Array.isArray(columns)
    ? (columns as Array<{ expr?: Record<string, unknown>; as?: unknown }>)
    : [{ expr: { type: "column_ref", table: null, column: "*" } }]) {
    const expr = item.expr;
    const as = aliasOf(item.as);
    const column = nameOf(expr?.column);
    if (expr?.type !== "column_ref" || column === undefined) {
      entries.push({ entry: { kind: "expression" }, as });
      continue;
    }
    // A backquoted qualifier (`u`.`id`) comes as {type: "backticks_quote_string", value}.
    const table = typeof expr.table === "string" ? expr.table : (nameOf({ expr: expr.table }) ?? null);
    entries.push({ entry: column === "*" ? { kind: "star", table } : { kind: "column", table, column }, as });
  }
  return entries;
}

/**
 * The outer SELECT's relations and select list: base-table instances by alias, and derived
 * tables and CTEs (never instances: a CTE or derived table named `users` is not the table) with
 * what each passes through (derived-relations.ts).
 */
function selectShape(select: Record<string, unknown>): SelectShape {
  const scope = scopeOf(select, new Map(), [], 0, traceBudget());
  const instances = new Map<string, Instance>();
  const derived = new Map<string, DerivedRelation & { kind: "derived" }>();
  for (const relation of scope.relations) {
    if (relation.kind === "base") instances.set(relation.alias, { alias: relation.alias, db: relation.origin.db, table: relation.origin.table });
    else derived.set(relation.alias, relation);
  }
  return {
    instances,
    derived,
    relations: scope.relations,
    entries: scope.entries.map((e) => e.entry),
    attributable: scope.attributable,
    distinct: Boolean(select.distinct),
    hiddenCount: 0,
  };
}

/** Parses one statement (undefined when it does not parse as exactly one). */
export function parseOne(text: string): Record<string, unknown> | undefined {
  try {
    const ast = parser.astify(text, parseOptions);
    const statements = (Array.isArray(ast) ? ast : [ast]) as unknown as Array<Record<string, unknown>>;
    return statements.length === 1 ? statements[0] : undefined;
  } catch {
    return undefined;
  }
}

/**
 * A statement that passes whole (a schema read) or sets the session, as the backend runs it: the
 * parser's printing (no comments, every name and literal in its spelling), when that printing parses
 * back to the very tree the parser read; undefined when it does not. What the server runs is then
 * what the parser read, whatever the two read differently in the client's text.
 */
function runAsPrinted(statement: Record<string, unknown>): string | undefined {
  const printed = faithfulPrinting(statement);
  return printed === undefined || lexicalRefusal(printed) ? undefined : printed;
}

/** The parser's printing of a statement when it parses back to the very tree it was printed from; undefined otherwise. */
function faithfulPrinting(statement: Record<string, unknown>): string | undefined {
  const tree = JSON.stringify(statement);
  const printed = printStatement(structuredClone(statement));
  return printed !== undefined && JSON.stringify(parseOne(printed)) === tree ? printed : undefined;
}

/** The parser's own printing of a tree (undefined when it cannot print it). */
export function printStatement(ast: Record<string, unknown>): string | undefined {
  try {
    return parser.sqlify(ast as unknown as Parameters<Parser["sqlify"]>[0], parseOptions);
  } catch {
    return undefined;
  }
}

/**
 * The statements of a multi-statement text, each printed again by the parser on its own: the
 * parser's split, never the server's, decides where each ends, and the backend runs each printed
 * statement as its own COM_QUERY. Undefined when the text does not parse, a statement does not
 * print, or a statement other than a SELECT prints as another one (its printing parses to
 * another tree: `SHOW DATABASES LIKE 'a%'` prints without its filter); a SELECT's printing is
 * checked when it is analysed (printedSelect).
 */
export function splitStatements(text: string): string[] | undefined {
  try {
    const ast = parser.astify(text, parseOptions);
    const statements = (Array.isArray(ast) ? ast : [ast]) as unknown as Array<Record<string, unknown>>;
    const printed: string[] = [];
    for (const statement of statements) {
      const printing = statement.type === "select" ? printStatement(statement) : faithfulPrinting(statement);
      if (printing === undefined) return undefined;
      printed.push(printing);
    }
    return printed;
  } catch {
    return undefined;
  }
}

/** Analyses per text and policy, most recent kept (a prepared workload parses each text once). */
export class AnalysisCache {
  private readonly entries = new Map<string, StatementAnalysis>();
  private readonly rewrites = new Map<string, RewrittenSelect | undefined>();

  constructor(private readonly limit = 2048) {}

  /** The analysis and whether the text was parsed now (not found in the cache). */
  get(text: string, policy: StatementPolicy): { analysis: StatementAnalysis; parsed: boolean } {
    const key = `${policy.allowWrites ? "w" : "r"}${text}`;
    const cached = this.entries.get(key);
    if (cached) return { analysis: cached, parsed: false };
    const analysis = analyseStatement(text, policy);
    this.remember(this.entries, key, analysis);
    return { analysis, parsed: true };
  }

  /** The statement with these hidden user columns (hidden-user-columns.ts), printed and analysed once per text and column list. */
  rewritten(text: string, hidden: readonly HiddenColumn[], policy: StatementPolicy): RewrittenSelect | undefined {
    const key = `${policy.allowWrites ? "w" : "r"}${JSON.stringify(hidden)}${text}`;
    if (this.rewrites.has(key)) return this.rewrites.get(key);
    const rewritten = withHiddenColumns(text, hidden, policy);
    this.remember(this.rewrites, key, rewritten);
    return rewritten;
  }

  private remember<T>(map: Map<string, T>, key: string, value: T): void {
    if (map.size >= this.limit) map.delete(map.keys().next().value!);
    map.set(key, value);
  }
}
