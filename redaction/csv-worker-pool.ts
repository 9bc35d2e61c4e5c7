import { join } from "node:path";
import { Worker } from "node:worker_threads";
import type { CsvWorkerSetup } from "./types";

const startFile = join(__dirname, "csv-worker-start.js");

/** Threads started and waiting for a document; each is given to one document only and ends with it. */
const spares: Worker[] = [];

function forget(worker: Worker): void {
  const at = spares.indexOf(worker);
  if (at !== -1) spares.splice(at, 1);
}

/**
 * A CSV worker thread for a document of `setup` (csv-worker-start.ts): a spare one when one waits,
 * else one started now. Starting a thread (Node's start-up and the row engine's loading) takes some
 * 20-50 ms, during which the document's first blocks would wait.
 */
export function csvWorker(setup: CsvWorkerSetup): Worker {
  const spare = spares.shift();
  const worker = spare ?? new Worker(startFile);
  if (spare) {
    spare.removeAllListeners("error").removeAllListeners("exit");
    spare.ref();
  }
  worker.postMessage(setup);
  return worker;
}

/** Starts spare threads until `count` wait: after a document, for the next one. */
export function keepSpareCsvWorkers(count: number): void {
  while (spares.length < count) {
    const worker = new Worker(startFile);
    // A spare keeps no process alive, and one that failed is not handed out.
    worker.unref();
    worker.once("error", () => forget(worker));
    worker.once("exit", () => forget(worker));
    spares.push(worker);
  }
}

/**
 * CSV worker threads documents hold at once, over the whole node (REDACTION_MAX_WORKERS): each
 * thread is an isolate of its own (some 13 MB) with its blocks, so clients that open many large
 * documents at once and read none of them would otherwise start two threads each until the node
 * runs out of memory. A document that finds none free goes on on the calling thread, and takes
 * threads as soon as some are free (docs/redaction.md, "Worker threads"): no document waits for
 * another, so a client that holds threads by reading slowly delays nobody's document.
 */
class WorkerBudget {
  limit = 8;
  held = 0;

  /** Takes `count` threads when that many are free. */
  take(count: number): boolean {
    if (this.held + count > this.limit) return false;
    this.held += count;
    return true;
  }

  giveBack(count: number): void {
    this.held -= count;
  }
}

export const csvWorkerBudget = new WorkerBudget();

/** Sets the node's bound on CSV worker threads held by documents at once (REDACTION_MAX_WORKERS). */
export function limitCsvWorkers(limit: number): void {
  csvWorkerBudget.limit = limit;
}

/** How many spare threads wait (for tests). */
export function spareCsvWorkers(): number {
  return spares.length;
}
