import { parentPort, workerData } from "node:worker_threads";
import { emptyCounts, emptyRows, scanRows, writeRows, type ScannedRows } from "./csv-rows";
import { UserIdFields } from "./user-id-fields";
import { documentLimits, type CsvVerdict, type CsvWorkerReport, type CsvWorkerRequest, type CsvWorkerSetup } from "./types";

/**
 * A worker thread of ThreadedCsvRedactor: scans the blocks it is given as if each started where a
 * row starts (the owner checks that against the block before), reports what it found, asks the
 * owner for the decisions of users it has not met, then writes the block's kept rows.
 */

/** A scanned block, with the verdicts of its rows as far as they are known. */
interface Scanned {
  input: ArrayBuffer;
  buf: Buffer;
  rows: ScannedRows;
  userIds: Array<string | undefined>;
  rowVerdicts: Array<CsvVerdict | undefined>;
  /** The users asked about, in the order the answer gives their verdicts. */
  asked: string[];
}

const port = parentPort!;
const setup = workerData as CsvWorkerSetup;
const terminator = Buffer.from(setup.terminator);
const verdicts: CsvVerdict[] = [];
const verdictOfUser = new Map<string, CsvVerdict>();
const waiting = new Map<number, Scanned>();
const spareRows: ScannedRows[] = [];
const userIdFields = new UserIdFields(setup.userColumns);

function report(message: CsvWorkerReport, transfer: ArrayBuffer[] = []): void {
  port.postMessage(message, transfer);
}

function scan(task: number, input: ArrayBuffer, length: number, final: boolean): void {
  // Forgetting is safe only while no block waits: its users, met before, must stay known until it is written.
  if (waiting.size === 0 && verdictOfUser.size > documentLimits.maxRememberedUsers) verdictOfUser.clear();
  const buf = Buffer.from(input, 0, length);
  const rows = scanRows(buf, 0, final, 0, setup.columns, spareRows.pop() ?? emptyRows());
  const userIds = userIdFields.idsOf(buf, rows, 0);
  const rowVerdicts = new Array<CsvVerdict | undefined>(userIds.length);
  const unknown = new Set<string>();
  userIds.forEach((id, row) => {
    if (id === undefined) return;
    const verdict = verdictOfUser.get(id);
    if (verdict) rowVerdicts[row] = verdict;
    else unknown.add(id);
  });
  const asked = [...unknown];
  report({ kind: "scanned", task, end: rows.end, lines: rows.line, emptyLines: rows.emptyLines, ...(rows.fault ? { fault: rows.fault } : {}), users: asked });
  const block = { input, buf, rows, userIds, rowVerdicts, asked };
  if (asked.length === 0) write(task, block);
  else waiting.set(task, block);
}

function decided(task: number, verdictIds: readonly number[], added: readonly CsvVerdict[]): void {
  for (const verdict of added) verdicts[verdict.id] = verdict;
  const block = waiting.get(task);
  if (!block) throw new Error(`decisions for task ${task}, which does not wait for any`);
  waiting.delete(task);
  block.asked.forEach((userId, index) => verdictOfUser.set(userId, verdicts[verdictIds[index]]));
  block.userIds.forEach((id, row) => {
    if (id === undefined || block.rowVerdicts[row]) return;
    const verdict = verdictOfUser.get(id);
    // Fail closed: a row is never written without its user's decision.
    if (!verdict) throw new Error(`no decision for a user of task ${task}`);
    block.rowVerdicts[row] = verdict;
  });
  write(task, block);
}

function write(task: number, block: Scanned): void {
  const counts = emptyCounts();
  const output = writeRows(block.buf, block.rows, 0, block.rowVerdicts, terminator, counts);
  spareRows.push(block.rows);
  report({ kind: "done", task, input: block.input, output: output.buffer as ArrayBuffer, outputLength: output.length, counts }, [
    block.input,
    output.buffer as ArrayBuffer,
  ]);
}

port.on("message", (request: CsvWorkerRequest) => {
  if (request.kind === "block") scan(request.task, request.input, request.length, request.final);
  else if (request.kind === "decisions") decided(request.task, request.verdictIds, request.verdicts);
  else {
    const block = waiting.get(request.task);
    if (!block) return; // written already: its report is on its way
    waiting.delete(request.task);
    spareRows.push(block.rows);
    report({ kind: "done", task: request.task, input: block.input, outputLength: 0 }, [block.input]);
  }
});
