import { join } from "node:path";
import { NodeBound } from "./node-bound";
import { Worker } from "node:worker_threads";
import type { CsvWorkerReport, CsvWorkerRequest, CsvWorkerSetup } from "./types";

const startFile = join(__dirname, "csv-worker-start.js");

/** A worker told to drop its document that has not said so in this long hangs: it is ended instead of kept. */
const releaseLimitMs = 10_000;

/** Threads waiting for a document, each serving none. */
const spares: Worker[] = [];

function forget(worker: Worker): void {
  const at = spares.indexOf(worker);
  if (at !== -1) spares.splice(at, 1);
}

function post(worker: Worker, request: CsvWorkerRequest): void {
  worker.postMessage(request);
}

/**
 * A CSV worker thread for a document of `setup` (csv-worker.ts): a spare one when one waits,
 * else one started now. Starting a thread (Node's start-up and the row engine's loading) takes some
 * 20-50 ms, during which the document's first blocks would wait. The document's owner listens to
 * it until it gives it back (releaseCsvWorkers).
 */
export function csvWorker(setup: CsvWorkerSetup): Worker {
  const spare = spares.shift();
  const worker = spare ?? new Worker(startFile);
  if (spare) {
    spare.removeAllListeners("error").removeAllListeners("exit");
    spare.ref();
  }
  post(worker, { kind: "setup", setup });
  return worker;
}

/** A thread with no document waits for the next one; it keeps no process alive, and one that fails is not handed out. */
function keepAsSpare(worker: Worker): void {
  worker.unref();
  worker.once("error", () => forget(worker));
  worker.once("exit", () => forget(worker));
  spares.push(worker);
}

/** Starts spare threads until `count` wait: after a document, for the next one. */
export function keepSpareCsvWorkers(count: number): void {
  while (spares.length < count) keepAsSpare(new Worker(startFile));
}

/**
 * A document's threads once it is over (its owner no longer listens to them). Each `sound` one (none
 * threw, exited or hung) is told to drop the document, and once it has said so (nothing of the
 * document comes after that) waits for the next document while fewer than `keep` wait; the others
 * end. A thread serves documents one after another with its compiled code warm; never two at once,
 * and never a document's messages to another's owner. Spares are then started until `keep` wait.
 * Resolves when each thread waits or has ended.
 */
export async function releaseCsvWorkers(workers: readonly Worker[], keep: number, sound: boolean): Promise<void> {
  await Promise.all(workers.map((worker) => (sound ? release(worker, keep) : end(worker))));
  keepSpareCsvWorkers(keep);
}

function release(worker: Worker, keep: number): Promise<void> {
  worker.removeAllListeners("message").removeAllListeners("error").removeAllListeners("exit");
  return new Promise<void>((resolve) => {
    let settled = false;
    const settle = (kept: boolean) => {
      if (settled) return;
      settled = true;
      clearTimeout(hung);
      worker.removeAllListeners("message").removeAllListeners("error").removeAllListeners("exit");
      if (kept && spares.length < keep) {
        keepAsSpare(worker);
        resolve();
      } else void end(worker).then(resolve);
    };
    const hung = setTimeout(() => settle(false), releaseLimitMs);
    // Reports of the document still on their way come first: nobody takes them any more.
    worker.on("message", (report: CsvWorkerReport) => report.kind === "released" && settle(true));
    worker.once("error", () => settle(false));
    worker.once("exit", () => settle(false));
    post(worker, { kind: "release" });
  });
}

function end(worker: Worker): Promise<void> {
  worker.removeAllListeners("message").removeAllListeners("exit");
  // A worker may still report an error while it is ended.
  if (worker.listenerCount("error") === 0) worker.on("error", () => undefined);
  return worker.terminate().then(
    () => undefined,
    () => undefined,
  );
}

/**
 * CSV worker threads documents hold at once, over the whole node (REDACTION_MAX_WORKERS): each
 * thread is an isolate of its own (some 13 MB) with its blocks, so clients that open many large
 * documents at once and read none of them would otherwise start two threads each until the node
 * runs out of memory. A document that finds none free goes on on the calling thread, and takes
 * threads as soon as some are free (docs/redaction.md, "Worker threads"): no document waits for
 * another, so a client that holds threads by reading slowly delays nobody's document.
 */
export const csvWorkerBudget = new NodeBound(8);

/** Sets the node's bound on CSV worker threads held by documents at once (REDACTION_MAX_WORKERS). */
export function limitCsvWorkers(limit: number): void {
  csvWorkerBudget.limit = limit;
}

/** How many spare threads wait (for tests). */
export function spareCsvWorkers(): number {
  return spares.length;
}
