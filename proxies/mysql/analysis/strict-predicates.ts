import type { MappingView } from "../../../exports/row-decider";
import type { Relation } from "./derived-relations";
import {
  aliasOf,
  RefusalCode,
  scopeRelations,
  traceBudget,
  type CteDefinition,
  type CteEnvironment,
  type Refusal,
  type TraceBudget,
} from "./statement-analysis";

/** A column a statement chooses, groups or orders rows by: its name (undefined when none can be told: `*`, an ordinal naming an expression). */
export interface PredicateReference {
  clause: string;
  column: string | undefined;
  /** How the refusal names it. */
  shown: string;
}

type AstNode = Record<string, unknown>;

const isNode = (value: unknown): value is AstNode => value !== null && typeof value === "object" && !Array.isArray(value);

/** A column_ref's column name (a plain string, or `{expr: {value}}` when quoted). */
function columnName(ref: AstNode): string | undefined {
  const column = ref.column;
  if (typeof column === "string") return column;
  const value = isNode(column) && isNode(column.expr) ? column.expr.value : undefined;
  return typeof value === "string" ? value : undefined;
}

/**
 * Where a column reference is read: the FROM relations of the SELECT (UPDATE, DELETE) it is in and
 * of every one around it, innermost first, and the CTEs it sees.
 */
interface Scopes {
  chain: ReadonlyArray<readonly Relation[]>;
  env: CteEnvironment;
  /** One for the whole statement's walk. */
  budget: TraceBudget;
}

/** A qualifier as the parser gives it (a string, or a backquoted name's node). */
function qualifierOf(ref: AstNode): string | undefined {
  const table = ref.table;
  if (typeof table === "string") return table === "" ? undefined : table;
  return isNode(table) && typeof table.value === "string" ? table.value : undefined;
}

/** The scopes inside a SELECT, UPDATE or DELETE: its own FROM relations in front. */
function enter(node: AstNode, outer: Scopes): Scopes {
  const from = node.type === "select" ? node.from : [...(Array.isArray(node.table) ? node.table : []), ...(Array.isArray(node.from) ? node.from : [])];
  const { relations, env } = scopeRelations({ ...node, type: "select", from, columns: [] }, outer.env, outer.budget);
  return { chain: [relations, ...outer.chain], env, budget: outer.budget };
}

/**
 * The base-table column names a reference to output `name` of a relation can be (undefined: one
 * the walk cannot trace: an expression, a UNION, grouping, an untraced CTE); none when the
 * relation cannot have that name.
 */
function readingsIn(relation: Relation, name: string): Array<string | undefined> {
  if (relation.kind === "base") return [name];
  const lower = name.toLowerCase();
  if (relation.columns.has(lower)) return [relation.columns.get(lower)?.column];
  if (relation.star) return readingsIn(relation.star, name);
  return relation.namesKnown ? [] : [undefined];
}

/**
 * What a column reference can read: `t.c` in each relation named `t` around it (any case), `c` in
 * every relation around it (MariaDB picks the one that has it, which only the catalog knows);
 * a derived table's or CTE's column as the base column it traces to. The strict check passes
 * only when every reading is a resource-context column.
 */
function readingsOf(ref: AstNode, column: string, scopes: Scopes): Array<{ column: string | undefined; derived: boolean }> {
  const all = scopes.chain.flat();
  const qualifier = qualifierOf(ref)?.toLowerCase();
  const named = qualifier === undefined ? [] : all.filter((r) => r.alias.toLowerCase() === qualifier);
  const candidates = named.length > 0 ? named : all;
  const readings = candidates.flatMap((r) => readingsIn(r, column).map((c) => ({ column: c, derived: r.kind === "derived" })));
  if (readings.length > 0) return readings;
  // A qualifier that names relations none of which has that name (whose names are all known): MariaDB reads something the
  // walk did not see (a name it normalises otherwise), so nothing vouches for it.
  if (named.length > 0) return [{ column: undefined, derived: true }];
  // No relation around it can have that name: read by its name, as before derived tables were traced.
  return [{ column, derived: false }];
}

