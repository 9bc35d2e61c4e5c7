import { createHash } from "node:crypto";
import { deparseSync } from "pgsql-deparser";
import { readsOnlyCatalogs, type RelationHook } from "./catalog-reads";
import type { RelationView, SchemaView } from "./schema-view";
import { nodeType, parseStatements, postgresParser, stripLocations, type Node } from "./sql-parser";

/**
 * Policy pushdown (docs/postgres-export.md, "Pushdown"): each reference to a mapped table becomes
 * a derived table that keeps only the rows whose user may be used, and empties the columns whose
 * category that user's verdict does not allow. The verdicts are in the backing database
 * (`warden.verdicts_<export>`, kept by verdict-table.ts), so every operator above (aggregates,
 * joins, predicates, window functions) sees allowed data only, and the rows pass as they come.
 */
export interface PushdownTarget {
  /** The verdict table, schema-qualified and quoted. */
  table: string;
  /** The export's key in `warden.verdict_versions`. */
  exportKey: string;
  /** A 20-digit literal in the rewritten text, replaced by the version a statement needs when it is sent. */
  versionMarker: string;
}

/** The schema the export keeps its verdicts in: clients may not name it. */
export const verdictSchema = "warden";

/**
 * The verdict table's column that says whether a user's verdict allows a category: one boolean
 * column per category the mapping names (a boolean per row costs a fraction of an array
 * containment test per value). Named from a hash: category ids are any strings.
 */
export function categoryColumn(category: string): string {
  return `c_${createHash("sha256").update(category).digest("hex").slice(0, 16)}`;
}

export type PushdownResult = { kind: "rewritten"; node: Node } | { kind: "catalog" } | { kind: "refused"; message: string };

/**
 * Rewrites one SELECT (a `{SelectStmt}` node, changed in place) for pushdown, says it reads only
 * the system catalogs (nothing to rewrite: it passes as it is), or says why it cannot be: it may read the mapped tables (each resolved to exactly one relation of the
 * mapping) and the system catalogs, with built-in functions only (catalog-reads.ts's rules);
 * anything else (an unmapped table, a view, the database's own functions) could carry values
 * past the derived tables.
 */
export function pushdownSelect(statement: Node, schema: SchemaView, target: PushdownTarget): PushdownResult {
  const select = nodeType(statement);
  if (select?.[0] !== "SelectStmt") return { kind: "refused", message: "not a SELECT" };
  const found: Array<{ wrapper: Node; relation: RelationView }> = [];
  let problem: string | undefined;
  const onRelation: RelationHook = (rangeVar, wrapper) => {
    const name = String(rangeVar.relname);
    const schemaName = rangeVar.schemaname as string | undefined;
    if (schemaName === verdictSchema) {
      problem = `the schema ${verdictSchema} holds the export's verdicts and cannot be read through it`;
      return false;
    }
    const candidates = schema.relations(name, schemaName).filter((relation) => relation.mapped);
    if (candidates.length !== 1 || !wrapper || rangeVar.catalogname !== undefined) {
      problem ??=
        candidates.length > 1
          ? `${name} names more than one mapped table: qualify it with its schema`
          : `${schemaName ? `${schemaName}.` : ""}${name} is not a table of the export's mapping`;
      return false;
    }
    found.push({ wrapper, relation: candidates[0]! });
    return true;
  };
  if (!readsOnlyCatalogs(select[1], schema.shadows, onRelation)) {
    return {
      kind: "refused",
      message: `with pushdown, a SELECT may read only the export's mapped tables and the system catalogs, with built-in functions${problem ? ` (${problem})` : ""}`,
    };
  }
  // The walk accepted no relation of the hook's: every name was the catalogs' (catalog-reads.ts).
  if (found.length === 0) return { kind: "catalog" };
  for (const { wrapper, relation } of found) {
    const rangeVar = wrapper.RangeVar as Node;
    delete wrapper.RangeVar;
    wrapper.RangeSubselect = { subquery: derivedTable(relation, rangeVar.inh !== false, target), alias: rangeVar.alias ?? { aliasname: rangeVar.relname } };
  }
  return { kind: "rewritten", node: statement };
}

/**
 * The deparsed text of a rewritten statement, read back with PostgreSQL's parser: undefined
 * unless it parses to exactly the rewritten tree (a deparser slip must not change the meaning).
 */
export function deparseChecked(node: Node): string | undefined {
  let text: string;
  try {
    text = deparseSync(node as never);
  } catch {
    return undefined;
  }
  try {
    const parsed = parseStatements(text);
    if (parsed.length !== 1) return undefined;
    return JSON.stringify(stripLocations(parsed[0]!.node)) === JSON.stringify(stripLocations(node)) ? text : undefined;
  } catch {
    return undefined;
  }
}

const ident = (name: string) => `"${name.replaceAll('"', '""')}"`;
const literal = (text: string) => `'${text.replaceAll("'", "''")}'`;

/**
 * The derived table that stands for one mapped relation: its columns in order, each kept only
 * when the row's verdict allows the column's category (unmapped columns and resource-context
 * columns without a category are always NULL, of their own type), the rows of allowed users
 * only (the verdict table holds nothing else), and the version guard. Every operator is
 * qualified: a client's search_path cannot change what it means.
 */
function derivedTable(relation: RelationView, inherited: boolean, target: PushdownTarget): Node {
  const columns = relation.columns.map((column, i) => {
    const category = relation.categories?.[i];
    const keep = category === undefined ? "false" : `v.${categoryColumn(category)}`;
    return `CASE WHEN ${keep} THEN t.${ident(column)} END AS ${ident(column)}`;
  });
  // A user id as the wire's text format writes it (the type's output function, as row by row); empty means none.
  // Text columns compare as they are (a hash join on the column); other types through format(), not a cast: the
  // deparser writes `::pg_catalog.text` as `::text`, which a search_path could redirect. No user id is empty, so
  // with one resource-context column an empty or NULL value simply joins no verdict.
  const textOf = (column: string) => (relation.textColumns?.has(column) ? `t.${ident(column)}` : `pg_catalog.format('%s', t.${ident(column)})`);
  const subjects = relation.subjectColumns.map(
    (column) => `CASE WHEN t.${ident(column)} IS NULL OR ${textOf(column)} OPERATOR(pg_catalog.=) '' THEN NULL ELSE ${textOf(column)} END`,
  );
  const userOf = subjects.length === 0 ? "NULL" : subjects.length === 1 ? textOf(relation.subjectColumns[0]!) : `COALESCE(${subjects.join(", ")})`;
  const sql =
    `SELECT ${columns.join(", ")} FROM ${inherited ? "" : "ONLY "}${ident(relation.schema)}.${ident(relation.name)} AS t ` +
    `JOIN ${target.table} AS v ON v.user_id OPERATOR(pg_catalog.=) ${userOf} ` +
    `WHERE ${verdictSchema}.require_verdicts(${literal(target.exportKey)}, ${target.versionMarker})`;
  const parsed = postgresParser().parseSync(sql);
  return parsed.stmts![0]!.stmt as unknown as Node;
}
