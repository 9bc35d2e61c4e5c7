import type { CatalogShadows } from "./catalog-reads";

/** A relation whose name the mapping uses, as the catalog describes it. */
export interface RelationView {
  schema: string;
  name: string;
  /** Its columns in order (what `*` expands to), by name. */
  columns: readonly string[];
  /** Its resource-context columns in mapping order (the first non-empty names the row's user). */
  subjectColumns: readonly string[];
  /** Whether any of its columns is mapped: only then are its rows' values decided. */
  mapped: boolean;
  /** Per column (as `columns`): the category its mapping names; undefined when it has none (always emptied). */
  categories?: ReadonlyArray<string | undefined>;
  /** Columns of type text or varchar (a user id there is compared as it is). */
  textColumns?: ReadonlySet<string>;
}

/** What statement analysis needs of the catalog: the relations that carry the mapping's names. */
export interface SchemaView {
  /** Changes whenever anything below does (analyses are cached under it). */
  key: string;
  /** The relations named `name` (in `schema` when given). More than one: which is meant depends on search_path. */
  relations(name: string, schema?: string): readonly RelationView[];
  /** Resource-context column names of every mapped relation (strict mode's predicates may use only these). */
  subjectColumnNames: ReadonlySet<string>;
  /** Catalog names other schemas shadow; undefined before the lookup (no statement is a catalog read then). */
  shadows?: CatalogShadows;
}

export const emptySchemaView: SchemaView = { key: "", relations: () => [], subjectColumnNames: new Set() };

export function schemaView(relations: readonly RelationView[], shadows?: CatalogShadows): SchemaView {
  const byName = new Map<string, RelationView[]>();
  for (const relation of relations) {
    const list = byName.get(relation.name) ?? [];
    list.push(relation);
    byName.set(relation.name, list);
  }
  const shadowKey =
    shadows &&
    [shadows.functions, shadows.operators, shadows.types, shadows.relations, shadows.added, shadows.attributeFunctions].map((names) => [...names].sort());
  const key = JSON.stringify([
    relations.map((r) => [r.schema, r.name, r.columns, r.subjectColumns, r.mapped, r.categories ?? null, [...(r.textColumns ?? [])]]),
    shadowKey ?? null,
  ]);
  return {
    key,
    relations: (name, schema) => {
      const all = byName.get(name) ?? [];
      return schema === undefined ? all : all.filter((r) => r.schema === schema);
    },
    subjectColumnNames: new Set(relations.filter((r) => r.mapped).flatMap((r) => r.subjectColumns)),
    shadows,
  };
}
