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
 * runs out of memory. A document past the bound waits for its threads, first come first served,
 * reading nothing meanwhile (docs/redaction.md, "Worker threads").
 */
class WorkerBudget {
  limit = 8;
  held = 0;
  private readonly queue: Array<{ count: number; grant: () => void }> = [];

  /**
   * Threads for one document: `granted` resolves once `count` are its own; `cancel` gives them
   * back, or leaves the queue (`granted` then resolves too, so that nothing waits for ever: the
   * caller checks why it woke).
   */
  acquire(count: number): { granted: Promise<void>; cancel: () => void } {
    let state: "waiting" | "held" | "done" = "waiting";
    let grant!: () => void;
    const granted = new Promise<void>((resolve) => (grant = resolve));
    const entry = {
      count,
      grant: () => {
        state = "held";
        this.held += count;
        grant();
      },
    };
    this.queue.push(entry);
    this.grantWaiting();
    return {
      granted,
      cancel: () => {
        if (state === "held") this.release(count);
        else if (state === "waiting") {
          this.queue.splice(this.queue.indexOf(entry), 1);
          grant();
        }
        state = "done";
        this.grantWaiting();
      },
    };
  }

  private release(count: number): void {
    this.held -= count;
  }

  /** In order: a document that needs more than is free holds up those after it (none starves). */
  private grantWaiting(): void {
    // A document asking for more than the whole bound gets it when it is alone (the bound is never below REDACTION_THREADS in a node).
    while (this.queue.length > 0 && (this.held + this.queue[0]!.count <= this.limit || this.held === 0)) this.queue.shift()!.grant();
  }

  waiting(): number {
    return this.queue.length;
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
