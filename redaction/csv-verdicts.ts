import type { RecordPlan } from "../decision/record-redaction";
import type { Tally } from "./tally";
import type { CsvCounts, CsvHeader, CsvVerdict, RowDecision } from "./types";

/**
 * The verdicts of one CSV document: one per distinct decision, numbered in the order they are
 * first met, with the columns its kept rows keep. Counts from any thread, by verdict id, are
 * merged here into the document's tally.
 */
export class CsvVerdicts {
  readonly all: CsvVerdict[] = [];
  private readonly byDecision = new Map<RowDecision, CsvVerdict>();
  /** Kept rows per verdict not yet counted per field (counted when the tally is read). */
  private keptSinceFlush: number[] = [];

  constructor(
    private readonly plan: RecordPlan,
    private readonly header: CsvHeader,
  ) {}

  of(decision: RowDecision): CsvVerdict {
    let verdict = this.byDecision.get(decision);
    if (!verdict) {
      const keep = new Uint8Array(this.header.names.length);
      this.header.names.forEach((name, column) => {
        const category = this.plan.categoryOf.get(name);
        keep[column] = category !== undefined && decision.categories.has(category) ? 1 : 0;
      });
      verdict = { id: this.all.length, allowed: decision.allowed, reason: decision.reason, keep };
      this.all.push(verdict);
      this.byDecision.set(decision, verdict);
    }
    return verdict;
  }

  /** Adds one run of rows' counts to the tally. */
  merge(counts: CsvCounts, tally: Tally): void {
    tally.rowsIn += counts.rowsIn;
    if (counts.noUserId > 0) tally.drop("NO_USER_ID", counts.noUserId);
    counts.rowsByVerdict.forEach((rows, id) => {
      const verdict = this.all[id];
      if (!verdict) throw new Error(`rows counted under verdict ${id}, which this document never gave`);
      if (!verdict.allowed) return tally.drop(verdict.reason, rows);
      tally.rowsKept += rows;
      this.keptSinceFlush[id] = (this.keptSinceFlush[id] ?? 0) + rows;
    });
  }

  /** Counts the fields of the kept rows merged since the last flush: kept or emptied, per column. */
  flush(tally: Tally): void {
    this.keptSinceFlush.forEach((rows, id) => {
      const { keep } = this.all[id];
      this.header.names.forEach((name, column) => {
        const entry = tally.field(name);
        if (keep[column] === 1) entry.kept += rows;
        else entry.emptied += rows;
      });
    });
    this.keptSinceFlush = [];
  }
}
