import { nodeType, stringValue, type Node } from "./sql-parser";

/**
 * Schema browsing (docs/postgres-export.md, "Catalog statements"): a SELECT that reads only the
 * system catalogs passes unredacted, so psql `\d`, JDBC DatabaseMetaData and ORMs see the schema.
 * Every name in the statement must resolve to the catalogs, whatever the client's search_path:
 * relations qualified with pg_catalog or information_schema (or unqualified `pg_*` names no other
 * schema has), functions qualified with those schemas or from a list of built-in names, operators
 * and types likewise, and no name that another schema shadows (`CatalogShadows`, looked up with the
 * session's catalog). Catalog relations and functions that hold or reach data values are never
 * catalog reads: such a statement is decided row by row (its rows have no user, so none passes).
 */
export interface CatalogShadows {
  /** Names of the lists below that some schema other than pg_catalog and information_schema also defines. */
  functions: ReadonlySet<string>;
  operators: ReadonlySet<string>;
  types: ReadonlySet<string>;
  /** `pg_*` relation names outside the catalog schemas (an unqualified one would be ambiguous). */
  relations: ReadonlySet<string>;
  /**
   * Names of functions, operators, types and relations of the catalog schemas created after
   * initdb, by an extension (pageinspect in pg_catalog reads table pages) or a DBA (a view in
   * information_schema over a table): only what PostgreSQL itself put there is trusted.
   */
  added: ReadonlySet<string>;
  /**
   * Functions outside the catalog schemas callable with one argument: `c.name` and `(row).name`
   * call `name(c)` when c has no column of that name, found on the search_path (a function of
   * `anyelement` takes any catalog row).
   */
  attributeFunctions: ReadonlySet<string>;
}

const catalogSchemas = new Set(["pg_catalog", "information_schema"]);

/**
 * Catalog relations whose rows hold data values, or state a statement can derive from data values
 * (a function called with a value sets a setting, takes an advisory lock keyed by it, or makes a
 * statistics counter count it): column statistics (most common values, histogram bounds),
 * extended statistics data, large objects, statement texts of this and other sessions (their
 * literals; memory contexts name cached plans by their text), settings, locks, every activity and
 * I/O statistics view, password hashes and user mapping options.
 */
const valueRelationPatterns: Readonly<Record<string, RegExp>> = {
  pg_catalog:
    /^(pg_stat.*|pg_largeobject|pg_prepared_statements|pg_cursors|pg_settings|pg_file_settings|pg_db_role_setting|pg_locks|pg_backend_memory_contexts|pg_authid|pg_shadow|pg_user_mappings|pg_subscription)$/,
  information_schema: /^(user_mapping_options|_pg_user_mappings)$/,
};

/** Whether a catalog relation holds values (see above). */
export function holdsValues(schema: string, relation: string): boolean {
  return valueRelationPatterns[schema]?.test(relation) ?? true;
}

/**
 * Catalog functions that run a statement given as text, read tables, files, large objects or the
 * write-ahead log, show what `holdsValues` relations show, or read back session state an earlier
 * statement set from values (its rows dropped, its functions still ran): advisory locks keyed by
 * a value (unlocking or trying a key says whether it is held) and the random generator seeded
 * with one (setseed: random(), and from PostgreSQL 16 array_shuffle and array_sample, then repeat
 * the sequence of that seed). A call to one is never a
 * catalog read.
 */
const valueFunctions = [
  /^(query|cursor|table|schema|database)_to_xml/,
  /^(query|cursor|table|schema|database)_to_xmlschema$/,
  /^ts_(stat|rewrite)$/,
  /^(lo_|loread$|lowrite$)/,
  /^pg_(read_file|read_binary_file|ls_|stat_file|current_logfile|file_)/,
  /^pg_(logical_|replication_|create_|drop_|copy_)/,
  /^pg_stat/,
  /^(current_setting|pg_show_all_settings|pg_show_all_file_settings|pg_lock_status|pg_get_backend_memory_contexts|pg_listening_channels|pg_notification_queue_usage|pg_mcv_list_items|pg_cursor|pg_prepared_statement)$/,
  /^dblink/,
  /^pg_(try_)?advisory_/,
  /^(random|array_shuffle|array_sample)/,
];

