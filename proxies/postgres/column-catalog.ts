import type { CatalogShadows } from "./analysis/catalog-reads";
import { schemaView, type RelationView, type SchemaView } from "./analysis/schema-view";
import { shadowQuery } from "./catalog-shadows";
import type { MappingView } from "../../exports/row-decider";

/** (table OID, attribute number) -> the record field it maps to. */
export type ColumnMap = ReadonlyMap<string, string>;

export function columnKey(tableOid: number, attributeNumber: number): string {
  return `${tableOid}.${attributeNumber}`;
}

/** A mapped record field as a PostgreSQL column: `table.column` or `schema.table.column` (policy-semantics 4). */
function columnNameOf(recordField: string): { schema?: string; table: string; column: string } | undefined {
  const parts = recordField.split(".");
  if (parts.some((p) => p === "")) return undefined;
  if (parts.length === 2) return { table: parts[0]!, column: parts[1]! };
  if (parts.length === 3) return { schema: parts[0]!, table: parts[1]!, column: parts[2]! };
  return undefined;
}

const hex = (text: string) => Buffer.from(text, "utf8").toString("hex");

/**
 * The query that finds every column of the relations named in the mapping, run on the client's
 * own connection when it is idle: `*` over them expands to all of them. Names travel
 * hex-encoded, so no client setting (such as standard_conforming_strings) can change how they
 * are read; the result is matched by name again in `resolveColumns`, so an operator the client
 * redefined cannot widen it. Then the catalog names other schemas shadow (catalog-shadows.ts),
 * and last the newest relation OID, to notice relations created later.
 */
export function catalogQuery(mapping: MappingView): string {
  const tables = new Set<string>();
  for (const field of mapping.fields.keys()) {
    const name = columnNameOf(field);
    if (name) tables.add(`('${hex(name.table)}')`);
  }
  const newest = `${shadowQuery}; SELECT pg_catalog.max(oid)::pg_catalog.int8 FROM pg_catalog.pg_class`;
  if (tables.size === 0) return newest;
  return (
    "SELECT c.oid::pg_catalog.int8, a.attnum::pg_catalog.int4, n.nspname::pg_catalog.text, c.relname::pg_catalog.text, a.attname::pg_catalog.text, a.atttypid::pg_catalog.int8 " +
    "FROM pg_catalog.pg_attribute a JOIN pg_catalog.pg_class c ON c.oid OPERATOR(pg_catalog.=) a.attrelid JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) c.relnamespace " +
    "WHERE a.attnum OPERATOR(pg_catalog.>) 0 AND NOT a.attisdropped AND c.relkind::pg_catalog.text IN ('r', 'v', 'm', 'f', 'p') AND c.relname::pg_catalog.text IN (" +
    `SELECT pg_catalog.convert_from(pg_catalog.decode(t, 'hex'), 'UTF8') FROM (VALUES ${[...tables].join(",")}) AS m(t)); ${newest}`
  );
}

/** One row of the catalog query's first result. */
export interface CatalogRow {
  tableOid: number;
  attributeNumber: number;
  schema: string;
  table: string;
  column: string;
  /** The column's type OID (absent in catalogs made before types were looked up: treated as unknown). */
  typeOid?: number;
}

/** text and varchar: their values are their text form (a user id compares as it is). */
const textTypeOids = new Set([25, 1043]);

/** Session-private schemas: a client can create relations there with any name (CREATE TEMP TABLE users ...). */
const privateSchema = /^pg_(toast_)?temp_\d+$/;

/**
 * The column map from catalog rows: the schema-qualified mapping wins over `table.column`.
 * Temporary relations never map; a `table.column` name that more than one relation answers to
 * maps none of them (a client that can create tables cannot borrow a mapped name).
 */
export function resolveColumns(rows: readonly CatalogRow[], mapping: MappingView): Map<string, string> {
  const visible = rows.filter((row) => !privateSchema.test(row.schema));
  const tablesByShortName = new Map<string, Set<number>>();
  for (const row of visible) {
    const short = `${row.table}.${row.column}`;
    const tables = tablesByShortName.get(short) ?? new Set<number>();
    tables.add(row.tableOid);
    tablesByShortName.set(short, tables);
  }
  const columns = new Map<string, string>();
  for (const row of visible) {
    const qualified = `${row.schema}.${row.table}.${row.column}`;
    const short = `${row.table}.${row.column}`;
    const unambiguous = tablesByShortName.get(short)!.size === 1;
    const field = mapping.fields.has(qualified) ? qualified : unambiguous && mapping.fields.has(short) ? short : undefined;
    if (field !== undefined) columns.set(columnKey(row.tableOid, row.attributeNumber), field);
  }
  return columns;
}

/** What a session knows of the catalog: mapped columns, every column of the relations the mapping names, and the schema view of them. */
export interface Catalog {
  /** (table OID, attribute number) -> the record field it maps to. */
  columns: ColumnMap;
  /** (table OID, attribute number) -> the catalog row, for every column of a relation the mapping names. */
  rows: ReadonlyMap<string, CatalogRow>;
  schema: SchemaView;
}

export function catalogFrom(rows: readonly CatalogRow[], mapping: MappingView, shadows?: CatalogShadows): Catalog {
  const columns = resolveColumns(rows, mapping);
  const byRelation = new Map<number, CatalogRow[]>();
  for (const row of rows) {
    const list = byRelation.get(row.tableOid) ?? [];
    list.push(row);
    byRelation.set(row.tableOid, list);
  }
  const relations: RelationView[] = [];
  for (const [oid, list] of byRelation) {
    list.sort((a, b) => a.attributeNumber - b.attributeNumber);
    const subjects: Array<{ column: string; order: number }> = [];
    const categories: Array<string | undefined> = [];
    let mapped = false;
    for (const row of list) {
      const field = columns.get(columnKey(oid, row.attributeNumber));
      const mappedField = field === undefined ? undefined : mapping.fields.get(field);
      categories.push(mappedField?.category);
      if (field === undefined) continue;
      mapped = true;
      const order = mappedField?.resourceOrder ?? -1;
      if (order >= 0) subjects.push({ column: row.column, order });
    }
    subjects.sort((a, b) => a.order - b.order);
    const textual = new Set(list.filter((row) => row.typeOid !== undefined && textTypeOids.has(row.typeOid)).map((row) => row.column));
    relations.push({
      schema: list[0]!.schema,
      name: list[0]!.table,
      columns: list.map((r) => r.column),
      subjectColumns: subjects.map((s) => s.column),
      mapped,
      categories,
      textColumns: textual,
    });
  }
  relations.sort((a, b) => (`${a.schema}.${a.name}` < `${b.schema}.${b.name}` ? -1 : 1));
  return { columns, rows: new Map(rows.map((row) => [columnKey(row.tableOid, row.attributeNumber), row])), schema: schemaView(relations, shadows) };
}
