import { test } from "node:test";
import assert from "node:assert/strict";
import { once } from "node:events";
import { setTimeout as sleep } from "node:timers/promises";
import { Worker } from "node:worker_threads";
import { PipelineWaits } from "../../redaction/pipeline-waits";

/** The line `report` writes to stderr, parsed. */
function reported(waits: PipelineWaits, workers: Worker[]): { workers: Array<{ idleMs: number; activeMs: number }> } {
  const write = process.stderr.write;
  let line = "";
  process.stderr.write = ((chunk: string) => {
    line += chunk;
    return true;
  }) as typeof process.stderr.write;
  try {
    waits.report(workers);
  } finally {
    process.stderr.write = write;
  }
  assert.match(line, /^pipeline waits /);
  return JSON.parse(line.slice("pipeline waits ".length));
}

test("a worker's busy time is counted from when the document took it, not since the thread started (workers serve documents one after another)", async () => {
  // Busy for 300 ms (an earlier document), then idle until told to end.
  const worker = new Worker(
    `const { parentPort } = require("node:worker_threads");
     const until = Date.now() + 300; while (Date.now() < until) {}
     parentPort.postMessage("busy done");
     parentPort.on("message", () => process.exit(0));`,
    { eval: true },
  );
  try {
    await once(worker, "message");
    await sleep(50);
    const waits = new PipelineWaits();
    waits.workersTaken([worker]);
    await sleep(100);
    const [loop] = reported(waits, [worker]).workers;
    assert.ok(loop.activeMs < 100, `busy ${loop.activeMs} ms while this document held it (the earlier 300 ms are not its)`);
    assert.ok(loop.idleMs >= 50 && loop.idleMs < 1000, `idle ${loop.idleMs} ms while this document held it`);
  } finally {
    worker.postMessage("end");
    await once(worker, "exit");
  }
});