/** A reference to a column, each of its readings (`readingsOf`) checked on its own. */
function pushReference(clause: string, ref: AstNode, column: string | undefined, shown: string, scopes: Scopes, into: PredicateReference[]): void {
  if (column === undefined || column === "*") {
    into.push({ clause, column: undefined, shown });
    return;
  }
  for (const reading of readingsOf(ref, column, scopes)) {
    if (!reading.derived) into.push({ clause, column: reading.column, shown });
    else
      into.push({
        clause,
        column: reading.column,
        shown:
          reading.column === undefined
            ? `${shown} (a derived table's or CTE's column the export cannot trace)`
            : `${shown} (a derived table's or CTE's column from ${reading.column})`,
      });
  }
}

/**
 * Every column reference in a clause (subqueries inside it included, as PostgreSQL exports check them,
 * each read in its own scopes). With `select` (GROUP BY, HAVING, ORDER BY), a name that is one of its
 * output columns' aliases is read as the expression it names; a subquery's names are its own.
 */
function referencesIn(clause: string, node: unknown, into: PredicateReference[], scopes: Scopes, select?: AstNode): void {
  if (Array.isArray(node)) {
    for (const item of node) referencesIn(clause, item, into, scopes, select);
    return;
  }
  if (!isNode(node)) return;
  if (node.type === "column_ref") {
    const aliased = select && aliasedExpression(select, node);
    if (aliased) return referencesIn(clause, aliased, into, scopes);
    const column = columnName(node);
    pushReference(clause, node, column, column ?? "?", scopes, into);
    return;
  }
  const inner = node.type === "select" || isNode(node.ast) ? undefined : select;
  const within = node.type === "select" ? enter(node, scopes) : scopes;
  for (const value of Object.values(node)) referencesIn(clause, value, into, within, inner);
}

/**
 * The select-list expression an unqualified name stands for in GROUP BY, HAVING and ORDER BY: MariaDB
 * takes an output column's alias before a table's column (`IF(…) AS id … ORDER BY id` orders by the IF).
 */
function aliasedExpression(select: AstNode, ref: AstNode): AstNode | undefined {
  if (qualifierOf(ref) !== undefined) return undefined;
  const name = columnName(ref)?.toLowerCase();
  if (name === undefined || !Array.isArray(select.columns)) return undefined;
  for (const column of select.columns as unknown[]) {
    if (!isNode(column) || !isNode(column.expr)) continue;
    const alias = typeof column.as === "string" ? column.as : isNode(column.as) && isNode(column.as.expr) ? column.as.expr.value : undefined;
    if (typeof alias !== "string" || alias.toLowerCase() !== name) continue;
    // `id AS id` names the column itself.
    if (column.expr.type === "column_ref" && columnName(column.expr)?.toLowerCase() === name) return undefined;
    return column.expr;
  }
  return undefined;
}

/** GROUP BY / ORDER BY entries: an ordinal names an output column of the SELECT, which must itself be a plain column; a name may be an output column's alias. */
function orderingIn(clause: string, entries: unknown, select: AstNode, into: PredicateReference[], scopes: Scopes): void {
  for (const entry of Array.isArray(entries) ? entries : []) {
    const expr = isNode(entry) && entry.type !== "number" && isNode(entry.expr) ? entry.expr : entry;
    if (isNode(expr) && expr.type === "number") {
      const target = Array.isArray(select.columns) ? (select.columns[Number(expr.value) - 1] as AstNode | undefined) : undefined;
      const ref = isNode(target?.expr) && target.expr.type === "column_ref" ? target.expr : undefined;
      pushReference(clause, ref ?? {}, ref ? columnName(ref) : undefined, `output column ${String(expr.value)}`, scopes, into);
    } else referencesIn(clause, expr, into, scopes, select);
  }
}

function windowIn(specification: unknown, into: PredicateReference[], scopes: Scopes): void {
  const spec = isNode(specification) && isNode(specification.as_window_specification) ? specification.as_window_specification.window_specification : undefined;
  if (!isNode(spec)) return;
  referencesIn("PARTITION BY", spec.partitionby, into, scopes);
  referencesIn("window ORDER BY", spec.orderby, into, scopes);
}

