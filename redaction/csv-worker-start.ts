import { writeFileSync } from "node:fs";

/**
 * How every CSV worker thread starts (csv-worker-pool.ts): it names itself, then loads the worker
 * (csv-worker.ts, with the row engine), which waits for its first document's setup. A spare is
 * started before any document needs it, so that Node's start of a thread and the loading of the
 * row engine happen while no document waits.
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
require("./csv-worker");
