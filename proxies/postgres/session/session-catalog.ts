import { BackendCode, FrontendCode } from "../../../protocols/postgres/codes";
import { decodeDataRow, newRowValues } from "../../../protocols/postgres/data-row";
import { decodeErrorFields, ErrorField } from "../../../protocols/postgres/error-response";
import { encodeQuery } from "../../../protocols/postgres/query";
import { decodeReadyForQuery } from "../../../protocols/postgres/ready-for-query";
import { ProtocolError } from "../../../protocols/postgres/wire";
import { emptySchemaView } from "../analysis/schema-view";
import { catalogFrom, catalogQuery, type Catalog, type CatalogRow } from "../column-catalog";
import { shadowsFrom } from "../catalog-shadows";
import type { MappingView, RowDecider } from "../../../exports/row-decider";
import type { Connection } from "./connection";
import type { ExpectationQueue } from "./expectation-queue";
import type { InternalQuery } from "./expectations";

const internalQueryTimeoutMs = 10_000;
/** Rows of the proxy's own catalog query kept at most (the mapping names far fewer columns). */
const maxCatalogRows = 100_000;

/**
 * The connection's view of the mapped columns: looked up with a query of the proxy's own on the
 * client's connection (its answer never reaches the client), and looked up again, at an idle
 * moment, once it may be stale (DDL, a relation newer than the lookup, a new mapping).
 */
export class SessionCatalog {
  current: Catalog = { columns: new Map(), rows: new Map(), schema: emptySchemaView };
  /** Changes whenever `current` does (plans made from an older catalog are dropped). */
  version = 0;
  private mappingKey = "";
  private newestRelation = 0;
  private stale = true;
  private pending?: { timer: NodeJS.Timeout; fail(error: Error): void };

  constructor(
    private readonly decider: RowDecider,
    private readonly queue: ExpectationQueue,
    private readonly connection: Pick<Connection, "phase" | "backend">,
  ) {}

  /** The catalog is looked up again only when the connection is idle, outside a transaction, before new work. */
  needsRefresh(code: number): boolean {
    if (this.connection.phase !== "ready" || (code !== FrontendCode.Query && code !== FrontendCode.Parse)) return false;
    if (!this.queue.idle) return false;
    return this.stale || this.mappingKey !== this.decider.mapping().key;
  }

  /** DDL ran, or may have (the next idle moment looks the catalog up again). */
  markStale(): void {
    this.stale = true;
  }

  /** A result names a relation: one newer than the lookup makes the catalog stale. */
  noteRelation(tableOid: number): void {
    if (tableOid > this.newestRelation) this.stale = true;
  }

  async refresh(): Promise<void> {
    const mapping = this.decider.mapping();
    const sql = catalogQuery(mapping);
    const results = await this.internalQuery(sql);
    this.apply(results, mapping);
  }

  /** Whether an object name is in the catalog snapshot (a relation, schema or column the mapping names). */
  knowsName(field: number, name: string): boolean {
    for (const row of this.current.rows.values()) {
      if (field === ErrorField.Table && row.table === name) return true;
      if (field === ErrorField.Schema && row.schema === name) return true;
      if (field === ErrorField.Column && row.column === name) return true;
    }
    return false;
  }

  /** One message of the answer to the proxy's own query (at the head of the queue). */
  internalFrame(query: InternalQuery, code: number, body: Buffer): void {
    switch (code) {
      case BackendCode.RowDescription:
        query.results.push([]);
        return;
      case BackendCode.DataRow: {
        const row = decodeDataRow(body, 0, body.length, newRowValues(8));
        const values: string[] = [];
        for (let i = 0; i < row.count; i++) values.push(row.lengths[i]! < 0 ? "" : body.toString("utf8", row.starts[i]!, row.starts[i]! + row.lengths[i]!));
        const rows = query.results[query.results.length - 1];
        if (!rows) throw new ProtocolError("a row without a description in the export's catalog query");
        if (rows.length >= maxCatalogRows) throw new ProtocolError("the export's catalog query returned too many rows");
        rows.push(values);
        return;
      }
      case BackendCode.ErrorResponse:
        query.error = decodeErrorFields(body).get(ErrorField.Code) ?? "unknown";
        return;
      case BackendCode.ReadyForQuery:
        this.queue.transaction = decodeReadyForQuery(body);
        this.queue.shift();
        query.done();
        return;
      default:
        // CommandComplete, notices, parameter changes: not the client's business.
        return;
    }
  }

  /** The connection closed: a lookup under way fails. */
  close(): void {
    if (!this.pending) return;
    clearTimeout(this.pending.timer);
    this.pending.fail(new Error("connection closed"));
  }

  private apply(results: string[][][], mapping: MappingView): void {
    // [the mapped relations' columns, when the mapping names any], the shadowed catalog names, the newest relation.
    const rows: CatalogRow[] = (results.length > 2 ? results[0]! : []).map((r) => ({
      tableOid: Number(r[0]),
      attributeNumber: Number(r[1]),
      schema: r[2]!,
      table: r[3]!,
      column: r[4]!,
      typeOid: Number(r[5]),
    }));
    this.current = catalogFrom(rows, mapping, shadowsFrom(results[results.length - 2] ?? []));
    this.version++;
    this.newestRelation = Number(results[results.length - 1]?.[0]?.[0] ?? 0);
    this.mappingKey = mapping.key;
    this.stale = false;
  }

  private internalQuery(sql: string): Promise<string[][][]> {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new ProtocolError("the backend did not answer the export's catalog query in time")), internalQueryTimeoutMs);
      this.pending = { timer, fail: reject };
      const query: InternalQuery = {
        results: [],
        done: () => {
          clearTimeout(timer);
          this.pending = undefined;
          if (query.error !== undefined) reject(new ProtocolError(`the export's catalog query failed (${query.error})`));
          else resolve(query.results);
        },
      };
      this.queue.push({ kind: "internal", query });
      this.connection.backend?.write(encodeQuery(sql));
    });
  }
}
