import type * as LibpgQuery from "libpg-query";

/**
 * PostgreSQL's own parser (libpg-query: the server's grammar compiled to WebAssembly), so the
 * export reads a statement exactly as the server will. Its synchronous API needs the module
 * loaded once per process before the first statement: `loadSqlParser()` before a PostgreSQL
 * export's port opens (and in each proxy worker). Required there and not at import: requiring
 * libpg-query starts its WebAssembly, about 17 MiB of the node's resident memory, which a node
 * serving no PostgreSQL export would hold for nothing (bench/RESULTS.md, branch objmem3).
 */
let loaded: Promise<void> | undefined;
let libpgQuery: typeof LibpgQuery | undefined;

export function loadSqlParser(): Promise<void> {
  loaded ??= (async () => {
    const module = require("libpg-query") as typeof LibpgQuery;
    await module.loadModule();
    libpgQuery = module;
  })();
  return loaded;
}

/** libpg-query's synchronous functions (parse, normalize, scan), once `loadSqlParser()` resolved. */
export function postgresParser(): typeof LibpgQuery {
  if (!libpgQuery) throw new Error("the SQL parser is not loaded (loadSqlParser() first)");
  return libpgQuery;
}

/** A plain JSON parse tree node: `{ NodeType: { ...fields } }`. */
export type Node = Record<string, unknown>;

export interface ParsedStatement {
  /** The statement's node, `{ SelectStmt: {...} }` and so on. */
  node: Node;
  /** Byte range of the statement in the UTF-8 text. */
  start: number;
  end: number;
}

export class SqlSyntaxError extends Error {
  constructor(
    message: string,
    /** 1-based character position in the text, as PostgreSQL reports it; 0 when unknown. */
    readonly position: number,
  ) {
    super(message);
  }
}

/** The statements of `sql`; throws SqlSyntaxError where PostgreSQL would answer 42601. */
export function parseStatements(sql: string): ParsedStatement[] {
  const parser = postgresParser();
  let result: LibpgQuery.ParseResult;
  try {
    result = parser.parseSync(sql);
  } catch (error) {
    const details = (error as { sqlDetails?: { message?: string; cursorPosition?: number } }).sqlDetails;
    // libpg-query counts from 0; PostgreSQL reports positions from 1.
    throw new SqlSyntaxError(details?.message ?? String((error as Error).message), details?.cursorPosition === undefined ? 0 : details.cursorPosition + 1);
  }
  const byteLength = Buffer.byteLength(sql);
  return (result.stmts ?? []).map((raw) => {
    const start = raw.stmt_location ?? 0;
    return { node: raw.stmt as unknown as Node, start, end: raw.stmt_len ? start + raw.stmt_len : byteLength };
  });
}

/** Parses `sql` into plain trees without locations, for comparing two texts' meaning. */
export function parseWithoutLocations(sql: string): unknown[] {
  return parseStatements(sql).map((statement) => stripLocations(statement.node));
}

/** Fields that say where in the text a node was (`location`, `list_start`, `rexpr_list_end`...), not what it means. */
const positionField = /(^|_)(location|list_start|list_end)$/;

/** A copy of a tree without the fields that say where its nodes were in the text. */
export function stripLocations(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(stripLocations);
  if (value === null || typeof value !== "object") return value;
  const out: Record<string, unknown> = {};
  for (const [key, child] of Object.entries(value)) if (!positionField.test(key)) out[key] = stripLocations(child);
  return out;
}

/** The only key of a node (its type) and its fields. */
export function nodeType(node: unknown): [string, Node] | undefined {
  if (node === null || typeof node !== "object" || Array.isArray(node)) return undefined;
  const keys = Object.keys(node);
  if (keys.length !== 1) return undefined;
  return [keys[0]!, (node as Node)[keys[0]!] as Node];
}

/** The string value of a `{String: {sval}}` node. */
export function stringValue(node: unknown): string | undefined {
  const typed = nodeType(node);
  return typed?.[0] === "String" ? ((typed[1].sval as string | undefined) ?? "") : undefined;
}

/**
 * Calls `visit` for every node below `value` (type and fields), depth first. A node is a key
 * that starts with a capital letter (`SelectStmt`, `String`) holding an object; field names
 * start with a small letter. Runs once or twice per statement parsed: no allocation per node.
 */
export function walkNodes(value: unknown, visit: (type: string, fields: Node) => void): void {
  if (value === null || typeof value !== "object") return;
  if (Array.isArray(value)) {
    for (const child of value) walkNodes(child, visit);
    return;
  }
  const object = value as Node;
  for (const key in object) {
    const child = object[key];
    if (child === null || typeof child !== "object") continue;
    const first = key.charCodeAt(0);
    if (first >= 65 && first <= 90 && !Array.isArray(child)) visit(key, child as Node);
    walkNodes(child, visit);
  }
}
