import { canNameUser } from "../decision/user-id-shape";
import { decodeField, emptyCounts, emptyRows, newOutput, scanRowsInJs, wasmSliceBytes, writeRows, type OutputSpace, type ScannedRows } from "./csv-rows";
import { regularRows } from "./csv-structure";
import { csvWasm, reserveWasmMemory, type CsvWasmExports } from "./csv-wasm";
import { addUsersWithoutVerdict, rowVerdicts, type VerdictOf } from "./row-verdicts";
import { UserIdFields } from "./user-id-fields";
import { documentLimits, type CsvCounts, type CsvVerdict } from "./types";

/** What the module's table says of a raw user-id field (redaction/wasm/csv-structure.ts); verdicts are 0 and up. */
const enum Entry {
  NoOne = -1,
  EmptyText = -2,
  Unknown = -3,
  Undecided = -4,
  /** A row's code when its user is undecided: UndecidedRow - entry. */
  UndecidedRow = -16,
}

/** A block's scan: what scanRows gives, but the fields' bounds. */
export type BlockScan = Pick<ScannedRows, "count" | "columns" | "end" | "line" | "emptyLines" | "fault">;

/** A block's rows: written, or the users whose verdicts they wait for (then nothing is written). */
export interface BlockRows {
  scan: BlockScan;
  /** Users the caller has no verdict for, in the order their rows come (as idsOf and a Set give them). */
  users: string[];
  /** When `users` is empty: the kept rows, at the start of an ArrayBuffer of their own (the caller's `space`), and their counts. */
  output?: Buffer;
  counts?: CsvCounts;
}

let lastTag = 0;

/**
 * The per-row work of a CSV block in WebAssembly: after the scan, each regular row's user-id
 * field is looked up by its raw bytes in a table kept in the module's memory, and the kept rows
 * are written there (kept fields copied, emptied fields empty); JS copies the output out once.
 * JS still decides what every raw field is: the module lists the fields it has not met, JS
 * decodes and checks them (decodeField, canNameUser, the caller's verdicts, as UserIdFields and
 * csv-rows do) and tells the table, and the module goes on. A row is written only when its
 * user's verdict is known: a block with a user the caller has no verdict for writes nothing and
 * names the users; it is redacted again, from its bytes, once they are known. The rows after
 * the first the scanner leaves to JS (an irregular or refused row, the unfinished end) take the
 * JS way (UserIdFields, writeRows), as do blocks over the scanner's slice and blocks with an
 * id field too long for the table (undefined: the caller does the whole block the JS way).
 */
export class CsvRowEngine {
  /** The table is the thread's; entries are told apart by document. */
  private readonly tag = ++lastTag;
  private readonly tailRows = emptyRows();
  private readonly tailIds: UserIdFields;

  private constructor(
    private readonly module: CsvWasmExports,
    private readonly userColumns: readonly number[],
    private readonly terminator: Buffer,
  ) {
    this.tailIds = new UserIdFields(userColumns);
  }

  /** The engine of a document with these user-id columns and row terminator; undefined without the WebAssembly module. */
  static create(userColumns: readonly number[], terminator: Buffer): CsvRowEngine | undefined {
    return csvWasm ? new CsvRowEngine(csvWasm, userColumns, terminator) : undefined;
  }

  /** Forgets what every raw field was found to be (the caller forgets its users' verdicts). */
  forget(): void {
    this.module.clearTable();
  }