/** Built-in function names a client may call unqualified (tools' catalog queries use these). */
export const unqualifiedFunctions: ReadonlySet<string> = new Set([
  // aggregates, window functions and scalar functions analytics use
  "abs",
  "avg",
  "ceil",
  "ceiling",
  "corr",
  "covar_pop",
  "covar_samp",
  "cume_dist",
  "date_part",
  "date_trunc",
  "every",
  "exp",
  "first_value",
  "floor",
  "lag",
  "last_value",
  "lead",
  "ln",
  "log",
  "median",
  "mod",
  "nth_value",
  "ntile",
  "percent_rank",
  "percentile_cont",
  "percentile_disc",
  "power",
  "round",
  "sign",
  "sqrt",
  "stddev",
  "stddev_pop",
  "stddev_samp",
  "to_char",
  "to_date",
  "to_timestamp",
  "trunc",
  "var_pop",
  "var_samp",
  "variance",
  "width_bucket",
  "extract",
  "date_bin",
  "age",
  "make_date",
  "justify_interval",
  "md5",
  "array_agg",
  "array_length",
  "array_lower",
  "array_position",
  "array_to_string",
  "array_upper",
  "bool_and",
  "bool_or",
  "btrim",
  "cardinality",
  "char_length",
  "coalesce",
  "col_description",
  "concat",
  "concat_ws",
  "count",
  "current_database",
  "current_schema",
  "current_schemas",
  "current_user",
  "dense_rank",
  "format",
  "format_type",
  "generate_series",
  "generate_subscripts",
  "has_any_column_privilege",
  "has_column_privilege",
  "has_database_privilege",
  "has_function_privilege",
  "has_schema_privilege",
  "has_sequence_privilege",
  "has_table_privilege",
  "has_type_privilege",
  "inet_server_port",
  "json_agg",
  "json_build_object",
  "jsonb_agg",
  "jsonb_build_object",
  "left",
  "length",
  "lower",
  "ltrim",
  "max",
  "min",
  "now",
  "obj_description",
  "oidvectortypes",
  "pg_backend_pid",
  "pg_collation_is_visible",
  "pg_describe_object",
  "pg_encoding_to_char",
  "pg_function_is_visible",
  "pg_get_constraintdef",
  "pg_get_expr",
  "pg_get_function_arguments",
  "pg_get_function_identity_arguments",
  "pg_get_function_result",
  "pg_get_functiondef",
  "pg_get_indexdef",
  "pg_get_keywords",
  "pg_get_partkeydef",
  "pg_get_ruledef",
  "pg_get_serial_sequence",
  "pg_get_statisticsobjdef",
  "pg_get_triggerdef",
  "pg_get_userbyid",
  "pg_get_viewdef",
  "pg_has_role",
  "pg_identify_object",
  "pg_index_column_has_property",
  "pg_indexes_size",
  "pg_is_in_recovery",
  "pg_opclass_is_visible",
  "pg_operator_is_visible",
  "pg_postmaster_start_time",
  "pg_relation_is_updatable",
  "pg_relation_size",
  "pg_size_pretty",
  "pg_table_is_visible",
  "pg_table_size",
  "pg_total_relation_size",
  "pg_type_is_visible",
  "position",
  "quote_ident",
  "quote_literal",
  "rank",
  "regexp_match",
  "regexp_replace",
  "replace",
  "right",
  "row_number",
  "rtrim",
  "session_user",
  "shobj_description",
  "split_part",
  "string_agg",
  "strpos",
  "substr",
  "substring",
  "sum",
  "to_regclass",
  "to_regtype",
  "trim",
  "unnest",
  "upper",
  "version",
]);

/** Operators a client may write unqualified (and those BETWEEN, IN and LIKE stand for). */
export const unqualifiedOperators: ReadonlySet<string> = new Set([
  "=",
  "<>",
  "<",
  ">",
  "<=",
  ">=",
  "~",
  "~*",
  "!~",
  "!~*",
  "~~",
  "~~*",
  "!~~",
  "!~~*",
  "||",
  "+",
  "-",
  "*",
  "/",
  "%",
  "&&",
  "@>",
  "<@",
  "->",
  "->>",
  "#>",
  "#>>",
]);
/** BETWEEN compares with these. */
const betweenOperators = ["<=", ">="];

