import { parentPort, workerData } from "node:worker_threads";
import { CsvRowEngine, type BlockScan } from "./csv-row-engine";
import { emptyCounts, emptyRows, scanRows, writeRows, type OutputSpace, type ScannedRows } from "./csv-rows";
import { addUsersWithoutVerdict, rowVerdicts } from "./row-verdicts";
import { UserIdFields } from "./user-id-fields";
import {
  documentLimits,
  type CsvBlockScanned,
  type CsvCounts,
  type CsvVerdict,
  type CsvWorkerReport,
  type CsvWorkerRequest,
  type CsvWorkerSetup,
} from "./types";

/**
 * A worker thread of ThreadedCsvRedactor: scans the blocks it is given as if each started where a
 * row starts (the owner checks that against the block before), reports what it found, asks the
 * owner for the decisions of users it has not met, then writes the block's kept rows. The rows'
 * work is done in WebAssembly (CsvRowEngine) where it can be, else the JS way (redactInJs).
 */

/** A block's rows as far as the worker got: written, or waiting for the verdicts of `asked`. */
interface BlockRedaction {
  scan: BlockScan;
  /** The users asked about, in the order the answer gives their verdicts. */
  asked: string[];
  /** Writes the rows (every user asked about has a verdict by then). */
  write(): { output: Buffer; counts: CsvCounts };
}

/** A block that waits for its users' verdicts. */
interface Waiting {
  input: ArrayBuffer;
  block: BlockRedaction;
  /** The buffer the owner gave for its output, if any. */
  given?: ArrayBuffer;
}

const port = parentPort!;
const setup = workerData as CsvWorkerSetup;
const terminator = Buffer.from(setup.terminator);
const verdicts: CsvVerdict[] = [];
const verdictOfUser = new Map<string, CsvVerdict>();
const verdictOf = (userId: string) => verdictOfUser.get(userId);
const waiting = new Map<number, Waiting>();
const spareRows: ScannedRows[] = [];
const userIdFields = new UserIdFields(setup.userColumns);
const engine = CsvRowEngine.create(setup.userColumns, terminator);

function report(message: CsvWorkerReport, transfer: ArrayBuffer[] = []): void {
  port.postMessage(message, transfer);
}

/** The block's rows in WebAssembly; written at once when no user is new. Undefined where the engine cannot. */
function redactInWasm(buf: Buffer, final: boolean, space: OutputSpace): BlockRedaction | undefined {
  const rows = engine?.redact(buf, final, 0, setup.columns, verdicts, verdictOf, space);
  if (!rows) return undefined;
  const written = rows.output && rows.counts ? { output: rows.output, counts: rows.counts } : undefined;
  return {
    scan: rows.scan,
    asked: rows.users,
    write: () => {
      if (written) return written;
      // The block waited: redacted again from its bytes (the module's memory has had other blocks since).
      const again = engine!.redact(buf, final, 0, setup.columns, verdicts, verdictOf, space);
      // Fail closed: a row is never written without its user's decision.
      if (!again?.output || !again.counts) throw new Error("no decision for a user of a CSV block");
      return { output: again.output, counts: again.counts };
    },
  };
}

/** The block's rows the JS way (csv-rows, UserIdFields): the reference for the WebAssembly way. */
function redactInJs(buf: Buffer, final: boolean, space: OutputSpace): BlockRedaction {
  const rows = scanRows(buf, 0, final, 0, setup.columns, spareRows.pop() ?? emptyRows());
  const userIds = userIdFields.idsOf(buf, rows, 0);
  return {
    scan: rows,
    asked: [...addUsersWithoutVerdict(userIds, verdictOf, new Set())],
    write: () => {
      const counts = emptyCounts();
      const output = writeRows(buf, rows, 0, rowVerdicts(userIds, verdictOf), terminator, counts, space);
      spareRows.push(rows);
      return { output, counts };
    },
  };
}

/**
 * Where a block's output goes: the buffer the owner gave when it is big enough (an output the
 * client has been sent, back for reuse), else a new one with room for the next outputs, about
 * as long, to fit in it when it comes back. A given buffer too small is left to the collector.
 */
function outputSpace(given: ArrayBuffer | undefined): OutputSpace {
  return (length) => (given && given.byteLength >= length ? Buffer.from(given, 0, length) : Buffer.allocUnsafeSlow(length + (length >> 3)));
}

function scan(task: number, input: ArrayBuffer, length: number, final: boolean, given: ArrayBuffer | undefined): void {
  // Forgetting is safe only while no block waits: its users, met before, must stay known until it is written.
  if (waiting.size === 0 && verdictOfUser.size > documentLimits.maxRememberedUsers) {
    verdictOfUser.clear();
    engine?.forget();
  }
  const buf = Buffer.from(input, 0, length);
  const space = outputSpace(given);
  const block = redactInWasm(buf, final, space) ?? redactInJs(buf, final, space);
  const { end, line, emptyLines, fault } = block.scan;
  const scanned: CsvBlockScanned = { kind: "scanned", task, end, lines: line, emptyLines, ...(fault ? { fault } : {}), users: block.asked };
  // No user new to this worker: written now, and reported in one message (each message wakes the owner's thread).
  if (block.asked.length === 0) return write(task, input, block, scanned);
  report(scanned);
  waiting.set(task, { input, block, given });
}

function decided(task: number, verdictIds: readonly number[], added: readonly CsvVerdict[]): void {
  for (const verdict of added) verdicts[verdict.id] = verdict;
  const waited = waiting.get(task);
  if (!waited) throw new Error(`decisions for task ${task}, which does not wait for any`);
  waiting.delete(task);
  waited.block.asked.forEach((userId, index) => verdictOfUser.set(userId, verdicts[verdictIds[index]]));
  write(task, waited.input, waited.block);
}

function write(task: number, input: ArrayBuffer, block: BlockRedaction, scanned?: CsvBlockScanned): void {
  const { output, counts } = block.write();
  const buffer = output.buffer as ArrayBuffer;
  report({ kind: "done", task, input, output: buffer, outputLength: output.length, counts, ...(scanned ? { scanned } : {}) }, [input, buffer]);
}

port.on("message", (request: CsvWorkerRequest) => {
  if (request.kind === "block") scan(request.task, request.input, request.length, request.final, request.output);
  else if (request.kind === "decisions") decided(request.task, request.verdictIds, request.verdicts);
  else {
    const waited = waiting.get(request.task);
    if (!waited) return; // written already: its report is on its way
    waiting.delete(request.task);
    const { input, given } = waited;
    report({ kind: "done", task: request.task, input, outputLength: 0, ...(given ? { unused: given } : {}) }, given ? [input, given] : [input]);
  }
});
