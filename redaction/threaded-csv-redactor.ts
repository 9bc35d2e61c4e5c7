import type { Worker } from "node:worker_threads";
import type { RecordPlan } from "../decision/record-redaction";
import { emptyBuffer } from "./chunked-redactor";
import { CsvRedactor } from "./csv-redactor";
import { faultError } from "./csv-rows";
import type { InputSink } from "./direct-input";
import { LineBlocks, type InputBlock } from "./line-blocks";
import { OutputBuffers } from "./output-buffers";
import { csvWorker, csvWorkerBudget, releaseCsvWorkers } from "./csv-worker-pool";
import { PipelineWaits, pipelineWaitsOn } from "./pipeline-waits";
import type {
  CsvBlockScanned,
  CsvHandover,
  CsvThreading,
  CsvWorkerReport,
  CsvWorkerRequest,
  CsvWorkerSetup,
  DecisionSource,
  DocumentRedactor,
  RedactionTally,
} from "./types";

/** A block takes milliseconds: this long without any worker reporting means one hangs, and the attempt fails (it is retried) instead of waiting forever. */
const stallLimitMs = 120_000;

/** `workers` worker threads (0: none) with blocks of 1 MiB; documents up to 8 MiB stay on the calling thread (starting a worker takes tens of milliseconds). */
export function csvThreading(workers: number): CsvThreading {
  return { workers, blockBytes: 1 << 20, inlineBytes: 8 << 20 };
}

/** The CSV redactor for `threading`: on the calling thread without workers, else with worker threads. */
export function csvRedactor(plan: RecordPlan, decisions: DecisionSource, threading: CsvThreading): DocumentRedactor {
  return threading.workers === 0 ? new CsvRedactor(plan, decisions) : new ThreadedCsvRedactor(plan, decisions, threading);
}

/** A worker and how many blocks it holds. */
interface BlockWorker {
  thread: Worker;
  tasks: number;
  /** Verdicts it has been sent (ids below this). */
  verdictsSent: number;
}

/** A block handed to a worker, until its output is released in document order. */
interface Block extends InputBlock {
  task: number;
  worker: BlockWorker;
  final: boolean;
  /** Where it starts in the document: known once the block before showed that a row starts there. */
  start?: { line: number; offset: number };
  scanned?: CsvBlockScanned;
  done?: Extract<CsvWorkerReport, { kind: "done" }>;
  /** Its users' decisions were asked for. */
  asked: boolean;
  /** Cut where no row starts: read again, with the end of the block before, once both are back. */
  abandoned: boolean;
  /** Its unfinished end went to the block after it. */
  carried: boolean;
}

/**
 * CSV redaction on worker threads. The first rows (the header, and the whole document when it
 * is small) are redacted by a CsvRedactor on the calling thread. The rest is cut into blocks at
 * line ends and handed to the workers, which scan each block as if it started where a row
 * starts: the block before tells whether it did (it ends without an unfinished row). A block
 * cut inside a quoted field is read again, joined to the unfinished end before it. Decisions
 * are asked for only for users of blocks whose start is confirmed, one request at a time and
 * in document order, so no value other than a real user id is ever decided on (or traced), and
 * the users counted are those of the rows before a failing one. Outputs and counts are
 * released strictly in document order; a refused row fails the document with the same error
 * and the same counts as the CsvRedactor gives.
 */
export class ThreadedCsvRedactor implements DocumentRedactor {
  private readonly inline: CsvRedactor;
  private inlineBytes = 0;
  private document?: CsvHandover;
  private readonly blocks: Block[] = [];
  private readonly tasks = new Map<number, Block>();
  private readonly workers: BlockWorker[] = [];
  private readonly input: LineBlocks;
  private readonly outputs = new OutputBuffers();
  private ready: Buffer[] = [];
  /** Where the first block not yet released starts. */
  private next = { line: 0, offset: 0 };
  private lastTask = 0;
  private decisionsAsked: Promise<void> = Promise.resolve();
  private failure?: Error;
  private waiter?: { resolve: () => void; reject: (error: Error) => void };
  private closing?: Promise<void>;
  /** Threads of the node's worker budget this document holds (csv-worker-pool.ts), from when its workers start until they have ended. */
  private threadsHeld = 0;
  /** Input read straight into the block buffers (directSink): the reader to wake when it was told to stop. */
  private resumeInput?: () => void;
  private inputPaused = false;
  /** All of the input has been gathered and handed out (end, or the direct reader's end). */
  private inputEnded = false;
  /** No worker threw, exited or hung: they may serve the next document. */
  private workersSound = true;
  /** Where this document's pipeline waited (REDACTION_PIPELINE_WAITS=1), else undefined. */
  readonly waits = pipelineWaitsOn ? new PipelineWaits() : undefined;