/** Built-in type names a client may write unqualified (casts, column definitions of a set-returning function). */
export const unqualifiedTypes: ReadonlySet<string> = new Set([
  "aclitem",
  "bool",
  "bpchar",
  "bytea",
  "char",
  "date",
  "float4",
  "float8",
  "int2",
  "int2vector",
  "int4",
  "int8",
  "interval",
  "json",
  "jsonb",
  "name",
  "numeric",
  "oid",
  "oidvector",
  "pg_node_tree",
  "regclass",
  "regcollation",
  "regconfig",
  "regdictionary",
  "regnamespace",
  "regoper",
  "regoperator",
  "regproc",
  "regprocedure",
  "regrole",
  "regtype",
  "text",
  "time",
  "timestamp",
  "timestamptz",
  "timetz",
  "varchar",
  "xid",
  "xml",
]);

/**
 * Says whether a relation that is not a catalog's may be read, given its RangeVar and the
 * `{RangeVar}` wrapper that holds it (absent when the tree holds it unwrapped). Pushdown uses it
 * for the mapped tables.
 */
export type RelationHook = (rangeVar: Node, wrapper: Node | undefined) => boolean;

/**
 * Whether `select` (a SelectStmt node) reads only the system catalogs, with these shadows; with
 * `onRelation`, the relations it accepts too.
 */
export function readsOnlyCatalogs(select: Node, shadows: CatalogShadows | undefined, onRelation?: RelationHook): boolean {
  if (!shadows) return false;
  const check = new CatalogCheck(shadows, onRelation);
  return check.node("SelectStmt", select, new Set());
}

class CatalogCheck {
  constructor(
    private readonly shadows: CatalogShadows,
    private readonly onRelation?: RelationHook,
  ) {}

  /** A value below a node: each object in it is checked by its shape, wrapped (`{Type: {...}}`) or not. */
  value(value: unknown, ctes: ReadonlySet<string>): boolean {
    if (value === null || typeof value !== "object") return true;
    if (Array.isArray(value)) return value.every((child) => this.value(child, ctes));
    const typed = nodeType(value);
    if (typed && /^[A-Z]/.test(typed[0])) return this.node(typed[0], typed[1], ctes, value as Node);
    return this.fields(value as Node, ctes);
  }

  node(type: string, fields: Node, ctes: ReadonlySet<string>, wrapper?: Node): boolean {
    switch (type) {
      case "RangeVar":
        return this.relation(fields, ctes, wrapper) && this.fields(fields, ctes, true);
      case "SelectStmt":
        return this.select(fields, ctes);
      case "TypeName":
        return this.type(fields.names) && this.fields(fields, ctes);
      case "ColumnRef":
        // `c.relname`: a column, or a call of a function of c's row when c has no such column.
        return this.attributes((fields.fields as unknown[] | undefined)?.slice(1)) && this.fields(fields, ctes);
      case "A_Indirection":
        return this.attributes(fields.indirection) && this.fields(fields, ctes);
      case "RangeTableSample":
      case "IntoClause":
      case "LockingClause":
        return false;
      default:
        return this.fields(fields, ctes);
    }
  }

  /** Any object: its own names checked by shape, then everything below it. */
  private fields(object: Node, ctes: ReadonlySet<string>, relationChecked = false): boolean {
    if (!relationChecked && typeof object.relname === "string" && !this.relation(object, ctes, undefined)) return false;
    if (Array.isArray(object.funcname) && !this.func(object.funcname)) return false;
    if (typeof object.kind === "string" && object.kind.startsWith("AEXPR_") && !this.operator(object.kind, object.name)) return false;
    if (Array.isArray(object.operName) && !this.operatorName(object.operName)) return false;
    if (Array.isArray(object.useOp) && !this.operatorName(object.useOp)) return false;
    if (Array.isArray(object.names) && "typemod" in object && !this.type(object.names)) return false;
    for (const key in object) {
      if (key === "intoClause" || key === "lockingClause") return false;
      // A TypeName is held unwrapped (TypeCast, ColumnDef): known by its field's name, whatever fields it omits.
      if (key === "typeName" && !this.type((object[key] as Node | undefined)?.names)) return false;
      if (!this.value(object[key], ctes)) return false;
    }
    return true;
  }

