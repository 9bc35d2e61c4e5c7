import { Parser } from "node-sql-parser/build/mariadb";
import { withHiddenColumns, type HiddenColumn, type RewrittenSelect } from "./hidden-user-columns";
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
  entries: readonly OutputEntry[];
  /** False for results whose values cannot stand for one row of each instance (set operations, grouping, aggregates, USING joins): nothing is attributed. */
  attributable: boolean;
  /** SELECT DISTINCT (an added column would change which rows are distinct). */
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
  /** A SELECT: its rows are decided with the shape; `predicates` for strict exports. */
  | { kind: "select"; shape: SelectShape; predicates: readonly PredicateReference[] }
  /** SHOW WARNINGS / SHOW ERRORS: level and code pass, texts are replaced. */
  | { kind: "diagnostics" }
  /** USE: the session's database becomes `db` once the server says OK. */
  | { kind: "use"; db: string }
  /** Anything else allowed: its rows (SHOW, DESCRIBE...) have no attributable instance and are dropped. */
  | { kind: "other"; write: boolean; predicates: readonly PredicateReference[] };

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
  if (executableComment.test(text))
    return refusal(
      "parse",
      "statement.refused",
      "executable comments (/*! */, /*M! */) are refused by the export: the export's parser would not see what they run",
    );
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
  const type = String(statement.type ?? "");
  const never = neverTypes.get(type);
  if (never) return refusal("denied", "statement.refused", `${never}: refused by the export`);
  if (type === "select") return analyseSelect(statement, policy);
  if (type === "transaction") return analyseTransaction(statement, policy);
  if (type === "use" && typeof statement.db === "string") return { kind: "use", db: statement.db };
  const predicates = predicateReferences(statement);
  if (readTypes.has(type)) return { kind: "other", write: false, predicates };
  if (type === "set" && setsCharacterSet(statement))
    return refusal(
      "denied",
      "statement.refused",
      "the connection's character set is fixed at login: a multi-byte character set whose bytes can stand for a quote or backslash would make the server read the statement otherwise than the export's parser",
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

/** SET of a variable that chooses how the server reads statement bytes (character_set_client, collation_connection...). */
function setsCharacterSet(statement: Record<string, unknown>): boolean {
  let found = false;
  walk(statement.expr, (value) => {
    if (value.type !== "var") return;
    const names = [value.name, ...(Array.isArray(value.members) ? value.members : [])];
    if (names.some((name) => typeof name === "string" && /^(character_set|collation|names|charset)/i.test(name))) found = true;
  });
  return found;
}

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
  return { kind: "select", shape: selectShape(select), predicates: predicateReferences(select) };
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

/** Whether an aggregate appears in these parts (a subquery's aggregate may aggregate the outer query's columns). */
function hasAggregate(parts: unknown[]): boolean {
  let found = false;
  walk(parts, (value) => {
    if (value.type === "aggr_func") found = true;
  });
  return found;
}

function nameOf(column: unknown): string | undefined {
  if (typeof column === "string") return column;
  const expr = (column as { expr?: { value?: unknown } } | null)?.expr;
  return typeof expr?.value === "string" ? expr.value : undefined;
}

/**
 * The outer SELECT's instances and select list. Derived tables and CTEs are not instances: the
 * server reports their columns as theirs, not as the base tables' behind them, so their values
 * are never attributed (NULL).
 */
function selectShape(select: Record<string, unknown>): SelectShape {
  const instances = new Map<string, Instance>();
  const derived = new Set<string>();
  const cteNames = new Set<string>();
  for (const cte of (select.with as Array<{ name?: { value?: string } }> | null) ?? []) if (cte.name?.value) cteNames.add(cte.name.value.toLowerCase());
  let attributable =
    !select._next && !select.set_op && !select.groupby && !select.having && !hasAggregate([select.columns, select.orderby, select.having, select.window]);
  for (const item of (select.from as Array<Record<string, unknown>> | null) ?? []) {
    if (item.using) attributable = false;
    if (item.type === "dual") continue;
    const alias = typeof item.as === "string" ? item.as : undefined;
    if (item.expr || typeof item.table !== "string") {
      if (alias) derived.add(alias);
      continue;
    }
    const name = alias ?? item.table;
    if ((item.db === null || item.db === undefined) && cteNames.has(item.table.toLowerCase())) {
      derived.add(name);
      continue;
    }
    // A repeated name would make the server refuse the statement; attributing neither is the safe reading.
    if (instances.has(name) || derived.has(name)) {
      instances.delete(name);
      derived.add(name);
      continue;
    }
    instances.set(name, { alias: name, db: typeof item.db === "string" ? item.db : null, table: item.table });
  }
  const entries: OutputEntry[] = [];
  const columns = select.columns;
  for (const item of Array.isArray(columns)
    ? (columns as Array<{ expr?: Record<string, unknown> }>)
    : [{ expr: { type: "column_ref", table: null, column: "*" } }]) {
    const expr = item.expr;
    const column = nameOf(expr?.column);
    if (expr?.type !== "column_ref" || column === undefined) {
      entries.push({ kind: "expression" });
      continue;
    }
    // A backquoted qualifier (`u`.`id`) comes as {type: "backticks_quote_string", value}.
    const table = typeof expr.table === "string" ? expr.table : (nameOf({ expr: expr.table }) ?? null);
    entries.push(column === "*" ? { kind: "star", table } : { kind: "column", table, column });
  }
  return { instances, entries, attributable, distinct: Boolean(select.distinct), hiddenCount: 0 };
}

/**
 * The one SELECT of `text` printed again by the parser with these columns appended to its outer
 * select list; undefined when it does not parse or print. The caller analyses the printed text
 * again: that text, not the client's, is what the backend runs.
 */
export function printWithColumns(text: string, columns: ReadonlyArray<{ table: string; column: string; as: string }>): string | undefined {
  try {
    const ast = parser.astify(text, parseOptions);
    const select = (Array.isArray(ast) ? ast : [ast]) as Array<{ type?: string; columns?: unknown }>;
    if (select.length !== 1 || select[0]!.type !== "select" || !Array.isArray(select[0]!.columns)) return undefined;
    for (const c of columns) select[0]!.columns.push({ expr: { type: "column_ref", table: c.table, column: c.column }, as: c.as });
    return parser.sqlify(select[0] as Parameters<Parser["sqlify"]>[0], parseOptions);
  } catch {
    return undefined;
  }
}

/**
 * The statements of a multi-statement text, each printed again by the parser on its own: the
 * parser's split, never the server's, decides where each ends, and the backend runs each printed
 * statement as its own COM_QUERY. Undefined when the text does not parse or a statement does not
 * print.
 */
export function splitStatements(text: string): string[] | undefined {
  try {
    const ast = parser.astify(text, parseOptions);
    const statements = (Array.isArray(ast) ? ast : [ast]) as Array<Parameters<Parser["sqlify"]>[0]>;
    return statements.map((statement) => parser.sqlify(statement, parseOptions));
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
