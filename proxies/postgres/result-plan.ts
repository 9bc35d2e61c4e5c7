import type { ColumnDescription } from "../../protocols/postgres/row-description";
import { columnKey, type ColumnMap } from "./column-catalog";
import type { MappingView, RowVerdict } from "./types";

/** How the rows of one result are decided: which columns name the user, which category each column is in. */
export interface ResultPlan {
  columns: readonly ColumnDescription[];
  /** Columns holding the user id, in the mapping's resource-context order. */
  userColumns: number[];
  /** Per column: its category, or undefined when it maps to none (always NULL). */
  categories: Array<string | undefined>;
  /** Per verdict: which columns are kept, and how many become NULL. */
  masks: Map<RowVerdict, RowMask>;
  /** The verdict of the last row decided and its mask: rows in a run mostly share their verdict (interned). */
  lastVerdict?: RowVerdict;
  lastMask?: RowMask;
}

export interface RowMask {
  keep: boolean[];
  nulled: number;
}

/**
 * Plans a result from its RowDescription: a column maps to a record field only through its
 * table OID and attribute number (never its label); OID 0 (expressions, functions, whole rows,
 * aggregates) maps to nothing.
 */
export function planResult(columns: readonly ColumnDescription[], columnMap: ColumnMap, mapping: MappingView): ResultPlan {
  const users: Array<{ column: number; order: number }> = [];
  const categories = columns.map((column, index) => {
    if (column.tableOid === 0 || column.attributeNumber <= 0) return undefined;
    const recordField = columnMap.get(columnKey(column.tableOid, column.attributeNumber));
    const field = recordField === undefined ? undefined : mapping.fields.get(recordField);
    if (!field) return undefined;
    if (field.resourceOrder >= 0) users.push({ column: index, order: field.resourceOrder });
    return field.category;
  });
  users.sort((a, b) => a.order - b.order || a.column - b.column);
  return { columns, userColumns: users.map((u) => u.column), categories, masks: new Map() };
}

/** The columns a verdict keeps in this result (computed once per distinct verdict). */
export function maskFor(plan: ResultPlan, verdict: RowVerdict): RowMask {
  if (plan.lastVerdict === verdict) return plan.lastMask!;
  let mask = plan.masks.get(verdict);
  if (!mask) {
    const keep = plan.categories.map((category) => category !== undefined && verdict.categories.has(category));
    mask = { keep, nulled: keep.filter((k) => !k).length };
    plan.masks.set(verdict, mask);
  }
  plan.lastVerdict = verdict;
  plan.lastMask = mask;
  return mask;
}