  constructor(
    plan: RecordPlan,
    private readonly decisions: DecisionSource,
    private readonly threading: CsvThreading,
  ) {
    this.inline = new CsvRedactor(plan, decisions);
    this.input = new LineBlocks(threading.blockBytes);
  }

  async push(chunk: Buffer): Promise<Buffer> {
    if (this.failure) throw this.failure;
    if (!this.document) {
      // The calling thread redacts the header and the first inlineBytes, and goes on while the node has no threads free for this document.
      if (!this.inline.headerRead || this.inlineBytes < this.threading.inlineBytes || !this.takeThreads()) {
        this.inlineBytes += chunk.length;
        return this.inline.push(chunk);
      }
      this.startWorkers();
    }
    this.document!.tally.bytesIn += chunk.length;
    this.input.append(chunk);
    for (let block = this.input.take(); block; block = this.input.take()) this.dispatch(block, false);
    while (this.blocks.length >= this.blockLimit) await this.change("capMs");
    return this.takeReady(false);
  }

  /**
   * Once the header is read (the workers started), the rest of the input can be written straight into
   * the block buffers (DirectInput) instead of pushed: undefined before. `resume` is called when the
   * reader, told to stop (enough blocks in flight or released but not yet taken by `output`), may read again.
   */
  directSink(resume: () => void): InputSink | undefined {
    if (!this.document || this.failure || this.inputEnded) return undefined;
    this.resumeInput = resume;
    return { room: () => this.input.room(), arrived: (bytes) => this.arrived(bytes), ended: (error) => this.inputEnd(error) };
  }

  /** With a direct sink: the output released since the last call (waiting for some); undefined once the input ended and all of it is released. */
  async output(): Promise<Buffer | undefined> {
    for (;;) {
      if (this.failure) throw this.failure;
      if (this.ready.length > 0) {
        const out = this.takeReady(false);
        this.resumeInputIfRoom();
        return out;
      }
      if (this.inputEnded && this.blocks.length === 0) return undefined;
      // Waiting for input (no block at a worker) is the reader's to time out, not the workers' stall limit.
      await (this.tasks.size > 0 ? this.change("capMs") : this.change("inputMs", false));
    }
  }

  async end(): Promise<Buffer> {
    if (this.failure) throw this.failure;
    if (!this.document) return this.inline.end();
    if (!this.inputEnded) this.dispatch(this.input.takeRest(), true);
    this.inputEnded = true;
    while (this.blocks.length > 0) await this.change("endMs");
    await this.close();
    return this.takeReady(true);
  }

  tally(): RedactionTally {
    if (!this.document) return this.inline.tally();
    this.document.verdicts.flush(this.document.tally);
    return this.document.tally.snapshot();
  }

  written(output: Buffer): void {
    this.outputs.written(output);
  }

  close(): Promise<void> {
    // A stopped attempt decides nothing more (queued decision requests check the failure), and a push or end still waiting is told.
    this.failure ??= new Error("the document redaction was closed");
    if (!this.closing) {
      this.input.release();
      this.waits?.report(this.workers.map((worker) => worker.thread));
    }
    this.wake();
    // The workers wait for the next document (as many as this one used), or end when one of them failed (csv-worker-pool.ts);
    // its threads go back to the node's budget once they have dropped this document or are gone.
    this.closing ??= releaseCsvWorkers(
      this.workers.map((worker) => worker.thread),
      this.workers.length,
      this.workersSound,
    ).then(() => {
      csvWorkerBudget.giveBack(this.threadsHeld);
      this.threadsHeld = 0;
    });
    return this.closing;
  }

  /** Blocks handed to workers and not yet released: past this, input waits (push) or its reader is stopped (direct sink, counting released output not yet taken). */
  private get blockLimit(): number {
    return this.threading.workers * 2;
  }

  /** The direct reader, stopped while enough was in flight or released and not taken, reads again once there is room. */
  private resumeInputIfRoom(): void {
    if (!this.inputPaused || this.blocks.length + this.ready.length >= this.blockLimit) return;
    this.inputPaused = false;
    this.resumeInput?.();
  }

  /** Bytes the direct reader wrote (in place into the room it was given, or elsewhere): gathered and cut into blocks as push does. */
  private arrived(bytes: Buffer): boolean {
    if (this.failure || this.inputEnded) return false;
    this.document!.tally.bytesIn += bytes.length;
    this.input.commit(bytes);
    let dispatched = false;
    for (let block = this.input.take(); block; block = this.input.take()) {
      this.dispatch(block, false);
      dispatched = true;
    }
    // output() may be waiting for input, without the workers' stall limit: with a block out, it waits with it.
    if (dispatched) this.wake();
    this.inputPaused = this.blocks.length + this.ready.length >= this.blockLimit;
    return !this.inputPaused;
  }