  /** A SELECT: WITH names are in scope for the body, and for the queries of later (or, RECURSIVE, all) WITH entries. */
  private select(fields: Node, outer: ReadonlySet<string>): boolean {
    const withClause = fields.withClause as { ctes?: unknown[]; recursive?: boolean } | undefined;
    let inner = outer;
    if (withClause) {
      const ctes = (withClause.ctes ?? []).map((c) => nodeType(c)?.[1] ?? {});
      const names = ctes.map((c) => String(c.ctename ?? ""));
      for (const [i, cte] of ctes.entries()) {
        if (nodeType(cte.ctequery)?.[0] !== "SelectStmt") return false;
        const scope = new Set([...outer, ...(withClause.recursive ? names : names.slice(0, i))]);
        if (!this.value(cte, scope)) return false;
      }
      inner = new Set([...outer, ...names]);
    }
    for (const key in fields) {
      if (key === "withClause") continue;
      if (key === "intoClause" || key === "lockingClause") return false;
      if (!this.value(fields[key], inner)) return false;
    }
    return true;
  }

  private relation(rangeVar: Node, ctes: ReadonlySet<string>, wrapper: Node | undefined): boolean {
    const name = rangeVar.relname as string;
    const schema = rangeVar.schemaname as string | undefined;
    if (rangeVar.catalogname === undefined) {
      if (schema !== undefined && catalogSchemas.has(schema)) return !holdsValues(schema, name) && !this.shadows.added.has(name);
      if (schema === undefined && ctes.has(name)) return true;
      if (schema === undefined && name.startsWith("pg_") && !this.shadows.relations.has(name))
        return !holdsValues("pg_catalog", name) && !this.shadows.added.has(name);
    }
    return this.onRelation?.(rangeVar, wrapper) ?? false;
  }

  private func(nameList: unknown[]): boolean {
    const parts = nameList.map(stringValue);
    const name = parts[parts.length - 1];
    if (name === undefined || valueFunctions.some((pattern) => pattern.test(name)) || this.shadows.added.has(name)) return false;
    if (parts.length === 2) return catalogSchemas.has(parts[0] ?? "");
    return parts.length === 1 && unqualifiedFunctions.has(name) && !this.shadows.functions.has(name);
  }

  /** Field names after a row (`c.name`, `(row).name`): none may name a function attribute notation would call instead. */
  private attributes(names: unknown): boolean {
    if (!Array.isArray(names)) return true;
    return names.every((name) => {
      const text = nodeType(name)?.[0] === "String" ? stringValue(name) : undefined;
      return (
        text === undefined ||
        (!this.shadows.attributeFunctions.has(text) && !this.shadows.added.has(text) && !valueFunctions.some((pattern) => pattern.test(text)))
      );
    });
  }

  private operator(kind: string, nameList: unknown): boolean {
    if (!Array.isArray(nameList)) return false;
    if (kind.startsWith("AEXPR_BETWEEN") || kind.startsWith("AEXPR_NOT_BETWEEN"))
      return betweenOperators.every((op) => this.operatorName([{ String: { sval: op } }]));
    return this.operatorName(nameList);
  }

  private operatorName(nameList: unknown[]): boolean {
    const parts = nameList.map(stringValue);
    const name = parts[parts.length - 1];
    if (name === undefined || this.shadows.added.has(name)) return false;
    if (parts.length === 2) return parts[0] === "pg_catalog";
    return parts.length === 1 && unqualifiedOperators.has(name) && !this.shadows.operators.has(name);
  }

  private type(nameList: unknown): boolean {
    if (!Array.isArray(nameList)) return false;
    const parts = nameList.map(stringValue);
    const name = parts[parts.length - 1];
    if (name === undefined || this.shadows.added.has(name)) return false;
    if (parts.length === 2) return parts[0] === "pg_catalog";
    return parts.length === 1 && unqualifiedTypes.has(name) && !this.shadows.types.has(name);
  }
}
