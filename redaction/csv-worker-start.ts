import { readlinkSync, writeFileSync } from "node:fs";
import { setPriority } from "node:os";
import "./csv-row-engine";
import { csvWorkerNice } from "./csv-worker-pool";
import type { CsvWorkerSetup } from "./types";

/**
 * How every CSV worker thread starts (csv-worker-pool.ts). A spare is started before its document,
 * so that Node's start of a thread and the loading of the row engine happen while no document waits.
 * It holds nothing of any document until its first message, its document's setup; from then on it
 * is a csv-worker.ts thread for that one document (which reads the setup as its workerData) and
 * ends with it: no thread ever serves two documents.
 */

/** Linux: the thread's name (`top -H`, /proc/<pid>/task/<tid>/comm) and a priority below the event loop's. */
function nameAndLowerThisThread(): void {
  if (process.platform !== "linux") return;
  try {
    const tid = Number(readlinkSync("/proc/thread-self").split("/").pop());
    writeFileSync("/proc/thread-self/comm", "csv-worker");
    // On Linux a thread id given to setpriority is that thread alone (elsewhere it would be the whole process).
    setPriority(tid, csvWorkerNice);
  } catch {
    // No /proc (a sandbox): the thread keeps Node's name and the process's priority.
  }
}

nameAndLowerThisThread();
const threads = require("node:worker_threads") as { parentPort: import("node:worker_threads").MessagePort; workerData: unknown };
threads.parentPort.once("message", (setup: CsvWorkerSetup) => {
  threads.workerData = setup;
  require("./csv-worker");
});