  /**
   * Scans `buf` (a row starts at 0, on line `line`; rows of `columns` fields) and writes its rows
   * with `verdicts` (by id), `verdictOf` giving a user's verdict when the caller has it, into `space`.
   */
  redact(
    buf: Buffer,
    final: boolean,
    line: number,
    columns: number,
    verdicts: readonly CsvVerdict[],
    verdictOf: VerdictOf,
    space: OutputSpace = newOutput,
  ): BlockRows | undefined {
    const module = this.module;
    const userColumnCount = this.userColumns.length;
    if (buf.length > wasmSliceBytes) return undefined;
    const regular = regularRows(buf, 0, buf.length, columns, documentLimits.maxRecordBytes);
    if (!regular) return undefined;
    const tail = scanRowsInJs(buf, regular.end, final, line + regular.lineFeeds, columns, this.tailRows);
    const scan: BlockScan = {
      count: regular.rows + tail.count,
      columns: tail.columns,
      end: tail.end,
      line: tail.line,
      emptyLines: regular.emptyLines + tail.emptyLines,
      ...(tail.fault ? { fault: tail.fault } : {}),
    };
    const rows = regular.rows;
    // Room for every field of the block (added at most once per user-id column), bounded as the verdicts remembered per document.
    const fits = () => module.tableFits(rows * userColumnCount, buf.length, documentLimits.maxRememberedUsers) === 1;
    if (!fits()) module.clearTable();
    if (!fits()) return undefined;
    // The module's scratch after the bounds: row codes, listed fields, user-id columns, verdicts, counts, output.
    const rowCodes = align(regular.boundsAt + regular.fields * 8, 16);
    const listed = rowCodes + rows * 4;
    const userColumnsAt = align(listed + rows * 12, 16);
    const verdictsAt = userColumnsAt + userColumnCount * 4;
    const countsAt = align(verdictsAt + verdicts.length * (columns + 1), 16);
    const out = align(countsAt + (verdicts.length + 1) * 4, 16);
    const result = align(out + regular.end + (rows + 1) * this.terminator.length + 32, 16);
    reserveWasmMemory(module, result + 16);
    new Int32Array(module.memory.buffer, userColumnsAt, userColumnCount).set(this.userColumns);
    const users = new Set<string>();
    const undecided = new Map<number, string>();
    try {
      for (let round = 0; rows > 0; round++) {
        module.classify(regular.inputAt, regular.boundsAt, rows, columns, userColumnsAt, userColumnCount, this.tag, rowCodes, listed, result);
        const [count, tooLong] = new Int32Array(module.memory.buffer, result, 2);
        if (tooLong === 1) return undefined;
        if (count === 0) break;
        // Each round settles the field each listed row stopped at: a row has at most one per user-id column.
        if (round > userColumnCount) throw new Error("the user-id fields of a CSV block were not settled");
        const fields = new Int32Array(module.memory.buffer, listed, count * 3);
        for (let i = 0; i < count * 3; i += 3) {
          const text = decodeField(buf, fields[i + 1], fields[i + 2]);
          let value: number = text === "" ? Entry.EmptyText : canNameUser(text) ? Entry.Undecided : Entry.NoOne;
          if (value === Entry.Undecided) {
            const verdict = verdictOf(text);
            if (verdict) value = verdict.id;
            else undecided.set(fields[i], text);
          }
          module.setEntry(fields[i], value);
        }
      }
      if (undecided.size > 0) {
        const codes = new Int32Array(module.memory.buffer, rowCodes, rows);
        for (const code of codes) if (code <= Entry.UndecidedRow) users.add(undecided.get(Entry.UndecidedRow - code)!);
      }
    } finally {
      // Undecided is an answer for this call only: the next one lists those fields again.
      for (const entry of undecided.keys()) module.setEntry(entry, Entry.Unknown);
    }
    const tailIds = tail.count > 0 ? this.tailIds.idsOf(buf, tail, 0) : [];
    if (addUsersWithoutVerdict(tailIds, verdictOf, users).size > 0) return { scan, users: [...users] };

    const counts = emptyCounts();
    let written = 0;
    if (rows > 0) {
      const bytes = new Uint8Array(module.memory.buffer);
      verdicts.forEach((verdict, id) => {
        const at = verdictsAt + id * (columns + 1);
        bytes[at] = verdict.allowed ? 1 : 0;
        bytes.set(verdict.keep, at + 1);
      });
      const terminator = this.terminator[0] | ((this.terminator[1] ?? 0) << 8);
      module.writeRows(
        regular.inputAt,
        regular.boundsAt,
        rows,
        columns,
        rowCodes,
        verdictsAt,
        verdicts.length,
        countsAt,
        terminator,
        this.terminator.length,
        out,
        result,
      );
      written = new Int32Array(module.memory.buffer, result, 1)[0];
      // Fail closed: the module found a row without a verdict, which JS should have asked for.
      if (written < 0) throw new Error("a CSV row without its user's verdict");
      const rowCounts = new Int32Array(module.memory.buffer, countsAt, verdicts.length + 1);
      counts.rowsIn = rows;
      counts.noUserId = rowCounts[0];
      for (let id = 0; id < verdicts.length; id++) if (rowCounts[id + 1] > 0) counts.rowsByVerdict[id] = rowCounts[id + 1];
    }
    const tailOutput = tail.count > 0 ? writeRows(buf, tail, 0, rowVerdicts(tailIds, verdictOf), this.terminator, counts) : undefined;
    const output = space(written + (tailOutput?.length ?? 0)).subarray(0, written + (tailOutput?.length ?? 0));
    output.set(new Uint8Array(module.memory.buffer, out, written));
    if (tailOutput) output.set(tailOutput, written);
    return { scan, users: [], output, counts };
  }
}

function align(at: number, to: number): number {
  return Math.ceil(at / to) * to;
}
