import type { MappingView } from "../../../exports/row-decider";
import { RefusalCode, type Refusal } from "./statement-analysis";

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
 * Every column reference in a clause (subqueries inside it included, as PostgreSQL exports check them).
 * With `select` (GROUP BY, HAVING, ORDER BY), a name that is one of its output columns' aliases is read
 * as the expression it names; a subquery's names are its own.
 */
function referencesIn(clause: string, node: unknown, into: PredicateReference[], select?: AstNode): void {
  if (Array.isArray(node)) {
    for (const item of node) referencesIn(clause, item, into, select);
    return;
  }
  if (!isNode(node)) return;
  if (node.type === "column_ref") {
    const aliased = select && aliasedExpression(select, node);
    if (aliased) return referencesIn(clause, aliased, into);
    const column = columnName(node);
    into.push({ clause, column: column === "*" ? undefined : column, shown: column ?? "?" });
    return;
  }
  const inner = node.type === "select" || isNode(node.ast) ? undefined : select;
  for (const value of Object.values(node)) referencesIn(clause, value, into, inner);
}

/**
 * The select-list expression an unqualified name stands for in GROUP BY, HAVING and ORDER BY: MariaDB
 * takes an output column's alias before a table's column (`IF(…) AS id … ORDER BY id` orders by the IF).
 */
function aliasedExpression(select: AstNode, ref: AstNode): AstNode | undefined {
  if (typeof ref.table === "string" && ref.table !== "") return undefined;
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
function orderingIn(clause: string, entries: unknown, select: AstNode, into: PredicateReference[]): void {
  for (const entry of Array.isArray(entries) ? entries : []) {
    const expr = isNode(entry) && entry.type !== "number" && isNode(entry.expr) ? entry.expr : entry;
    if (isNode(expr) && expr.type === "number") {
      const target = Array.isArray(select.columns) ? (select.columns[Number(expr.value) - 1] as AstNode | undefined) : undefined;
      const ref = isNode(target?.expr) && target.expr.type === "column_ref" ? target.expr : undefined;
      const column = ref ? columnName(ref) : undefined;
      into.push({ clause, column: column === "*" ? undefined : column, shown: `output column ${String(expr.value)}` });
    } else referencesIn(clause, expr, into, select);
  }
}

function windowIn(specification: unknown, into: PredicateReference[]): void {
  const spec = isNode(specification) && isNode(specification.as_window_specification) ? specification.as_window_specification.window_specification : undefined;
  if (!isNode(spec)) return;
  referencesIn("PARTITION BY", spec.partitionby, into);
  referencesIn("window ORDER BY", spec.orderby, into);
}

/**
 * The columns through which a statement chooses, groups or orders rows, in every SELECT, UPDATE
 * and DELETE of it: WHERE, JOIN ON and USING, GROUP BY, HAVING, ORDER BY, named windows and
 * OVER (PARTITION BY, ORDER BY). Collected once per statement text (the mapping is applied when
 * the statement runs: `strictRefusal`).
 */
export function predicateReferences(ast: unknown): PredicateReference[] {
  const found: PredicateReference[] = [];
  const visit = (node: unknown): void => {
    if (Array.isArray(node)) {
      for (const item of node) visit(item);
      return;
    }
    if (!isNode(node)) return;
    if (node.type === "select" || node.type === "update" || node.type === "delete") {
      referencesIn("WHERE", node.where, found);
      referencesIn("HAVING", node.having, found, node);
      orderingIn("GROUP BY", isNode(node.groupby) ? node.groupby.columns : undefined, node, found);
      orderingIn("ORDER BY", node.orderby, node, found);
      for (const named of isNode(node.window) && Array.isArray(node.window.expr) ? node.window.expr : []) windowIn(named, found);
      for (const item of Array.isArray(node.from) ? (node.from as unknown[]) : []) {
        if (!isNode(item)) continue;
        referencesIn("JOIN ON", item.on, found);
        for (const name of Array.isArray(item.using) ? item.using : [])
          found.push({
            clause: "JOIN USING",
            column: isNode(name) && typeof name.value === "string" ? name.value : undefined,
            shown: String(isNode(name) ? name.value : name),
          });
      }
    }
    if (isNode(node.over)) windowIn(node.over, found);
    for (const value of Object.values(node)) visit(value);
  };
  visit(ast);
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
