import { decodeBinaryRow, maskBinaryRow } from "../../../protocols/mysql/binary-row";
import { isErrPacket } from "../../../protocols/mysql/err-packet";
import { newRowValues, type RowValues } from "../../../protocols/mysql/row-values";
import { decodeTextRow, encodeTextRow, maskTextRow } from "../../../protocols/mysql/text-row";
import type { RowVerdict } from "../../../exports/row-decider";
import { joinedRowMask, maskFor, type RowMask } from "../../../exports/row-masks";
import { withheldWarning } from "../error-texts";
import type { MysqlResultPlan } from "../result-plan";
import { userIdOfValue } from "../row-user";
import type { PacketChannel } from "./packet-channel";
import { SessionFailure } from "./session-failure";
import type { MysqlSessionCounts, MysqlSessionDeps } from "./session-deps";

/** A text row's or binary row's first byte that ends the rows instead (EOF/OK 0xfe, ERR 0xff). */
function endsRows(payload: Buffer): boolean {
  return payload.length === 0 || payload[0] === 0xfe || isErrPacket(payload);
}

/**
 * The rows of one resultset, decided one by one under its plan: a row goes only if the users it
 * names may be used, each value keeps or loses its category under its own instance's verdict
 * (exports/row-masks.ts). Users not in memory are decided together with those of the rows
 * already received behind the row (read ahead, never sent before), and the rows wait for
 * `load`, which traces each decision before it is handed out.
 */
export class RowDecisions {
  private plan?: MysqlResultPlan;
  private binary = false;
  /** SHOW WARNINGS: the position of the Message column (replaced); undefined otherwise. */
  private diagnostics?: number;
  /** A schema read (SHOW TABLES, DESCRIBE t...): every row passes as sent. */
  private whole = false;
  private readonly values: RowValues = newRowValues();
  private readonly ahead: RowValues = newRowValues();
  /** Verdicts loaded for the rows read ahead, kept until those rows are sent (so none expires in between). */
  private readonly loaded = new Map<string, RowVerdict>();
  /** Rows still to go before `loaded` can be forgotten. */
  private loadedFor = 0;

  constructor(
    private readonly deps: MysqlSessionDeps,
    private readonly client: PacketChannel,
    private readonly backend: PacketChannel,
    private readonly counts: MysqlSessionCounts,
  ) {}

  start(plan: MysqlResultPlan, binary: boolean, diagnostics: number | undefined, whole = false): void {
    this.plan = plan;
    this.binary = binary;
    this.whole = whole;
    this.diagnostics = diagnostics !== undefined && diagnostics >= 0 ? diagnostics : undefined;
    this.loaded.clear();
    this.loadedFor = 0;
  }

  /** One row: pushed to the client whole, masked, or dropped. A promise only when the row must wait (a decision, a full client socket). */
  row(payload: Buffer): Promise<void> | undefined {
    const plan = this.plan!;
    this.counts.rowsIn++;
    if (this.loadedFor > 0 && --this.loadedFor === 0) this.loaded.clear();
    if (this.diagnostics !== undefined && !this.binary) {
      this.diagnosticsRow(payload, plan);
      return this.sendSome();
    }
    if (this.whole) {
      this.counts.rowsKept++;
      this.client.push(payload);
      return this.sendSome();
    }
    if (plan.groups.length === 0) {
      this.counts.rowsDropped++;
      return undefined;
    }
    this.locate(payload, this.values);
    if (plan.groups.length === 1) {
      // One instance (the usual case): its user read once, the verdict from memory unless it must be decided.
      const userId = this.userOf(payload, this.values, plan.groups[0]!);
      const verdict = userId === undefined ? undefined : this.verdictOf(userId);
      if (userId !== undefined && !verdict) return this.afterLoad(payload);
      return this.send(payload, verdict?.allowed ? maskFor(plan, verdict) : undefined);
    }
    for (const group of plan.groups) {
      const userId = this.userOf(payload, this.values, group);
      if (userId !== undefined && !this.verdictOf(userId)) return this.afterLoad(payload);
    }
    return this.send(payload, this.joinedMask(payload, plan));
  }

  /** The row's users (and those of the rows received behind it) decided, then the row decided. */
  private async afterLoad(payload: Buffer): Promise<void> {
    const plan = this.plan!;
    const missing = this.missingUsers(payload, this.values, new Set());
    this.readAhead(missing);
    await this.load([...missing]);
    this.locate(payload, this.values);
    let mask: RowMask | undefined;
    if (plan.groups.length === 1) {
      const userId = this.userOf(payload, this.values, plan.groups[0]!);
      const verdict = userId === undefined ? undefined : this.verdictOf(userId);
      mask = verdict?.allowed ? maskFor(plan, verdict) : undefined;
    } else mask = this.joinedMask(payload, plan);
    await this.send(payload, mask);
  }

