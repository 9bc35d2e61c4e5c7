import type { RecordPlan } from "../decision/record-redaction";
import { documentLimits, type FieldTally, type RedactionTally } from "./types";

const otherFields = "(other fields)";

/** The running counts of one document's redaction. */
export class Tally {
  bytesIn = 0;
  bytesOut = 0;
  rowsIn = 0;
  rowsKept = 0;
  emptyLines = 0;
  private readonly dropped = new Map<string, number>();
  private readonly fields = new Map<string, FieldTally>();

  constructor(private readonly plan: RecordPlan) {}

  drop(reason: string, rows = 1): void {
    this.dropped.set(reason, (this.dropped.get(reason) ?? 0) + rows);
  }

  /** The entry of one record field; past the limit, further fields share one entry. */
  field(path: string): FieldTally {
    let entry = this.fields.get(path);
    if (entry) return entry;
    if (this.fields.size >= documentLimits.maxTalliedFields) path = otherFields;
    entry = this.fields.get(path);
    if (!entry) {
      const category = path === otherFields ? undefined : this.plan.categoryOf.get(path);
      const why =
        path === otherFields
          ? "various"
          : !this.plan.categoryOf.has(path)
            ? "not in the mapping group"
            : category === undefined
              ? "mapped to no category"
              : `category '${category}': emptied in rows whose user the purpose may not use it for`;
      entry = { category: category ?? null, kept: 0, emptied: 0, why };
      this.fields.set(path, entry);
    }
    return entry;
  }

  snapshot(): RedactionTally {
    return {
      bytesIn: this.bytesIn,
      bytesOut: this.bytesOut,
      rowsIn: this.rowsIn,
      rowsKept: this.rowsKept,
      emptyLines: this.emptyLines,
      // Sorted: the order rows were met in depends on how the document was cut (chunks, threads).
      droppedBy: Object.fromEntries([...this.dropped].sort(([a], [b]) => (a < b ? -1 : 1))),
      // fromEntries: own properties, so a field named __proto__ is counted like any other.
      fields: Object.fromEntries([...this.fields].map(([path, entry]) => [path, { ...entry }])),
    };
  }
}
