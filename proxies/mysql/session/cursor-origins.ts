import type { ColumnDefinition } from "../../../protocols/mysql/column-definition";

/**
 * The origins of a prepared statement's result columns, as the server described them at
 * COM_STMT_PREPARE, for the definitions of an execute. MariaDB materializes a cursor's rows in
 * a temporary table, and the definitions it sends when it opens the cursor name an aliased
 * column's alias as its `org_name` (`users.id AS warden_user_0` comes back with org_name
 * `warden_user_0`), where the prepare's definitions (and an execute without cursor) name `id`.
 * Only that difference is taken back from the prepare's definitions: a column whose name,
 * schema, table, org_table and type are the prepare's, and whose org_name is its own name. Any
 * other difference leaves the execute's definition as it is, and the plan checks it as usual
 * (a column it cannot attribute is NULL).
 */
export function withPreparedOrigins(columns: ColumnDefinition[], prepared: readonly ColumnDefinition[] | undefined): ColumnDefinition[] {
  if (!prepared || prepared.length !== columns.length) return columns;
  return columns.map((column, i) => {
    const origin = prepared[i]!;
    const aliasAsOrigin =
      column.orgName !== origin.orgName &&
      column.orgName === column.name &&
      column.name === origin.name &&
      column.schema === origin.schema &&
      column.table === origin.table &&
      column.orgTable === origin.orgTable &&
      column.type === origin.type;
    return aliasAsOrigin ? { ...column, orgName: origin.orgName } : column;
  });
}