/** The CTEs each body of a WITH list sees: those before it, or, in WITH RECURSIVE, every one of the list, untraced (their rows come from themselves). */
function cteBodies(node: AstNode, outer: CteEnvironment, budget: TraceBudget): Array<{ body: unknown; env: CteEnvironment }> {
  const list = Array.isArray(node.with) ? (node.with as AstNode[]) : [];
  if (list.length === 0) return [];
  const recursive = list.some((cte) => Boolean(cte.recursive));
  const defined = scopeRelations({ ...node, type: "select", from: [], columns: [] }, outer, budget).env;
  const untraced = new Map(outer);
  if (recursive)
    for (const [name, definition] of defined)
      if (!outer.has(name) || outer.get(name) !== definition) untraced.set(name, { ...definition, body: undefined, recursive: true } as CteDefinition);
  return list.map((cte) => {
    const name = aliasOf(cte.name);
    const env = recursive ? untraced : ((name !== undefined ? defined.get(name)?.env : undefined) ?? outer);
    return { body: cte.stmt, env };
  });
}

/**
 * The columns through which a statement chooses, groups or orders rows, in every SELECT, UPDATE
 * and DELETE of it: WHERE, JOIN ON and USING, GROUP BY, HAVING, ORDER BY, named windows and
 * OVER (PARTITION BY, ORDER BY). Collected once per statement text (the mapping is applied when
 * the statement runs: `strictRefusal`).
 */
export function predicateReferences(ast: unknown): PredicateReference[] {
  const found: PredicateReference[] = [];
  const visit = (node: unknown, outer: Scopes): void => {
    if (Array.isArray(node)) {
      for (const item of node) visit(item, outer);
      return;
    }
    if (!isNode(node)) return;
    let scopes = outer;
    if (node.type === "select" || node.type === "update" || node.type === "delete") {
      scopes = enter(node, outer);
      referencesIn("WHERE", node.where, found, scopes);
      referencesIn("HAVING", node.having, found, scopes, node);
      orderingIn("GROUP BY", isNode(node.groupby) ? node.groupby.columns : undefined, node, found, scopes);
      orderingIn("ORDER BY", node.orderby, node, found, scopes);
      for (const named of isNode(node.window) && Array.isArray(node.window.expr) ? node.window.expr : []) windowIn(named, found, scopes);
      for (const item of Array.isArray(node.from) ? (node.from as unknown[]) : []) {
        if (!isNode(item)) continue;
        referencesIn("JOIN ON", item.on, found, scopes);
        for (const name of Array.isArray(item.using) ? item.using : []) {
          const column = isNode(name) && typeof name.value === "string" ? name.value : undefined;
          pushReference("JOIN USING", {}, column, String(isNode(name) ? name.value : name), scopes, found);
        }
      }
      for (const { body, env } of cteBodies(node, outer.env, outer.budget)) visit(body, { chain: scopes.chain, env, budget: outer.budget });
    }
    if (isNode(node.over)) windowIn(node.over, found, scopes);
    for (const [key, value] of Object.entries(node)) if (key !== "with" || scopes === outer) visit(value, scopes);
  };
  visit(ast, { chain: [], env: new Map(), budget: traceBudget() });
  return found;
}

/** The mapping's resource-context column names (compared without case, as MySQL compares column names). */
export function resourceContextColumns(mapping: MappingView): Set<string> {
  const names = new Set<string>();
  for (const field of mapping.fields.values()) if (field.resourceOrder >= 0) names.add(field.recordField.split(".").pop()!.toLowerCase());
  return names;
}

/**
 * Strict mode: a statement may choose, group and order rows only by resource-context columns.
 * A predicate on another column (WHERE email LIKE 'a%') tells a client about values the purpose
 * does not release by which rows come back, even when those values are NULL. Checked by column
 * name, as for PostgreSQL exports: a column of any table named like a resource-context column
 * passes; `*` and ordinals naming anything but a plain column are refused.
 */
export function strictRefusal(references: readonly PredicateReference[], subjectColumns: ReadonlySet<string>): Refusal | undefined {
  const offending = references.find((r) => r.column === undefined || !subjectColumns.has(r.column.toLowerCase()));
  if (!offending) return undefined;
  return {
    kind: "refused",
    ...RefusalCode.denied,
    event: "statement.refused",
    message: `this export is strict: ${offending.clause} may use only resource-context columns (${[...subjectColumns].join(", ") || "none mapped"}), not ${offending.shown}`,
  };
}
