import type { MappingView } from "../../../exports/row-decider";
import type { RelationCheck } from "../result-plan";
import { cteReads, factOf, originKey, originsOf, resolutionFacts, resolveColumn, resolveReference, type Origin, type Relation } from "./derived-relations";
import {
  aliasOf,
  analyseStatement,
  cteEnvironment,
  parseOne,
  printStatement,
  type CteEnvironment,
  type OutputEntry,
  type SelectShape,
  type StatementPolicy,
} from "./statement-analysis";

/** The names the export gives the columns it adds (checked in the result: the last columns must carry them, in order). */
export const hiddenColumnPrefix = "warden_user_";

/** A resource-context column of one base-table instance that the statement does not return: added, carried up, decided on, stripped. */
export interface HiddenColumn {
  /** The aliases from the outer SELECT's FROM list down to the instance (one alias: an instance of the outer SELECT). */
  path: readonly string[];
  column: string;
}

/** A SELECT rewritten with hidden user columns: the text the backend runs and its own analysis. */
export interface RewrittenSelect {
  text: string;
  shape: SelectShape;
}

/** The relation at `path` (aliases from the outer FROM list down). */
function relationAt(relations: readonly Relation[], path: readonly string[]): Relation | undefined {
  const relation = relations.find((r) => r.alias === path[0]);
  if (!relation || path.length === 1) return relation;
  return relation.kind === "derived" ? relationAt(relation.relations, path.slice(1)) : undefined;
}

/**
 * Whether a column of the instance at `path` can be carried up to the outer select list: every
 * derived relation on the way appends it or passes it by a lone `*`, and every CTE on the way is
 * read once (a column added to a CTE read twice would also show through the other reading's `*`).
 */
function carriable(relations: readonly Relation[], path: readonly string[], reads: ReadonlyMap<string, number>): boolean {
  const relation = relations.find((r) => r.alias === path[0]);
  if (!relation) return false;
  if (relation.kind === "base") return path.length === 1;
  if (relation.cte !== null && reads.get(relation.cte) !== 1) return false;
  return relation.carry !== "none" && carriable(relation.relations, path.slice(1), reads);
}

/**
 * The resource-context columns the mapping names for the statement's base-table instances
 * (each only for the relation it names, as the result plan checks it), those of the outer
 * SELECT and those inside its derived tables and CTEs, that the select list does not plainly
 * return: an instance whose user column is missing would decide nothing, and its rows would
 * vanish (`SELECT email FROM users`). None for results that are not attributable; for an
 * instance inside a derived table, only when the column can be carried up (`carriable`).
 * DISTINCT gets them too, as the PostgreSQL export's does: equal values of two users are then
 * two rows.
 */
export function missingUserColumns(shape: SelectShape, mapping: MappingView, relationMaps: RelationCheck, database: string | undefined): HiddenColumn[] {
  if (!shape.attributable) return [];
  const missing: HiddenColumn[] = [];
  const reads = cteReads(shape.relations);
  for (const origin of shape.relations.flatMap(originsOf)) {
    const schema = origin.db ?? database;
    if (schema === undefined) continue;
    const columns = new Set<string>();
    for (const field of mapping.fields.values()) {
      if (field.resourceOrder < 0) continue;
      const parts = field.recordField.split(".");
      const names = parts.length === 3 ? parts[0] === schema && parts[1] === origin.table : parts.length === 2 && parts[0] === origin.table;
      if (names && relationMaps(field.recordField, schema, origin.table)) columns.add(parts[parts.length - 1]!);
    }
    for (const column of columns)
      if (!returned(shape, origin, column) && carriable(shape.relations, origin.path, reads)) missing.push({ path: origin.path, column });
  }
  return missing;
}

/** Whether the select list returns the instance's column as a plain column or through a star. */
function returned(shape: SelectShape, origin: Origin, column: string): boolean {
  const key = originKey(origin);
  const isIt = (source: ReturnType<typeof resolveColumn>) =>
    source !== undefined && originKey(source.origin) === key && source.column.toLowerCase() === column.toLowerCase();
  return shape.entries.some((entry) => {
    if (entry.kind === "expression") return false;
    if (entry.kind === "column") return isIt(resolveReference(shape.relations, entry.table, entry.column));
    return shape.relations.some((r) => (entry.table === null || entry.table === r.alias) && isIt(resolveColumn(r, column)));
  });
}

/** A select list item `table`.`column` AS `as`. */
const columnItem = (table: string, column: string, as: string) => ({ expr: { type: "column_ref", table, column }, as });

