import { writeFileSync } from "node:fs";
import "./csv-row-engine";
import type { CsvWorkerSetup } from "./types";

/**
 * How every CSV worker thread starts (csv-worker-pool.ts). A spare is started before its document,
 * so that Node's start of a thread and the loading of the row engine happen while no document waits.
 * It holds nothing of any document until its first message, its document's setup; from then on it
 * is a csv-worker.ts thread for that one document (which reads the setup as its workerData) and
 * ends with it: no thread ever serves two documents.
 */

/** Linux: the thread's name, which `top -H` and /proc/<pid>/task/<tid>/comm show (and the objectstore bench counts by). */
function nameThisThread(): void {
  if (process.platform !== "linux") return;
  try {
    writeFileSync("/proc/thread-self/comm", "csv-worker");
  } catch {
    // No /proc (a sandbox): the thread keeps Node's name.
  }
}

nameThisThread();
const threads = require("node:worker_threads") as { parentPort: import("node:worker_threads").MessagePort; workerData: unknown };
threads.parentPort.once("message", (setup: CsvWorkerSetup) => {
  threads.workerData = setup;
  require("./csv-worker");
});
