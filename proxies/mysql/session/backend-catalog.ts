import { Capability, hasCapability } from "../../../protocols/mysql/capabilities";
import { decodeColumnCount } from "../../../protocols/mysql/column-count";
import { Command } from "../../../protocols/mysql/commands";
import { isErrPacket } from "../../../protocols/mysql/err-packet";
import { isOkPacket } from "../../../protocols/mysql/ok-packet";
import { isResultsetEnd } from "../../../protocols/mysql/resultset-end";
import { newRowValues } from "../../../protocols/mysql/row-values";
import { decodeTextRow } from "../../../protocols/mysql/text-row";
import type { MappingView } from "../../../exports/row-decider";
import type { PacketChannel } from "./packet-channel";

/** The server's own databases: no client creates tables there, and their tables (performance_schema.users) never take a `table.column` mapping. */
const systemSchemas = new Set(["information_schema", "performance_schema", "mysql", "sys"]);

/** A string literal for the proxy's own query: hex, so no name can change the statement. */
const hexLiteral = (text: string) => `X'${Buffer.from(text, "utf8").toString("hex")}'`;

/**
 * Which relations the mapping's `table.column` and `database.table.column` fields name, as the
 * server's catalog (information_schema.TABLES) says, looked up on the client's backend connection
 * right after login and again when the mapping changes. A mapped field applies to a column only
 * when its relation is a base table: `database.table` exactly; `table` only when exactly one
 * base table of that name exists in all databases but the server's own (performance_schema has
 * a `users` table) and no view does. A client that can create a
 * view or table named like a mapped table in another database (`other.users` over `app.users`,
 * columns swapped) cannot borrow the mapping. Names are compared as the server reports them.
 */
export class BackendCatalog {
  /** The mapping key the lookup was made for ("" before the first). */
  key = "";
  private baseTables = new Set<string>();
  /** Per table name: how many base tables, and whether a view or another kind has that name too. */
  private byName = new Map<string, { base: number; other: boolean; schema: string }>();

  /** Whether a result column of (`schema`, `table`) may take the mapping's field named `recordField`. */
  maps(recordField: string, schema: string, table: string): boolean {
    const parts = recordField.split(".");
    if (parts.length === 3) return parts[0] === schema && parts[1] === table && this.baseTables.has(`${schema}.${table}`);
    const named = this.byName.get(table);
    return named !== undefined && named.base === 1 && !named.other && named.schema === schema;
  }

  /** Looks the mapping's relations up (the backend must be idle: between commands). On an error nothing maps (fail closed). */
  async refresh(backend: PacketChannel, capabilities: number, mapping: MappingView): Promise<void> {
    this.key = mapping.key;
    this.baseTables = new Set();
    this.byName = new Map();
    const names = new Set<string>();
    for (const recordField of mapping.fields.keys()) {
      const parts = recordField.split(".");
      if (parts.length >= 2) names.add(parts[parts.length - 2]!);
    }
    if (names.size === 0) return;
    const sql = `SELECT TABLE_SCHEMA, TABLE_NAME, TABLE_TYPE FROM information_schema.TABLES WHERE TABLE_NAME IN (${[...names].map(hexLiteral).join(", ")})`;
    backend.sequence = 0;
    await backend.send(Buffer.concat([Buffer.from([Command.Query]), Buffer.from(sql, "utf8")]));
    const first = (await backend.next()).payload;
    if (isErrPacket(first) || isOkPacket(first)) return;
    const { columnCount } = decodeColumnCount(first, capabilities);
    for (let i = 0; i < columnCount; i++) await backend.next();
    if (!hasCapability(capabilities, Capability.DeprecateEof)) await backend.next();
    const values = newRowValues(3);
    const rows: Array<[string, string, string]> = [];
    for (;;) {
      const payload = (await backend.next()).payload;
      if (isErrPacket(payload)) return;
      if (isResultsetEnd(payload, capabilities)) break;
      decodeTextRow(payload, columnCount, values);
      const text = (i: number) => (values.lengths[i]! < 0 ? "" : payload.toString("utf8", values.starts[i]!, values.starts[i]! + values.lengths[i]!));
      rows.push([text(0), text(1), text(2)]);
    }
    // Only names that were asked for count (the server's comparison may be case-insensitive).
    for (const [schema, table, type] of rows) {
      if (!names.has(table) || systemSchemas.has(schema.toLowerCase())) continue;
      const named = this.byName.get(table) ?? { base: 0, other: false, schema };
      if (type === "BASE TABLE") {
        named.base++;
        named.schema = schema;
        this.baseTables.add(`${schema}.${table}`);
      } else named.other = true;
      this.byName.set(table, named);
    }
  }
}
