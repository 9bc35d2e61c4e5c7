import type { ColumnDescription } from "../../protocols/postgres/row-description";
import { passesWhole, type ResultShape } from "./analysis/statement-analysis";
import { columnKey, type Catalog } from "./column-catalog";
import type { MappingView } from "../../exports/row-decider";
import type { DecisionPlan } from "../../exports/row-masks";

export { maskFor, maskOf, type RowMask } from "../../exports/row-masks";

/** A PostgreSQL result's plan: the protocol-neutral decision plan (exports/row-masks.ts) and the RowDescription it was made from. */
export interface ResultPlan extends DecisionPlan {
  columns: readonly ColumnDescription[];
  /** A statement that reads only the system catalogs or was rewritten for pushdown: every row and its description pass as they are. */
  passAll: boolean;
}

/**
 * Plans a result from its RowDescription and the statement's shape. A value is decided only
 * when the parse tree and the server agree on where it comes from: the shape's expected
 * relation and column must be what the catalog says the column's table OID and attribute
 * number are; never the label. Without a shape (a cursor opened by server-side code, say),
 * nothing is attributed: every row is dropped.
 */
export function planResult(columns: readonly ColumnDescription[], shape: ResultShape | undefined, catalog: Catalog, mapping: MappingView): ResultPlan {
  const count = columns.length;
  if (passesWhole(shape))
    return {
      columns,
      categories: new Array(count).fill(undefined),
      groupOf: new Array(count).fill(-1),
      hidden: new Array(count).fill(false),
      groups: [],
      passAll: true,
      masks: new Map(),
    };
  const hidden = columns.map((column) => shape !== undefined && column.name.startsWith(shape.hiddenPrefix));
  const categories: Array<string | undefined> = new Array(count).fill(undefined);
  const groupOf: number[] = new Array(count).fill(-1);
  const groups: number[][] = [];
  const positions = shape ? alignShape(shape, count) : undefined;
  if (shape && positions && hiddenInPlace(shape, positions, columns)) {
    const from = (entry: number) => (entry >= 0 ? positions[entry] : undefined);
    const matches = (position: number, relation: { name: string; schema: string }, column: string) => {
      const description = columns[position]!;
      const row = catalog.rows.get(columnKey(description.tableOid, description.attributeNumber));
      return row !== undefined && row.table === relation.name && row.schema === relation.schema && row.column === column;
    };
    for (const group of shape.groups) {
      const subjects = group.subjects.map(from);
      // Each resource-context value must be that relation's resource-context column, as the server says.
      const usable = subjects.every((position, i) => position !== undefined && matches(position, group.relation, group.relation.subjectColumns[i]!));
      groups.push(usable ? (subjects as number[]) : []);
    }
    shape.entries.forEach((entry, index) => {
      const position = positions[index];
      if (entry.kind !== "column" || position === undefined || entry.column.hidden || !entry.column.expect) return;
      const group = entry.column.group;
      if (group < 0 || groups[group]!.length === 0) return;
      const { relation, column } = entry.column.expect;
      if (!matches(position, relation, column)) return;
      const description = columns[position]!;
      const field = mapping.fields.get(catalog.columns.get(columnKey(description.tableOid, description.attributeNumber)) ?? "");
      if (!field) return;
      categories[position] = field.category;
      groupOf[position] = group;
    });
  }
  // Only groups that decide a value of this result need a verdict (a group decides values only when its user columns are known).
  const deciding: number[][] = [];
  const renumber = new Map<number, number>();
  groups.forEach((subjects, group) => {
    if (!groupOf.includes(group)) return;
    renumber.set(group, deciding.length);
    deciding.push(subjects);
  });
  return { columns, categories, groupOf: groupOf.map((group) => renumber.get(group) ?? -1), hidden, groups: deciding, passAll: false, masks: new Map() };
}

/**
 * Position of each shape entry in a result of `count` columns: entries before the first gap
 * from the start, after the last gap from the end; between two gaps, unknown. Undefined when the
 * count cannot fit the shape.
 */
export function alignShape(shape: ResultShape, count: number): Array<number | undefined> | undefined {
  const entries = shape.entries;
  const firstGap = entries.findIndex((e) => e.kind === "gap");
  if (firstGap < 0) return entries.length === count ? entries.map((_, i) => i) : undefined;
  const known = entries.filter((e) => e.kind === "column").length;
  if (known > count) return undefined;
  let lastGap = firstGap;
  entries.forEach((e, i) => e.kind === "gap" && (lastGap = i));
  return entries.map((entry, i) => {
    if (entry.kind === "gap") return undefined;
    if (i < firstGap) return i;
    if (i > lastGap) return count - (entries.length - i);
    return undefined;
  });
}

/** The hidden columns the shape expects are where it expects them, by name: else the result is not the statement's. */
function hiddenInPlace(shape: ResultShape, positions: Array<number | undefined>, columns: readonly ColumnDescription[]): boolean {
  return shape.entries.every((entry, index) => {
    if (entry.kind !== "column" || !entry.column.hidden) return true;
    const position = positions[index];
    return position === undefined || columns[position]!.name === entry.column.hidden;
  });
}
