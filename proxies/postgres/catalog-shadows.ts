import { unqualifiedFunctions, unqualifiedOperators, unqualifiedTypes, type CatalogShadows } from "./analysis/catalog-reads";

const elsewhere = "n.nspname::pg_catalog.text OPERATOR(pg_catalog.<>) ALL ('{pg_catalog,information_schema}'::pg_catalog.text[])";
const inCatalog = "n.nspname::pg_catalog.text OPERATOR(pg_catalog.=) ANY ('{pg_catalog,information_schema}'::pg_catalog.text[])";
const added = (alias: string) => `${alias}.oid OPERATOR(pg_catalog.>=) '16384'::pg_catalog.oid`;
const anyOf = (expression: string, names: ReadonlySet<string>) => `${expression} OPERATOR(pg_catalog.=) ANY ('{${[...names].join(",")}}'::pg_catalog.text[])`;

/**
 * The proxy's lookup of what shadows the catalog names a client may write unqualified (see
 * analysis/catalog-reads.ts): one row per (kind, name). Every operator is qualified, so nothing a
 * client defined can change the answer. Usually no row at all.
 */
export const shadowQuery =
  "SELECT 'f'::pg_catalog.text, p.proname::pg_catalog.text FROM pg_catalog.pg_proc p JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) p.pronamespace " +
  `WHERE ${elsewhere} AND ${anyOf("p.proname::pg_catalog.text", unqualifiedFunctions)} ` +
  "UNION ALL SELECT 'o', o.oprname::pg_catalog.text FROM pg_catalog.pg_operator o JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) o.oprnamespace " +
  `WHERE ${elsewhere} AND ${anyOf("o.oprname::pg_catalog.text", unqualifiedOperators)} ` +
  "UNION ALL SELECT 't', t.typname::pg_catalog.text FROM pg_catalog.pg_type t JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) t.typnamespace " +
  `WHERE ${elsewhere} AND ${anyOf("t.typname::pg_catalog.text", unqualifiedTypes)} ` +
  "UNION ALL SELECT 'r', c.relname::pg_catalog.text FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) c.relnamespace " +
  `WHERE ${elsewhere} AND pg_catalog.starts_with(c.relname::pg_catalog.text, 'pg_') ` +
  // Created after initdb (FirstNormalObjectId): by an extension or a DBA, not by PostgreSQL.
  `UNION ALL SELECT 'x', p.proname::pg_catalog.text FROM pg_catalog.pg_proc p JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) p.pronamespace WHERE ${inCatalog} AND ${added("p")} ` +
  `UNION ALL SELECT 'x', o.oprname::pg_catalog.text FROM pg_catalog.pg_operator o JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) o.oprnamespace WHERE ${inCatalog} AND ${added("o")} ` +
  `UNION ALL SELECT 'x', t.typname::pg_catalog.text FROM pg_catalog.pg_type t JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) t.typnamespace WHERE ${inCatalog} AND ${added("t")} ` +
  `UNION ALL SELECT 'x', c.relname::pg_catalog.text FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) c.relnamespace WHERE ${inCatalog} AND ${added("c")} ` +
  "UNION SELECT 'a', p.proname::pg_catalog.text FROM pg_catalog.pg_proc p JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) p.pronamespace " +
  `WHERE ${elsewhere} AND p.pronargs OPERATOR(pg_catalog.>=) 1 AND p.pronargs OPERATOR(pg_catalog.-) p.pronargdefaults OPERATOR(pg_catalog.<=) 1`;

/** The shadows from the lookup's rows (kind, name). */
export function shadowsFrom(rows: readonly string[][]): CatalogShadows {
  const of = (kind: string) => new Set(rows.filter((row) => row[0] === kind).map((row) => row[1]!));
  return { functions: of("f"), operators: of("o"), types: of("t"), relations: of("r"), added: of("x"), attributeFunctions: of("a") };
}
