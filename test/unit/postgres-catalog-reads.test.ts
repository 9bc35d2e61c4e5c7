import { before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { readsOnlyCatalogs, type CatalogShadows } from "../../proxies/postgres/analysis/catalog-reads";
import { loadSqlParser, nodeType, parseStatements } from "../../proxies/postgres/analysis/sql-parser";
import { analyzeQuery } from "../../proxies/postgres/analysis/statement-analysis";
import { schemaView } from "../../proxies/postgres/analysis/schema-view";
import { shadowsFrom } from "../../proxies/postgres/catalog-shadows";

const none: CatalogShadows = shadowsFrom([]);

function catalogOnly(sql: string, shadows: CatalogShadows | undefined): boolean {
  const [statement] = parseStatements(sql);
  const typed = nodeType(statement!.node);
  assert.equal(typed?.[0], "SelectStmt", sql);
  return readsOnlyCatalogs(typed![1], shadows);
}

describe("PostgreSQL exports: which statements read only the system catalogs", () => {
  before(() => loadSqlParser());

  test("what psql, pgjdbc and ORMs send to browse the schema is a catalog read", () => {
    const browsing = [
      // psql \d users (first step), as psql 15 sends it
      "SELECT c.oid, n.nspname, c.relname FROM pg_catalog.pg_class c LEFT JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace WHERE c.relname OPERATOR(pg_catalog.~) '^(users)$' COLLATE pg_catalog.default AND pg_catalog.pg_table_is_visible(c.oid) ORDER BY 2, 3",
      "SELECT a.attname, pg_catalog.format_type(a.atttypid, a.atttypmod), (SELECT pg_catalog.pg_get_expr(d.adbin, d.adrelid, true) FROM pg_catalog.pg_attrdef d WHERE d.adrelid = a.attrelid AND d.adnum = a.attnum AND a.atthasdef), a.attnotnull FROM pg_catalog.pg_attribute a WHERE a.attrelid = '16384' AND a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attnum",
      "SELECT table_name, column_name FROM information_schema.columns WHERE table_name = 'users'",
      "SELECT n.nspname, c.relname, CASE c.relkind WHEN 'r' THEN 'table' END FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE c.relkind IN ('r','p') AND n.nspname !~ '^pg_' ORDER BY 1",
      "SELECT row_number() OVER (PARTITION BY a.attrelid ORDER BY a.attnum) AS attnum, a.atttypid::regtype::text FROM pg_catalog.pg_attribute a",
      "WITH t AS (SELECT relname FROM pg_catalog.pg_class) SELECT * FROM t WHERE relname BETWEEN 'a' AND 'z'",
      "SELECT i.indexrelid, information_schema._pg_expandarray(i.indkey) FROM pg_catalog.pg_index i",
      "SELECT current_schema(), session_user, version()",
      "SELECT 1",
    ];
    for (const sql of browsing) assert.equal(catalogOnly(sql, none), true, sql);
  });

  test("a statement that reaches any other relation, or data through the catalog, is not", () => {
    const notCatalog = [
      "SELECT email FROM users",
      "SELECT relname, (SELECT email FROM users LIMIT 1) FROM pg_catalog.pg_class",
      "SELECT c.relname FROM pg_catalog.pg_class c WHERE EXISTS (SELECT 1 FROM public.users u WHERE u.email LIKE 'a%')",
      // statistics, large objects and statement texts hold values
      "SELECT most_common_vals FROM pg_catalog.pg_stats WHERE tablename = 'users'",
      "SELECT histogram_bounds FROM pg_stats",
      "SELECT stavalues1 FROM pg_statistic",
      "SELECT stxdmcv FROM pg_catalog.pg_statistic_ext_data",
      "SELECT most_common_vals FROM pg_stats_ext_exprs",
      "SELECT data FROM pg_catalog.pg_largeobject",
      "SELECT query FROM pg_stat_activity",
      "SELECT statement FROM pg_prepared_statements",
      "SELECT setconfig FROM pg_catalog.pg_db_role_setting",
      "SELECT * FROM information_schema.user_mapping_options",
      // session state a function can set from a value: settings, advisory locks, statistics counters, cached plans' texts
      "SELECT current_setting('application_name')",
      "SELECT setting FROM pg_settings WHERE name = 'application_name'",
      "SELECT objid FROM pg_catalog.pg_locks WHERE locktype = 'advisory'",
      "SELECT seq_scan FROM pg_stat_user_tables",
      "SELECT n_tup_fetch FROM pg_catalog.pg_stat_xact_user_tables",
      "SELECT pg_catalog.pg_stat_get_numscans('users'::regclass)",
      "SELECT ident FROM pg_backend_memory_contexts",
      // an advisory lock an earlier statement took keyed by a value: unlocking or trying the key says it is held
      "SELECT string_agg(pg_catalog.chr(c), '' ORDER BY i) FROM generate_series(1, 40) i, generate_series(32, 126) c WHERE pg_catalog.pg_advisory_unlock(i, c)",
      "SELECT pg_catalog.pg_try_advisory_lock(110)",
      // the random generator an earlier statement seeded with a value (setseed) repeats that seed's sequence
      "SELECT pg_catalog.random()",
      "SELECT pg_catalog.array_shuffle(ARRAY[1, 2, 3])",
      // cursor and prepared statement texts: application code can open a cursor over text that embeds a value
      "SELECT name, statement FROM pg_catalog.pg_cursor()",
      "SELECT statement FROM pg_catalog.pg_prepared_statement()",
      // functions that run text as a statement, or read tables, files, large objects, statement texts
      "SELECT pg_catalog.query_to_xml('select email from users', true, true, '')",
      "SELECT query_to_xml('select email from users', true, true, '')",
      "SELECT pg_catalog.table_to_xml('users', true, true, '')",
      "SELECT * FROM pg_catalog.ts_stat('select to_tsvector(email) from users')",
      "SELECT pg_catalog.pg_read_file('/etc/passwd')",
      "SELECT pg_catalog.lo_get(1234)",
      "SELECT * FROM pg_catalog.pg_stat_get_activity(NULL)",
      "SELECT * FROM pg_catalog.pg_logical_slot_peek_changes('s', NULL, NULL)",
      // names that may resolve outside the catalog
      "SELECT leak()",
      "SELECT public.format_type(1, 1)",
      "SELECT x FROM pg_catalog.pg_class, accounts",
      "SELECT '(1)'::users",
      "SELECT 1 FROM pg_catalog.pg_class WHERE relname OPERATOR(public.=) 'x'",
      "SELECT 1 FROM pg_catalog.pg_class WHERE relname @@@ 'x'",
      "SELECT * FROM app.pg_catalog.pg_class",
      // WITH names are in scope only where SQL says: the later name reaches a real table
      "WITH a AS (SELECT * FROM b), b AS (SELECT relname FROM pg_catalog.pg_class) SELECT * FROM a",
      "SELECT * FROM (WITH t AS (SELECT 1) SELECT * FROM t) x, t",
      // writes, locks and sampling
      "WITH t AS (DELETE FROM pg_catalog.pg_class RETURNING relname) SELECT * FROM t",
      "SELECT relname INTO TEMP copy FROM pg_catalog.pg_class",
      "SELECT relname FROM pg_catalog.pg_class FOR UPDATE",
      "SELECT relname FROM pg_catalog.pg_class TABLESAMPLE SYSTEM (10)",
    ];
    for (const sql of notCatalog) assert.equal(catalogOnly(sql, none), false, sql);
  });

  test("a name another schema defines is not trusted unqualified; without the lookup nothing is a catalog read", () => {
    const shadows = shadowsFrom([
      ["f", "format_type"],
      ["o", "~"],
      ["t", "text"],
      ["r", "pg_class"],
      ["x", "get_raw_page"],
      ["a", "contacts_of"],
    ]);
    // Attribute notation calls a function of the row when the row has no such column.
    assert.equal(catalogOnly("SELECT c.contacts_of FROM pg_catalog.pg_class c", shadows), false);
    assert.equal(catalogOnly("SELECT (c).contacts_of FROM pg_catalog.pg_class c", shadows), false);
    assert.equal(catalogOnly("SELECT c.contacts_of FROM pg_catalog.pg_class c", none), true, "no such function: a column");
    assert.equal(catalogOnly("SELECT c.relname, (c).relkind FROM pg_catalog.pg_class c", shadows), true);
    assert.equal(catalogOnly("SELECT format_type(1, 1)", shadows), false);
    assert.equal(catalogOnly("SELECT pg_catalog.format_type(1, 1)", shadows), true);
    assert.equal(catalogOnly("SELECT 1 FROM pg_catalog.pg_namespace WHERE nspname ~ 'x'", shadows), false);
    assert.equal(catalogOnly("SELECT 1 FROM pg_catalog.pg_namespace WHERE nspname OPERATOR(pg_catalog.~) 'x'", shadows), true);
    assert.equal(catalogOnly("SELECT 'x'::text", shadows), false);
    assert.equal(catalogOnly("SELECT 'x'::pg_catalog.text", shadows), true);
    assert.equal(catalogOnly("SELECT relname FROM pg_class", shadows), false);
    assert.equal(catalogOnly("SELECT relname FROM pg_catalog.pg_class", shadows), true);
    assert.equal(catalogOnly("SELECT pg_catalog.get_raw_page('users', 0)", shadows), false, "an extension's function installed in pg_catalog");
    // Objects created in the catalog schemas after initdb (by an extension or a DBA): a view over users, an operator, a type.
    const added = shadowsFrom([
      ["x", "user_contacts"],
      ["x", "==="],
      ["x", "=="],
      ["x", "email_type"],
    ]);
    assert.equal(catalogOnly("SELECT * FROM information_schema.user_contacts", added), false);
    assert.equal(catalogOnly("SELECT * FROM pg_catalog.user_contacts", added), false);
    assert.equal(catalogOnly("SELECT 1 FROM pg_catalog.pg_class WHERE relname OPERATOR(pg_catalog.===) 'x'", added), false);
    assert.equal(catalogOnly("SELECT 'x'::pg_catalog.email_type", added), false);
    assert.equal(catalogOnly("SELECT c.user_contacts FROM pg_catalog.pg_class c", added), false, "attribute notation calling an added function");
    assert.equal(catalogOnly("SELECT * FROM information_schema.tables", added), true);
    assert.equal(catalogOnly("SELECT 1", undefined), false);
  });

  test("the analysis gives a catalog read the catalog shape, and every other statement its own", () => {
    const schema = schemaView([{ schema: "public", name: "users", columns: ["id", "email"], subjectColumns: ["id"], mapped: true }], none);
    const policy = { allowWrites: false, strict: false };
    const shapeOf = (sql: string) => {
      const effect = analyzeQuery(sql, schema, policy).statements[0]!;
      return "shape" in effect ? effect.shape : undefined;
    };
    assert.equal(shapeOf("SELECT relname FROM pg_catalog.pg_class")?.catalog, true);
    assert.equal(shapeOf("SELECT id, email FROM users")?.catalog, undefined);
    assert.equal(shapeOf("DECLARE c CURSOR FOR SELECT relname FROM pg_catalog.pg_class")?.catalog, true);
    // The same text before the session's lookup: no shadows known, so not a catalog read.
    const before = analyzeQuery("SELECT relname FROM pg_catalog.pg_class", schemaView([]), policy).statements[0]!;
    assert.equal("shape" in before ? before.shape?.catalog : undefined, undefined);
  });
});
