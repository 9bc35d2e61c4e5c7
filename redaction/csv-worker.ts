import { parentPort } from "node:worker_threads";
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
 *
 * It serves one document at a time (`setup` to `release`), and documents one after another: its
 * compiled code stays warm (a new thread per document started cold, and its start-up and compiling
 * cost the cores the document was read on). Everything a document's verdicts touch lives in its
 * DocumentWork, dropped at `release` (the module's table entries are the document engine's tag's,
 * and cleared too); the thread-wide state is scratch that every block overwrites.
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
/** Row bounds of blocks done the JS way, reused: scratch, overwritten by every scan. */
const spareRows: ScannedRows[] = [];

function report(message: CsvWorkerReport, transfer: ArrayBuffer[] = []): void {
  port.postMessage(message, transfer);
}

/**
 * Where a block's output goes: the buffer the owner gave when it is big enough (an output the
 * client has been sent, back for reuse), else a new one with room for the next outputs, about
 * as long, to fit in it when it comes back. A given buffer too small is left to the collector.
 */
function outputSpace(given: ArrayBuffer | undefined): OutputSpace {
  return (length) => (given && given.byteLength >= length ? Buffer.from(given, 0, length) : Buffer.allocUnsafeSlow(length + (length >> 3)));
}

/** One document's work on this thread: its verdicts, the users met, the blocks waiting for decisions. */
class DocumentWork {
  private readonly terminator: Buffer;
  private readonly verdicts: CsvVerdict[] = [];
  private readonly verdictOfUser = new Map<string, CsvVerdict>();
  private readonly verdictOf = (userId: string) => this.verdictOfUser.get(userId);
  private readonly waiting = new Map<number, Waiting>();
  private readonly userIdFields: UserIdFields;
  private readonly engine: CsvRowEngine | undefined;

  constructor(private readonly setup: CsvWorkerSetup) {
    this.terminator = Buffer.from(setup.terminator);
    this.userIdFields = new UserIdFields(setup.userColumns);
    this.engine = CsvRowEngine.create(setup.userColumns, this.terminator);
  }

  scan(task: number, input: ArrayBuffer, length: number, final: boolean, given: ArrayBuffer | undefined): void {
    // Forgetting is safe only while no block waits: its users, met before, must stay known until it is written.
    if (this.waiting.size === 0 && this.verdictOfUser.size > documentLimits.maxRememberedUsers) this.forget();
    const buf = Buffer.from(input, 0, length);
    const space = outputSpace(given);
    const block = this.redactInWasm(buf, final, space) ?? this.redactInJs(buf, final, space);
    const { end, line, emptyLines, fault } = block.scan;
    const scanned: CsvBlockScanned = { kind: "scanned", task, end, lines: line, emptyLines, ...(fault ? { fault } : {}), users: block.asked };
    // No user new to this worker: written now, and reported in one message (each message wakes the owner's thread).
    if (block.asked.length === 0) return this.write(task, input, block, scanned);
    report(scanned);
    this.waiting.set(task, { input, block, given });
  }

  decided(task: number, verdictIds: readonly number[], added: readonly CsvVerdict[]): void {
    for (const verdict of added) this.verdicts[verdict.id] = verdict;
    const waited = this.waiting.get(task);
    if (!waited) throw new Error(`decisions for task ${task}, which does not wait for any`);
    this.waiting.delete(task);
    waited.block.asked.forEach((userId, index) => this.verdictOfUser.set(userId, this.verdicts[verdictIds[index]]));
    this.write(task, waited.input, waited.block);
  }

  abandon(task: number): void {
    const waited = this.waiting.get(task);
    if (!waited) return; // written already: its report is on its way
    this.waiting.delete(task);
    const { input, given } = waited;
    report({ kind: "done", task, input, outputLength: 0, ...(given ? { unused: given } : {}) }, given ? [input, given] : [input]);
  }

  /** Forgets the users met (their verdicts and the module's table entries). */
  forget(): void {
    this.verdictOfUser.clear();
    this.engine?.forget();
  }

  /** The block's rows in WebAssembly; written at once when no user is new. Undefined where the engine cannot. */
  private redactInWasm(buf: Buffer, final: boolean, space: OutputSpace): BlockRedaction | undefined {
    const { engine, verdicts, verdictOf, setup } = this;
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
  private redactInJs(buf: Buffer, final: boolean, space: OutputSpace): BlockRedaction {
    const rows = scanRows(buf, 0, final, 0, this.setup.columns, spareRows.pop() ?? emptyRows());
    const userIds = this.userIdFields.idsOf(buf, rows, 0);
    return {
      scan: rows,
      asked: [...addUsersWithoutVerdict(userIds, this.verdictOf, new Set())],
      write: () => {
        const counts = emptyCounts();
        const output = writeRows(buf, rows, 0, rowVerdicts(userIds, this.verdictOf), this.terminator, counts, space);
        spareRows.push(rows);
        return { output, counts };
      },
    };
  }

  private write(task: number, input: ArrayBuffer, block: BlockRedaction, scanned?: CsvBlockScanned): void {
    const { output, counts } = block.write();
    const buffer = output.buffer as ArrayBuffer;
    report({ kind: "done", task, input, output: buffer, outputLength: output.length, counts, ...(scanned ? { scanned } : {}) }, [input, buffer]);
  }
}

/** The document this thread serves now, if any. */
let document: DocumentWork | undefined;

function served(): DocumentWork {
  // A block without a document would be redacted with nobody's verdicts: the owner's mistake, and the thread's end.
  if (!document) throw new Error("a CSV worker was sent a block before its document's setup");
  return document;
}

port.on("message", (request: CsvWorkerRequest) => {
  switch (request.kind) {
    case "setup":
      if (document) throw new Error("a CSV worker was given a document while it served another");
      document = new DocumentWork(request.setup);
      return;
    case "release":
      // The document's state goes with it; the answer is the last message of this document.
      document?.forget();
      document = undefined;
      return report({ kind: "released" });
    case "block":
      return served().scan(request.task, request.input, request.length, request.final, request.output);
    case "decisions":
      return served().decided(request.task, request.verdictIds, request.verdicts);
    case "abandon":
      return served().abandon(request.task);
  }
});
