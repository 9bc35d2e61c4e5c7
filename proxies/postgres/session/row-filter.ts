import { BackendCode } from "../../../protocols/postgres/codes";
import { valueLengthAt } from "../../../protocols/postgres/data-row";
import type { Frame, FrameList } from "../../../protocols/postgres/frames";
import type { OutputBuffer } from "../output-buffer";
import { maskFor, type ResultPlan } from "../result-plan";
import { joinedRowMask } from "../../../exports/row-masks";
import type { SessionCounts, TextDecoding } from "../types";
import type { RowDecider, RowVerdict } from "../../../exports/row-decider";
import { userIdFromValue } from "../user-id";

/**
 * Every DataRow decided under the plan of its result: the row goes only if the users it names
 * may be used, and each value keeps or loses its category under its own instance's verdict.
 * The verdicts of a run of rows are read ahead (`scan`), so the users not in memory are decided
 * together before the run is sent.
 */
export class RowFilter {
  /** The plan of the result whose rows are coming; undefined: none of them is sent. */
  plan?: ResultPlan;
  /** Rows of the current result the client received (CommandComplete's count, row limits). */
  rowsSent = 0;
  /** Users of the rows `scan` read last whose verdicts are not in memory. */
  readonly missingUsers = new Set<string>();
  /** The row `scan` reads, ahead of the one being handled (reused, not one per row). */
  private readonly scanCursor: Frame = { code: 0, start: 0, bodyStart: 0, end: 0 };
  /** Verdicts loaded for the chunk's `missingUsers`, kept until its rows are sent. */
  private readonly loadedVerdicts = new Map<string, RowVerdict>();
  /** Per frame of the chunk being handled: the row's user as `scan` read it ("" for none; undefined: not read ahead). */
  private readonly chunkUsers: Array<string | undefined> = [];
  /** Per frame of the chunk being handled: the row's verdict when `scan` found it in memory. */
  private readonly chunkRowVerdicts: Array<RowVerdict | undefined> = [];
  /** Frames of the last chunk `scan` wrote an entry for: emptied by `startChunk` (the arrays are kept, not reallocated per chunk). */
  private chunkEntries = 0;

  constructor(
    private readonly decider: RowDecider,
    private readonly userIds: TextDecoding,
    private readonly counts: SessionCounts,
  ) {}

  /** A new chunk of the backend's messages: what was read ahead for the last one goes. */
  startChunk(): void {
    if (this.loadedVerdicts.size > 0) this.loadedVerdicts.clear();
    for (let i = 0; i < this.chunkEntries; i++) {
      this.chunkUsers[i] = undefined;
      this.chunkRowVerdicts[i] = undefined;
    }
    this.chunkEntries = 0;
  }

  /**
   * Verdicts for the rows from `from` on, until the next message that is not a DataRow: those
   * in memory beside each row (so they cannot expire before their rows are sent), the users of
   * the others into `missingUsers`, to be loaded. One look-up per row. Returns the last row's index.
   */
  scan(bytes: Buffer, frames: FrameList, from: number): number {
    const plan = this.plan!;
    const missing = this.missingUsers;
    // Only when something is in it: clearing a Set allocates a new table, once per transaction otherwise.
    if (missing.size > 0) missing.clear();
    // Entries for every frame of the chunk (the arrays only grow), emptied again by the next `startChunk`.
    while (this.chunkUsers.length < frames.count) {
      this.chunkUsers.push(undefined);
      this.chunkRowVerdicts.push(undefined);
    }
    this.chunkEntries = Math.max(this.chunkEntries, frames.count);
    let i = from;
    for (; i < frames.count && frames.code(i) === BackendCode.DataRow; i++) {
      if (plan.groups.length === 0) continue;
      const row = frames.read(i, this.scanCursor);
      if (plan.groups.length > 1) {
        for (const group of plan.groups) {
          const userId = this.userOf(bytes, row, plan, group);
          if (userId !== undefined && !this.decider.verdict(userId)) missing.add(userId);
        }
        continue;
      }
      const userId = this.userOf(bytes, row, plan, plan.groups[0]!);
      this.chunkUsers[i] = userId ?? "";
      if (userId === undefined) continue;
      const verdict = this.decider.verdict(userId);
      this.chunkRowVerdicts[i] = verdict;
      if (!verdict) missing.add(userId);
    }
    return i - 1;
  }

