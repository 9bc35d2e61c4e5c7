/**
 * What a derived table or CTE passes through: each of its output columns traced, on the parse
 * tree alone, to the base-table instance and column it comes from. MariaDB reports such a column
 * as the derived table's own (`d`/`d`.`e`), so only this walk can say whose value it is; the
 * result plan still checks that the server names the derived table and column the walk resolved.
 */

/** A base-table instance somewhere in the statement, by the aliases that lead to it from the outer SELECT. */
export interface Origin {
  /** Aliases from the outer SELECT's FROM list down to the instance's own alias. */
  path: readonly string[];
  /** The database named in the statement; null: the session's. */
  db: string | null;
  table: string;
}

/** One base-table column behind an output column. */
export interface Source {
  origin: Origin;
  column: string;
}

/** A derived table or a reference to a CTE, as seen from the SELECT whose FROM list names it. */
export interface DerivedRelation {
  alias: string;
  /**
   * Its output columns by lower-case name: the source, or null when the value is not one base
   * column of one row (an expression, a name that could be either of two relations). Names are
   * unique in a derived table (the server refuses duplicates).
   */
  columns: ReadonlyMap<string, Source | null>;
  /** The one relation a lone `*` of its select list takes its other names from; null when there is none or more than one. */
  star: Relation | null;
  /** The relations of its own FROM list (empty when its rows are not traced: grouping, set operations, recursion). */
  relations: readonly Relation[];
  /** How a column of one of its relations reaches its output: appended to its select list, through a lone `*`, or not at all. */
  carry: CarryMode;
  /** The CTE's column list names its outputs: an appended column is appended to that list too. */
  cteColumnList: boolean;
  /** Its output names are exactly `columns` (and, with `star`, the star relation's): false when a `*` over several relations, an unnamed expression or an untraced body could give it any other name. */
  namesKnown: boolean;
  /** The CTE it reads (by name), null for a derived table. */
  cte: string | null;
}

export type Relation = { kind: "base"; alias: string; origin: Origin } | ({ kind: "derived" } & DerivedRelation);

/**
 * How a SELECT can pass on a column of one of its FROM relations: `append` (add `alias.column AS
 * name` to its select list), `star` (its select list is one `*` over that relation alone, which
 * carries every column), `none` (a `*` there would also show the added column, or its rows are
 * not one row of each relation).
 */
export type CarryMode = "append" | "star" | "none";

/** A key for an origin (aliases may hold any character). */
export const originKey = (origin: Origin): string => JSON.stringify(origin.path);

/** The base-table column behind output column `name` of a relation, if the walk can tell. */
export function resolveColumn(relation: Relation, name: string): Source | undefined {
  if (relation.kind === "base") return { origin: relation.origin, column: name };
  const lower = name.toLowerCase();
  if (relation.columns.has(lower)) return relation.columns.get(lower) ?? undefined;
  return relation.star ? resolveColumn(relation.star, name) : undefined;
}

/** Every base-table instance whose rows make up the relation's rows, however deep. */
export function originsOf(relation: Relation): Origin[] {
  if (relation.kind === "base") return [relation.origin];
  return relation.relations.flatMap(originsOf);
}

/**
 * How the relations of one SELECT are read: a list of relations, each with its alias. A column
 * reference `t.c` resolves in relation `t`; an unqualified `c` only when the SELECT has one
 * relation (with more, the server picks the one that has `c`, which the walk cannot know).
 */
export function resolveReference(relations: readonly Relation[], table: string | null, column: string): Source | undefined {
  if (table === null) return relations.length === 1 ? resolveColumn(relations[0]!, column) : undefined;
  const relation = relations.find((r) => r.alias === table);
  return relation ? resolveColumn(relation, column) : undefined;
}

/** Whether `*` (table null) or `t.*` covers the relation. */
export const starCovers = (star: { table: string | null }, alias: string): boolean => star.table === null || star.table === alias;

/**
 * Every (relation path, output name, source) the statement's derived relations resolve, as
 * strings: two analyses of the same statement (the client's and the re-printed one) must give
 * the same set, plus exactly what the rewrite added.
 */
export function resolutionFacts(relations: readonly Relation[], prefix: readonly string[] = []): Set<string> {
  const facts = new Set<string>();
  for (const relation of relations) {
    const path = [...prefix, relation.alias];
    if (relation.kind === "base") {
      facts.add(JSON.stringify(["base", path, relation.origin.db, relation.origin.table]));
      continue;
    }
    facts.add(JSON.stringify(["derived", path, relation.carry, relation.cteColumnList, relation.cte, relation.star?.alias ?? null]));
    for (const [name, source] of relation.columns) facts.add(factOf(path, name, source));
    for (const fact of resolutionFacts(relation.relations, path)) facts.add(fact);
  }
  return facts;
}

/** The fact that output `name` of the relation at `path` comes from `source`. */
export const factOf = (path: readonly string[], name: string, source: Source | null): string =>
  JSON.stringify(["column", path, name.toLowerCase(), source && [source.origin.path, source.origin.db, source.origin.table, source.column]]);

/** How many times each CTE is read in the FROM lists of the statement's relations (at any depth). */
export function cteReads(relations: readonly Relation[], counts = new Map<string, number>()): Map<string, number> {
  for (const relation of relations) {
    if (relation.kind === "base") continue;
    if (relation.cte !== null) counts.set(relation.cte, (counts.get(relation.cte) ?? 0) + 1);
    cteReads(relation.relations, counts);
  }
  return counts;
}