  /** The direct reader is done: it writes into no room any more; the rest of the input is the last block. */
  private inputEnd(error?: Error): void {
    this.input.endLoan();
    if (error) return this.fail(error);
    if (this.failure || this.inputEnded) return;
    this.inputEnded = true;
    this.dispatch(this.input.takeRest(), true);
    this.wake();
  }

  /** Takes this document's threads from the node's budget when they are free (else it goes on on the calling thread). */
  private takeThreads(): boolean {
    if (!csvWorkerBudget.take(this.threading.workers)) {
      if (this.waits) this.waits.chunksWithoutThreads++;
      return false;
    }
    this.threadsHeld = this.threading.workers;
    return true;
  }

  private startWorkers(): void {
    const document = this.inline.handOver();
    this.document = document;
    this.next = { line: document.line, offset: document.offset };
    this.input.append(document.carry);
    if (this.waits) this.waits.workersStartedAt = performance.now();
    const setup: CsvWorkerSetup = { columns: document.header.names.length, userColumns: document.header.userColumns, terminator: document.header.terminator };
    for (let i = 0; i < this.threading.workers; i++) {
      const worker: BlockWorker = { thread: csvWorker(setup), tasks: 0, verdictsSent: 0 };
      worker.thread.on("message", (report: CsvWorkerReport) => this.received(worker, report));
      worker.thread.on("error", (error) => this.workerFailed(error));
      worker.thread.on("exit", (code) => this.workerFailed(new Error(`a CSV worker thread stopped (exit code ${code})`)));
      this.workers.push(worker);
    }
    this.waits?.workersTaken(this.workers.map((worker) => worker.thread));
  }

  private dispatch(input: InputBlock, final: boolean): void {
    const block: Block = { ...input, task: 0, worker: this.workers[0], final, asked: false, abandoned: false, carried: false };
    // The first block not yet released starts where the document goes on; any other waits for the one before it.
    if (this.blocks.length === 0) block.start = { ...this.next };
    this.blocks.push(block);
    if (this.waits) {
      this.waits.blocks++;
      this.waits.inFlightSum += this.blocks.length;
    }
    this.send(block);
  }

  private send(block: Block): void {
    const worker = this.workers.reduce((least, candidate) => (candidate.tasks < least.tasks ? candidate : least));
    block.worker = worker;
    block.task = ++this.lastTask;
    this.tasks.set(block.task, block);
    worker.tasks++;
    const output = this.outputs.take();
    const request: CsvWorkerRequest = {
      kind: "block",
      task: block.task,
      input: block.input,
      length: block.length,
      final: block.final,
      ...(output ? { output } : {}),
    };
    this.post(worker, request, output ? [block.input, output] : [block.input]);
  }

  private post(worker: BlockWorker, request: CsvWorkerRequest, transfer: ArrayBuffer[] = []): void {
    worker.thread.postMessage(request, transfer);
  }

  private received(worker: BlockWorker, report: CsvWorkerReport): void {
    if (report.kind === "released") return; // to the pool, which listens by then
    const block = this.tasks.get(report.task);
    if (!block || this.failure) return;
    if (this.waits && this.waits.firstScanMs === undefined) this.waits.firstScanMs = performance.now() - (this.waits.workersStartedAt ?? 0);
    if (report.kind === "scanned") block.scanned = report;
    else {
      if (report.scanned) block.scanned = report.scanned;
      block.done = report;
      block.input = report.input;
      if (report.unused) this.outputs.unused(report.unused);
      worker.tasks--;
      this.tasks.delete(report.task);
    }
    try {
      this.advance();
      this.release();
      this.wake();
      // Blocks whose output is empty (every row dropped) leave nothing for output() to take: room is made here too.
      this.resumeInputIfRoom();
    } catch (error) {
      this.fail(error as Error);
    }
  }

  /** Confirms block starts in document order, asks for decisions where they are confirmed, and reads again what was cut wrong. */
  private advance(): void {
    for (let i = 0; i < this.blocks.length; i++) {
      const block = this.blocks[i];
      if (!block.start || !block.scanned) return;
      if (block.scanned.users.length > 0 && !block.asked) {
        block.asked = true;
        this.askDecisions(block, block.scanned.users);
      }
      const after = this.blocks[i + 1];
      if (block.scanned.fault || !after) return;
      const start = { line: block.start.line + block.scanned.lines, offset: block.start.offset + block.scanned.end };
      if (block.scanned.end === block.length) {
        after.start ??= start;
        continue;
      }
      if (block.carried) continue;
      // The block ends inside a row, so the one after it does not start where a row starts.
      if (!after.abandoned) {
        after.abandoned = true;
        if (!after.done) this.post(after.worker, { kind: "abandon", task: after.task });
      }
      if (block.done && after.done) {
        const unfinished = Buffer.from(block.done.input, block.scanned.end, block.length - block.scanned.end);
        const joined = this.input.join(unfinished, Buffer.from(after.done.input, 0, after.length));
        this.input.recycle(after.done.input);
        if (after.done.output) this.outputs.unused(after.done.output);
        Object.assign(after, joined, { start, scanned: undefined, done: undefined, asked: false, abandoned: false });
        block.carried = true;
        this.send(after);
      }
      return;
    }
  }