/** Whether the SELECT's select list is one `*` over its one relation (which then carries every column of it). */
function loneStar(select: Record<string, unknown>, alias: string): boolean {
  const columns = select.columns as Array<{ expr?: { type?: string; table?: unknown; column?: unknown } }>;
  const from = ((select.from as Array<Record<string, unknown>> | null) ?? []).filter((item) => item.type !== "dual");
  const star = columns.length === 1 ? columns[0]!.expr : undefined;
  return star?.type === "column_ref" && star.column === "*" && (star.table === null || star.table === undefined || star.table === alias) && from.length === 1;
}

/**
 * Appends `column` of the instance at `path` to the select list of `select` as `name`, and to
 * each derived table's and CTE's select list on the way (a SELECT that is a lone `*` over the
 * relation passes it on as it is). False when the tree is not as the analysis saw it.
 */
function carryUp(
  select: Record<string, unknown>,
  outerEnv: CteEnvironment,
  path: readonly string[],
  column: string,
  name: string,
): "appended" | "star" | false {
  if (!Array.isArray(select.columns)) return false;
  const env = cteEnvironment(select, outerEnv);
  const alias = path[0]!;
  const item = ((select.from as Array<Record<string, unknown>> | null) ?? []).find((i) => (aliasOf(i.as) ?? i.table) === alias);
  if (!item) return false;
  if (path.length > 1) {
    const cte = !item.expr && (item.db === null || item.db === undefined) && typeof item.table === "string" ? env.get(item.table) : undefined;
    const body = cte ? cte.body : (item.expr as { ast?: Record<string, unknown> } | undefined)?.ast;
    if (!body) return false;
    const below = carryUp(body, cte ? cte.env : env, path.slice(1), column, name);
    if (!below) return false;
    if (below === "appended" && cte?.columnList) (cte.node.columns as unknown[]).push({ type: "column_ref", column: name });
    if (loneStar(select, alias)) return "star";
    select.columns.push(columnItem(alias, name, name));
    return "appended";
  }
  select.columns.push(columnItem(alias, column, name));
  return "appended";
}

/**
 * The statement with the hidden columns carried up to the end of its outer select list
 * (`alias`.`column` AS `warden_user_<n>` in the SELECT that reads the instance, then
 * `derived`.`warden_user_<n>` AS `warden_user_<n>` in each SELECT above it), printed by the parser
 * from its own tree, and the analysis of that printed text (what the backend runs is what was
 * analysed). Undefined when the printed text does not analyse as the same statement with exactly
 * those columns added: the statement then runs as printed without them (statement-analysis.ts,
 * printedSelect) and those instances decide nothing (fail closed).
 */
export function withHiddenColumns(text: string, hidden: readonly HiddenColumn[], policy: StatementPolicy): RewrittenSelect | undefined {
  const original = analyseStatement(text, policy);
  if (original.kind !== "select" || !original.shape.attributable || hidden.length === 0) return undefined;
  const ast = parseOne(text);
  if (ast?.type !== "select") return undefined;
  const expectedFacts = resolutionFacts(original.shape.relations);
  const addedEntries: OutputEntry[] = [];
  for (const [n, h] of hidden.entries()) {
    const name = `${hiddenColumnPrefix}${n}`;
    const instance = relationAt(original.shape.relations, h.path);
    if (instance?.kind !== "base") return undefined;
    const outcome = carryUp(ast, new Map(), h.path, h.column, name);
    if (!outcome) return undefined;
    if (outcome === "appended") addedEntries.push({ kind: "column", table: h.path[0]!, column: h.path.length === 1 ? h.column : name });
    // Each derived relation on the way whose SELECT appended it now has the column as output `name`.
    for (let depth = 1; depth < h.path.length; depth++) {
      const below = relationAt(original.shape.relations, h.path.slice(0, depth + 1));
      if (below?.kind === "base" || below?.carry === "append")
        expectedFacts.add(factOf(h.path.slice(0, depth), name, { origin: instance.origin, column: h.column }));
    }
  }
  if (addedEntries.length !== 0 && addedEntries.length !== hidden.length) return undefined;
  const printed = printStatement(ast);
  if (printed === undefined) return undefined;
  const analysis = analyseStatement(printed, policy);
  if (analysis.kind !== "select" || !analysis.shape.attributable) return undefined;
  const { shape } = analysis;
  if (JSON.stringify(shape.entries) !== JSON.stringify([...original.shape.entries, ...addedEntries])) return undefined;
  const facts = resolutionFacts(shape.relations);
  if (facts.size !== expectedFacts.size || [...facts].some((fact) => !expectedFacts.has(fact))) return undefined;
  return { text: printed, shape: { ...shape, hiddenCount: hidden.length } };
}
