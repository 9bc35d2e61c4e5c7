import type { Frame } from "../../../protocols/postgres/frames";
import { decodeRowDescription, encodeRowDescription, type ColumnDescription } from "../../../protocols/postgres/row-description";
import { equalBytes } from "../../../protocols/postgres/wire";
import type { ResultShape } from "../analysis/statement-analysis";
import { columnKey } from "../column-catalog";
import type { OutputBuffer } from "../output-buffer";
import { planResult, type ResultPlan } from "../result-plan";
import type { RowDecider } from "../../../exports/row-decider";
import { bodyOf } from "./frame-body";
import type { RecentStatements } from "./recent-statements";
import type { SessionCatalog } from "./session-catalog";

/**
 * Descriptions remembered per connection: at most this many, and this many bytes of them (each
 * also has a plan and perhaps a rewritten copy, about twice as much again). Past either, all go.
 */
const maxDescribedResults = 256;
const maxDescribedBytes = 256 * 1024;
/** text: what a column whose values are always NULL is described as. */
const textTypeOid = 25;

/** A RowDescription as the proxy handles it: its plan, the newest relation it names, what the client may see of it. */
export interface DescribedResult {
  plan: ResultPlan;
  /** The largest table OID among its columns: one newer than the catalog lookup makes the catalog stale. */
  newestTable: number;
  /** The RowDescription the client gets while its names stay `clientNamesVersion`: `rewritten`, or the backend's own bytes when undefined. */
  forClient?: { clientNamesVersion: number; rewritten: Buffer | undefined };
}

/**
 * The backend's RowDescriptions: each one's plan (which column decides what), remembered by its
 * bytes so a statement run again reuses its plan, and rewritten for the client (hidden columns
 * left out, labels and metadata it may not see replaced).
 */
export class RowDescriptions {
  /** RowDescriptions by their bytes: a statement run again (pgbench, prepared statements) reuses its plan and masks. */
  private readonly described = new Map<string, DescribedResult>();
  private describedBytes = 0;
  /** The last RowDescription's bytes: compared first, before a look-up that would read them into a string. */
  private lastDescribed?: { bytes: Buffer; shape: ResultShape | undefined; result: DescribedResult };
  /** The mapping and column map the described results were made with; either changing clears them. */
  private describedMappingKey = "";
  private describedCatalogVersion = -1;

  constructor(
    private readonly decider: RowDecider,
    private readonly catalog: SessionCatalog,
    private readonly recent: RecentStatements,
  ) {}

  /** The plan of the RowDescription `frame` for rows of `shape`. */
  resultOf(bytes: Buffer, frame: Frame, shape: ResultShape | undefined): DescribedResult {
    const mapping = this.decider.mapping();
    if (mapping.key !== this.describedMappingKey || this.catalog.version !== this.describedCatalogVersion) {
      this.described.clear();
      this.describedBytes = 0;
      this.lastDescribed = undefined;
      this.describedMappingKey = mapping.key;
      this.describedCatalogVersion = this.catalog.version;
    }
    const last = this.lastDescribed;
    if (
      last &&
      (last.shape === shape || (last.shape !== undefined && shape !== undefined && last.shape.key === shape.key)) &&
      equalBytes(last.bytes, 0, last.bytes.length, bytes, frame.bodyStart, frame.end)
    )
      return last.result;
    const key = shapeKey(shape) + bytes.toString("latin1", frame.bodyStart, frame.end);
    let result = this.described.get(key);
    if (!result) {
      const plan = planResult(decodeRowDescription(bodyOf(bytes, frame)), shape, this.catalog.current, mapping);
      result = { plan, newestTable: plan.columns.reduce((newest, column) => Math.max(newest, column.tableOid), 0) };
      if (this.described.size >= maxDescribedResults || this.describedBytes + key.length > maxDescribedBytes) {
        this.described.clear();
        this.describedBytes = 0;
      }
      if (key.length <= maxDescribedBytes) {
        this.described.set(key, result);
        this.describedBytes += key.length;
      }
    }
    this.lastDescribed = { bytes: Buffer.from(bodyOf(bytes, frame)), shape, result };
    return result;
  }

  /** The RowDescription as the client may see it (hidden columns left out, labels and metadata it may not see replaced), remembered until the client's recent statements change (for good when no label depends on them). */
  push(bytes: Buffer, frame: Frame, result: DescribedResult, out: OutputBuffer): void {
    let forClient = result.forClient;
    if (forClient === undefined || (forClient.clientNamesVersion !== this.recent.version && forClient.clientNamesVersion !== -1)) {
      const visible = this.visibleColumns(result.plan);
      // Labels that are mapped column names or ?column? do not depend on what the client wrote: kept for good (-1).
      forClient = result.forClient = {
        clientNamesVersion: visible.askedClient ? this.recent.version : -1,
        rewritten: visible.columns ? encodeRowDescription(visible.columns) : undefined,
      };
    }
    if (forClient.rewritten) out.push(forClient.rewritten);
    else out.pushRange(bytes, frame.start, frame.end);
  }

  /**
   * The columns as the client may see them: hidden ones left out; a column whose values are
   * always NULL (unmapped, or whose instance is not known) described as text with no table,
   * attribute, size or modifier, so data cannot choose its metadata. A label crosses when the
   * client wrote it (a whole name in its statements), it is the name of a mapped column, or
   * `?column?`: server-side code can prepare a statement whose alias is a data value.
   */
  private visibleColumns(plan: ResultPlan): { columns: ColumnDescription[] | undefined; askedClient: boolean } {
    if (plan.passAll) return { columns: undefined, askedClient: false };
    let changed = false;
    let askedClient = false;
    const visible: ColumnDescription[] = [];
    plan.columns.forEach((column, index) => {
      if (plan.hidden[index]) {
        changed = true;
        return;
      }
      const recordField = column.tableOid === 0 ? undefined : this.catalog.current.columns.get(columnKey(column.tableOid, column.attributeNumber));
      const mappedName = recordField !== undefined && recordField.slice(recordField.lastIndexOf(".") + 1) === column.name;
      if (!mappedName && column.name !== "?column?") askedClient = true;
      const labelOk = mappedName || column.name === "?column?" || this.recent.wrote(column.name);
      const name = labelOk ? column.name : "?column?";
      const emptied = plan.categories[index] === undefined;
      if (!emptied && labelOk) {
        visible.push(column);
        return;
      }
      changed = true;
      visible.push(
        emptied ? { name, tableOid: 0, attributeNumber: 0, typeOid: textTypeOid, typeSize: -1, typeModifier: -1, format: column.format } : { ...column, name },
      );
    });
    return { columns: changed ? visible : undefined, askedClient };
  }
}

/** A RowDescription's plan is remembered per statement shape as well as per bytes. */
function shapeKey(shape: ResultShape | undefined): string {
  return shape ? `${shape.key}\u0000` : "-\u0000";
}