  private joinedMask(payload: Buffer, plan: MysqlResultPlan): RowMask | undefined {
    return joinedRowMask(plan, {
      userOf: (group) => this.userOf(payload, this.values, plan.groups[group]!),
      verdictOf: (userId) => this.verdictOf(userId),
      allNull: (group) => this.allNull(group),
    });
  }

  /** Pushes the row under `mask` (undefined: dropped). */
  private send(payload: Buffer, mask: RowMask | undefined): Promise<void> | undefined {
    if (!mask) {
      this.counts.rowsDropped++;
      return undefined;
    }
    this.counts.rowsKept++;
    this.counts.valuesNulled += mask.nulled;
    this.client.push(mask.whole ? payload : this.masked(payload, mask));
    return this.sendSome();
  }

  /**
   * Rows go out in batches: when 64 KiB are waiting, or when no more rows are here yet (so a slow
   * backend's rows are not held back). A full client socket makes the flush wait for it to
   * drain, and the backend is read no further meanwhile (its socket pauses past 1 MiB).
   */
  private sendSome(): Promise<void> | undefined {
    if (this.client.pendingBytes >= 65536 || !this.backend.hasReceived()) return this.client.flush();
    return undefined;
  }

  private masked(payload: Buffer, mask: RowMask): Buffer {
    return this.binary ? maskBinaryRow(payload, this.plan!.types, mask.keep) : maskTextRow(payload, this.plan!.types.length, mask.keep);
  }

  private locate(payload: Buffer, into: RowValues): void {
    if (this.binary) decodeBinaryRow(payload, this.plan!.types, into);
    else decodeTextRow(payload, this.plan!.types.length, into);
  }

  /** The users this row names whose verdicts are not in memory. */
  private missingUsers(payload: Buffer, values: RowValues, into: Set<string>): Set<string> {
    for (const group of this.plan!.groups) {
      const userId = this.userOf(payload, values, group);
      if (userId !== undefined && !this.verdictOf(userId)) into.add(userId);
    }
    return into;
  }

  /** The users of the rows already received behind this one (up to the end of the resultset), so one load decides them all. */
  private readAhead(missing: Set<string>): void {
    let rows = 0;
    for (const packet of this.backend.queued()) {
      // Binary rows start with 0x00; text rows never start with 0xfe (an end) or 0xff (an error) below 16 MiB.
      if (this.binary ? packet.payload[0] !== 0 : endsRows(packet.payload)) break;
      try {
        this.locate(packet.payload, this.ahead);
      } catch {
        break;
      }
      this.missingUsers(packet.payload, this.ahead, missing);
      rows++;
    }
    this.loadedFor = rows + 1;
  }

  /** Decides these users (traced before use); past the deadline, or when tracing fails, the connection ends: nothing goes undecided. */
  private async load(userIds: string[]): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error("deciding took too long")), this.deps.limits.decideTimeoutMs);
    });
    try {
      await Promise.race([this.deps.decider.load(userIds), deadline]);
    } catch (error) {
      this.deps.audit("error", "decision.failed", `export ${this.deps.exportId} could not decide the users of a result: ${(error as Error).message}`, {
        exportId: this.deps.exportId,
        connectionId: this.deps.connectionId,
        component: "mysql",
        users: userIds.length,
      });
      throw new SessionFailure("decisions failed", {
        code: 1105,
        sqlState: "HY000",
        message: "the export could not decide about these rows now; the connection ends",
      });
    } finally {
      clearTimeout(timer);
    }
    for (const userId of userIds) {
      const verdict = this.deps.decider.verdict(userId);
      if (verdict) this.loaded.set(userId, verdict);
    }
  }

  private verdictOf(userId: string): RowVerdict | undefined {
    return this.loaded.get(userId) ?? this.deps.decider.verdict(userId);
  }

  /** The user a group's resource-context columns name in this row (first non-empty). */
  private userOf(payload: Buffer, values: RowValues, columns: readonly number[]): string | undefined {
    const plan = this.plan!;
    for (const column of columns) {
      const userId = userIdOfValue(payload, values.starts[column]!, values.lengths[column]!, plan.types[column]!, plan.flags[column]!, this.binary);
      if (userId !== undefined && userId !== "") return userId;
    }
    return undefined;
  }

  private allNull(group: number): boolean {
    const plan = this.plan!;
    for (let column = 0; column < plan.groupOf.length; column++) if (plan.groupOf[column] === group && this.values.lengths[column] !== -1) return false;
    return true;
  }

  /** SHOW WARNINGS / SHOW ERRORS: the level and code pass, the message is replaced. */
  private diagnosticsRow(payload: Buffer, plan: MysqlResultPlan): void {
    decodeTextRow(payload, plan.types.length, this.values);
    const values: Array<Buffer | null> = [];
    for (let i = 0; i < this.values.count; i++) {
      const length = this.values.lengths[i]!;
      if (i === this.diagnostics) values.push(withheldWarning);
      else values.push(length < 0 ? null : payload.subarray(this.values.starts[i]!, this.values.starts[i]! + length));
    }
    this.counts.rowsKept++;
    this.client.push(encodeTextRow(values));
  }
}
