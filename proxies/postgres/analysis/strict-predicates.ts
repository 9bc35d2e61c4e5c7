import type { Refusal } from "./read-only";
import type { SchemaView } from "./schema-view";
import { nodeType, stringValue, walkNodes, type Node } from "./sql-parser";

/** Clauses through which rows are chosen, grouped or ordered: what a value there does can be seen without the value. */
const predicateClauses: Record<string, readonly string[]> = {
  SelectStmt: ["whereClause", "groupClause", "havingClause", "sortClause", "windowClause", "distinctClause"],
  UpdateStmt: ["whereClause"],
  DeleteStmt: ["whereClause"],
  JoinExpr: ["quals"],
  WindowDef: ["partitionClause", "orderClause"],
};

/**
 * Strict mode: a statement may choose, group and order rows only by resource-context columns.
 * Predicates on any other column (WHERE email LIKE 'a%') let a client learn about values the
 * purpose does not release from which rows come back, even when those values are emptied.
 * Any other column reference, `*`, or an ordinal naming another output column is refused.
 */
export function strictRefusal(statement: Node, schema: SchemaView): Refusal | undefined {
  let refusal: Refusal | undefined;
  walkNodes(statement, (type, fields) => {
    if (refusal) return;
    // A window written in a call (OVER (...)) is a WindowDef without its type name.
    const clauses =
      type === "FuncCall" && fields.over
        ? predicateClauses.WindowDef!.map((clause) => [clause, (fields.over as Node)[clause]] as const)
        : (predicateClauses[type] ?? []).map((clause) => [clause, fields[clause]] as const);
    for (const [clause, value] of clauses) {
      if (value === undefined) continue;
      const select = type === "SelectStmt" ? fields : undefined;
      const offending =
        offendingReference(value, select, schema) ??
        (select && (clause === "sortClause" || clause === "distinctClause") ? offendingAlias(value, select, schema) : undefined);
      if (offending !== undefined) {
        refusal = {
          sqlState: "42501",
          message: `this export is strict: ${clauseName(clause)} may use only resource-context columns (${[...schema.subjectColumnNames].join(", ") || "none mapped"}), not ${offending}`,
        };
        return;
      }
    }
  });
  return refusal;
}

/** What an ORDER BY entry sorts by (the node inside its SortBy); any other clause's entry as it is. */
function sortKey(entry: unknown): unknown {
  return nodeType(entry)?.[0] === "SortBy" ? nodeType(entry)![1].node : entry;
}

function offendingReference(clause: unknown, select: Node | undefined, schema: SchemaView): string | undefined {
  let offending: string | undefined;
  const allowed = (fields: Node[]) => {
    const last = fields[fields.length - 1];
    const name = stringValue(last);
    return name !== undefined && schema.subjectColumnNames.has(name);
  };
  // Ordinals (ORDER BY 2, GROUP BY 1) name an output column: it must itself be a resource-context column.
  for (const entry of Array.isArray(clause) ? clause : []) {
    const sortBy = sortKey(entry);
    const ordinal = (nodeType(sortBy)?.[1].ival as Node | undefined)?.ival;
    if (nodeType(sortBy)?.[0] !== "A_Const" || typeof ordinal !== "number" || !select) continue;
    const target = nodeType(((select.targetList as Node[] | undefined) ?? [])[ordinal - 1])?.[1];
    const reference = nodeType(target?.val);
    if (reference?.[0] !== "ColumnRef" || !allowed((reference[1].fields as Node[]) ?? [])) return `output column ${ordinal}`;
  }
  walkNodes(clause, (type, fields) => {
    if (offending !== undefined || type !== "ColumnRef") return;
    const parts = (fields.fields as Node[] | undefined) ?? [];
    if (!allowed(parts)) offending = parts.map((part) => stringValue(part) ?? "*").join(".");
  });
  return offending;
}

/**
 * ORDER BY and DISTINCT ON read a simple name as an output column's name before an input column's
 * (PostgreSQL's rule): `(secret LIKE 'a%')::int AS id … ORDER BY id` orders by the secret. Such a
 * name is checked as the expression it names.
 */
function offendingAlias(clause: unknown, select: Node, schema: SchemaView): string | undefined {
  const targets = ((select.targetList as Node[] | undefined) ?? []).map((target) => nodeType(target)?.[1]);
  for (const entry of Array.isArray(clause) ? clause : []) {
    const reference = nodeType(sortKey(entry));
    const parts = reference?.[0] === "ColumnRef" ? ((reference[1].fields as Node[] | undefined) ?? []) : [];
    const name = parts.length === 1 ? stringValue(parts[0]) : undefined;
    const target = name === undefined ? undefined : targets.find((t) => t?.name === name);
    if (!target) continue;
    const named = nodeType(target.val);
    // `id AS id` names the column itself.
    if (named?.[0] === "ColumnRef" && stringValue(((named[1].fields as Node[] | undefined) ?? []).at(-1)) === name) continue;
    const offending = offendingReference(target.val, undefined, schema);
    if (offending !== undefined) return `${offending} (through the output column ${name})`;
  }
  return undefined;
}

function clauseName(clause: string): string {
  const names: Record<string, string> = {
    whereClause: "WHERE",
    groupClause: "GROUP BY",
    havingClause: "HAVING",
    sortClause: "ORDER BY",
    windowClause: "WINDOW",
    distinctClause: "DISTINCT ON",
    quals: "JOIN ON",
    partitionClause: "PARTITION BY",
    orderClause: "ORDER BY",
  };
  return names[clause] ?? clause;
}