  /** Releases finished blocks in document order: their output, and their counts into the document's tally. */
  private release(): void {
    const document = this.document!;
    for (let block = this.blocks[0]; block?.start && block.scanned && block.done; block = this.blocks[0]) {
      const { scanned, done, start } = block;
      const unfinished = scanned.end < block.length && !scanned.fault;
      if (unfinished && !block.carried) {
        if (this.blocks.length > 1) return; // the block after it takes the unfinished row (advance)
        this.input.prepend(Buffer.from(done.input, scanned.end, block.length - scanned.end));
      }
      document.tally.emptyLines += scanned.emptyLines;
      if (done.counts) document.verdicts.merge(done.counts, document.tally);
      document.tally.bytesOut += done.outputLength;
      if (scanned.fault) {
        // The document ends before the refused row: what came before it is counted, its output is not kept.
        document.tally.bytesIn = start.offset + scanned.fault.rowStart;
        throw faultError(scanned.fault, start.line);
      }
      if (done.output && done.outputLength > 0) this.ready.push(this.outputs.output(done.output, done.outputLength));
      else if (done.output) this.outputs.unused(done.output);
      this.input.recycle(done.input);
      this.next = { line: start.line + scanned.lines, offset: start.offset + scanned.end };
      this.blocks.shift();
    }
  }

  /** Decides a block's new users on this thread, one block at a time, and sends the worker their verdicts. */
  private askDecisions(block: Block, users: string[]): void {
    const { task, worker } = block;
    const { verdicts } = this.document!;
    this.decisionsAsked = this.decisionsAsked
      .then(async () => {
        if (this.failure) return;
        await this.decisions.prepare(users);
        const verdictIds = users.map((userId) => verdicts.of(this.decisions.of(userId)).id);
        const added = verdicts.all.slice(worker.verdictsSent);
        worker.verdictsSent = verdicts.all.length;
        if (!this.failure) this.post(worker, { kind: "decisions", task, verdictIds, verdicts: added });
      })
      .catch((error: unknown) => this.fail(error as Error));
  }

  /**
   * The oldest output released: outputs are handed out one per call, so that each keeps its own
   * buffer (given back to the pool once written) instead of being joined into a new one, which
   * the collector would take. All of them joined at the end, or when more than two blocks per
   * worker wait (a caller whose pushes release several blocks each).
   */
  private takeReady(all: boolean): Buffer {
    if (this.ready.length === 0) return emptyBuffer;
    if (this.ready.length === 1 || (!all && this.ready.length <= this.blockLimit)) return this.ready.shift()!;
    const out = Buffer.concat(this.ready);
    // Copied: the outputs' buffers can take later outputs at once.
    for (const part of this.ready) this.outputs.written(part);
    this.ready = [];
    return out;
  }

  /** A worker threw, exited or hung: the document fails, and its workers end with it. */
  private workerFailed(error: Error): void {
    this.workersSound = false;
    this.fail(error);
  }

  private fail(error: Error): void {
    if (this.failure) return;
    this.failure = error;
    void this.close();
    this.wake();
  }

  /** Waits until a worker reports (or the document fails), the wait counted as `waited` when waits are measured. */
  private change(waited: "capMs" | "endMs" | "inputMs", stallLimit = true): Promise<void> {
    const change = this.reported(stallLimit);
    return this.waits ? this.waits.time(waited, change) : change;
  }

  private reported(stallLimit: boolean): Promise<void> {
    if (this.failure) return Promise.reject(this.failure);
    return new Promise((resolve, reject) => {
      const stalled = stallLimit
        ? setTimeout(() => this.workerFailed(new Error(`no CSV worker thread reported for ${stallLimitMs / 1000} s`)), stallLimitMs)
        : undefined;
      const settled = () => clearTimeout(stalled);
      this.waiter = {
        resolve: () => (settled(), resolve()),
        reject: (error) => (settled(), reject(error)),
      };
    });
  }

  private wake(): void {
    const waiter = this.waiter;
    this.waiter = undefined;
    if (!waiter) return;
    if (this.failure) waiter.reject(this.failure);
    else waiter.resolve();
  }
}
