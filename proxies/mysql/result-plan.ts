import type { ColumnDefinition } from "../../protocols/mysql/column-definition";
import type { MappedField, MappingView } from "../../exports/row-decider";
import type { DecisionPlan } from "../../exports/row-masks";
import { hiddenColumnPrefix } from "./analysis/hidden-user-columns";
import { originKey, resolveColumn } from "./analysis/derived-relations";
import type { OutputEntry, SelectShape } from "./analysis/statement-analysis";

/** A MySQL result's plan: the protocol-neutral decision plan and the column types its rows are framed by. */
export interface MysqlResultPlan extends DecisionPlan {
  /** Column types (binary rows are framed by them; user ids are read by them). */
  types: Uint8Array;
  /** Column flags (UNSIGNED matters to binary integers). */
  flags: Uint16Array;
}

/** Whether position i of a result of `count` columns is a plain column of the select list (before the first `*` from the start, after the last from the end, in between when every entry there is a column or a star). */
function plainColumns(entries: readonly OutputEntry[], count: number): Array<OutputEntry | "star-range" | undefined> {
  const firstStar = entries.findIndex((e) => e.kind === "star");
  if (firstStar < 0) return entries.length === count ? [...entries] : new Array(count).fill(undefined);
  let lastStar = firstStar;
  entries.forEach((e, i) => e.kind === "star" && (lastStar = i));
  const after = entries.length - 1 - lastStar;
  if (firstStar + after > count) return new Array(count).fill(undefined);
  const middlePlain = entries.slice(firstStar, lastStar + 1).every((e) => e.kind !== "expression");
  const out: Array<OutputEntry | "star-range" | undefined> = [];
  for (let i = 0; i < count; i++) {
    if (i < firstStar) out.push(entries[i]);
    else if (i >= count - after) out.push(entries[entries.length - (count - i)]);
    else out.push(middlePlain ? "star-range" : undefined);
  }
  return out;
}

/** Whether the mapping's field `recordField` applies to a column of (`schema`, `table`): the relation is the one the mapping names (session/backend-catalog.ts). */
export type RelationCheck = (recordField: string, schema: string, table: string) => boolean;

/** The mapped field of a base table's column: `database.table.column` first, then `table.column`, each only for the relation it names. */
function mappedField(mapping: MappingView, schema: string, table: string, column: string, relationMaps: RelationCheck): MappedField | undefined {
  for (const name of new Set([column, column.toLowerCase()]))
    for (const key of [`${schema}.${table}.${name}`, `${table}.${name}`]) {
      const field = mapping.fields.get(key);
      if (field && relationMaps(field.recordField, schema, table)) return field;
    }
  return undefined;
}

/**
 * Plans a result from its column definitions and the statement's shape. A value is attributed
 * only when both agree: the parse tree says its position is a plain column of the outer SELECT
 * (no expression, no grouping, no set operation), and the server reports it as a column of one
 * of the SELECT's base-table instances: the instance's alias as `table`, its table as
 * `org_table`, its database (the one the statement names, else the session's `database`) as
 * `schema`, and the column the
 * statement names as `org_name`. The alias tells two instances of one table apart (self-joins);
 * `org_table`/`org_name` alone could not. The mapping applies only to the relation it names
 * (`relationMaps`: a view or table of the same name elsewhere does not take it). Each instance's user is read from its own
 * resource-context columns in the same result; an instance whose user column is not in the
 * result decides nothing (its values are NULL); the export adds the missing ones as hidden columns
 * (analysis/hidden-user-columns.ts), the shape's last `hiddenCount`, which are never sent.
 * A derived table's or CTE's column (the server reports the derived table as `table`, and
 * itself or the base table as `org_table`) is attributed to the base column the parse traces it to (derived-relations.ts),
 * under that base instance's own user. Without a shape, nothing is attributed.
 */
export function planMysqlResult(
  columns: readonly ColumnDefinition[],
  shape: SelectShape | undefined,
  mapping: MappingView,
  relationMaps: RelationCheck,
  database: string | undefined,
): MysqlResultPlan {
  const count = columns.length;
  const categories: Array<string | undefined> = new Array(count).fill(undefined);
  const groupOf: number[] = new Array(count).fill(-1);
  const types = Uint8Array.from(columns, (c) => c.type);
  const flags = Uint16Array.from(columns, (c) => c.flags);
  const hiddenCount = shape?.hiddenCount ?? 0;
  const hidden = columns.map((_, i) => i >= count - hiddenCount);
  const plan: MysqlResultPlan = { categories, groupOf, hidden, groups: [], masks: new Map(), types, flags };
  if (!shape?.attributable) return plan;
  // The columns the export added are the last ones, under the names it gave them: else the result is not the statement's (nothing is attributed).
  for (let i = 0; i < hiddenCount; i++) if (columns[count - hiddenCount + i]?.name !== `${hiddenColumnPrefix}${i}`) return plan;
  const positions = plainColumns(shape.entries, count);
  /** Per position: the key of its base-table instance and its mapped field, when attributed. */
  const attributed: Array<{ key: string; field: MappedField } | undefined> = new Array(count).fill(undefined);
  columns.forEach((column, i) => {
    const entry = positions[i];
    if (entry === undefined || (entry !== "star-range" && entry.kind === "expression")) return;
    if (!column.table || !column.orgTable || !column.orgName) return;
    if (entry !== "star-range") {
      if (entry.table !== null && entry.table !== column.table) return;
      if (entry.kind === "column" && entry.column.toLowerCase() !== column.orgName.toLowerCase()) return;
    }
    const instance = shape.instances.get(column.table);
    if (instance) {
      // Exact: database and table names are case-sensitive on the server (lower_case_table_names=0), and a view reports the alias it is read under as org_table and its base table's database as schema.
      if (instance.table !== column.orgTable || !column.schema || (instance.db ?? database) !== column.schema) return;
      const field = mappedField(mapping, column.schema, column.orgTable, column.orgName, relationMaps);
      if (field) attributed[i] = { key: originKey({ path: [instance.alias], db: instance.db, table: instance.table }), field };
      return;
    }
    // A derived table or CTE: the server names it as `table` and its output column as `org_name`; the parse says which base column that is.
    // As org_table MariaDB reports the derived table itself, or the base table when it merged or materialised it (DISTINCT): either will do.
    const derived = shape.derived.get(column.table);
    const source = derived && resolveColumn(derived, column.orgName);
    const schema = source && (source.origin.db ?? database);
    if (!source || schema === undefined || (column.orgTable !== derived.alias && column.orgTable !== source.origin.table)) return;
    const field = mappedField(mapping, schema, source.origin.table, source.column, relationMaps);
    if (field) attributed[i] = { key: originKey(source.origin), field };
  });
  // One group per instance with a resource-context column in the result; its user columns in mapping order.
  const groupIndex = new Map<string, number>();
  const userColumns = new Map<string, Array<{ position: number; order: number }>>();
  attributed.forEach((a, i) => {
    if (!a || a.field.resourceOrder < 0) return;
    const list = userColumns.get(a.key) ?? [];
    list.push({ position: i, order: a.field.resourceOrder });
    userColumns.set(a.key, list);
  });
  for (const [key, list] of userColumns) {
    groupIndex.set(key, plan.groups.length);
    plan.groups.push(list.sort((x, y) => x.order - y.order).map((u) => u.position));
  }
  attributed.forEach((a, i) => {
    const group = a && groupIndex.get(a.key);
    if (!a || group === undefined) return;
    categories[i] = a.field.category;
    groupOf[i] = group;
  });
  return plan;
}