  /** The missing users were decided: their verdicts are kept for this chunk's rows. */
  keepLoaded(userIds: readonly string[]): void {
    for (const userId of userIds) {
      const verdict = this.decider.verdict(userId);
      if (verdict) this.loadedVerdicts.set(userId, verdict);
    }
  }

  /** The DataRow `frame`, the chunk's `frameIndex`th message: sent whole, masked, or dropped. */
  dataRow(bytes: Buffer, frame: Frame, frameIndex: number, out: OutputBuffer): void {
    this.counts.rowsIn++;
    const plan = this.plan;
    if (plan?.passAll) {
      this.counts.rowsKept++;
      this.rowsSent++;
      out.pushRange(bytes, frame.start, frame.end);
      return;
    }
    // A row whose shape is not the plan's is not decided by it; a result no instance's user decides is not shown.
    if (!plan || plan.groups.length === 0 || frame.end - frame.bodyStart < 2 || bytes.readInt16BE(frame.bodyStart) !== plan.columns.length) {
      this.counts.rowsDropped++;
      return;
    }
    const mask = plan.groups.length === 1 ? this.oneGroupMask(bytes, frame, frameIndex, plan) : this.groupsMask(bytes, frame, plan);
    if (!mask) {
      this.counts.rowsDropped++;
      return;
    }
    this.counts.rowsKept++;
    this.rowsSent++;
    if (mask.whole) {
      out.pushRange(bytes, frame.start, frame.end);
      return;
    }
    this.counts.valuesNulled += mask.nulled;
    out.pushMaskedRow(bytes, frame.start, frame.end, mask.keep);
  }

  /** The verdict of a user this chunk needs: read ahead with its row, loaded for the chunk, or in memory. */
  private verdictOf(userId: string): RowVerdict | undefined {
    return this.loadedVerdicts.get(userId) ?? this.decider.verdict(userId);
  }

  /** One instance decides every value: the row goes if its user may be used. */
  private oneGroupMask(bytes: Buffer, frame: Frame, frameIndex: number, plan: ResultPlan) {
    const scanned = this.chunkUsers[frameIndex];
    const userId = scanned !== undefined ? scanned || undefined : this.userOf(bytes, frame, plan, plan.groups[0]!);
    const verdict = userId === undefined ? undefined : (this.chunkRowVerdicts[frameIndex] ?? this.verdictOf(userId));
    if (!verdict?.allowed) return undefined;
    return maskFor(plan, verdict);
  }

  /** Several instances (a join): each value under its own instance's verdict (exports/row-masks.ts). */
  private groupsMask(bytes: Buffer, frame: Frame, plan: ResultPlan) {
    return joinedRowMask(plan, {
      userOf: (group) => this.userOf(bytes, frame, plan, plan.groups[group]!),
      verdictOf: (userId) => this.verdictOf(userId),
      allNull: (group) => this.groupAllNull(bytes, frame, plan, group),
    });
  }

  /** Whether every value of one instance in this row is NULL. */
  private groupAllNull(bytes: Buffer, frame: Frame, plan: ResultPlan, group: number): boolean {
    for (let column = 0; column < plan.groupOf.length; column++) {
      if (plan.groupOf[column] !== group) continue;
      const at = valueLengthAt(bytes, frame.bodyStart, frame.end, column);
      if (at < 0 || bytes.readInt32BE(at) !== -1) return false;
    }
    return true;
  }

  /** The user a row names in one group's resource-context columns (first non-empty). */
  private userOf(bytes: Buffer, frame: Frame, plan: ResultPlan, columns: readonly number[]): string | undefined {
    for (const column of columns) {
      const at = valueLengthAt(bytes, frame.bodyStart, frame.end, column);
      if (at < 0) continue;
      const description = plan.columns[column]!;
      const userId = userIdFromValue(bytes, at + 4, bytes.readInt32BE(at), description.typeOid, description.format, this.userIds);
      if (userId !== undefined && userId !== "") return userId;
    }
    return undefined;
  }
}
