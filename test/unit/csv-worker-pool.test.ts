import { test } from "node:test";
import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import type { Worker } from "node:worker_threads";
import { CsvRedactor } from "../../redaction/csv-redactor";
import { spareCsvWorkers } from "../../redaction/csv-worker-pool";
import { ThreadedCsvRedactor } from "../../redaction/threaded-csv-redactor";
import { csvPlan, FakeDecisions, randomCsv, run, seeded, whole } from "../fixtures/csv-documents";

/** This process's threads now: id and name (/proc/self/task/<tid>/stat). */
function threadsNow(): Array<{ tid: string; name: string }> {
  return readdirSync("/proc/self/task").flatMap((tid) => {
    try {
      const stat = readFileSync(`/proc/self/task/${tid}/stat`, "utf8");
      return [{ tid, name: stat.slice(stat.indexOf("(") + 1, stat.lastIndexOf(") ")) }];
    } catch {
      return [];
    }
  });
}

/** A document through two worker threads with small blocks, `during` called halfway; its output and threads. */
async function throughWorkers(input: Buffer, during?: () => void) {
  const redactor = new ThreadedCsvRedactor(csvPlan, new FakeDecisions(), { threads: 2, blockBytes: 64, inlineBytes: 0 });
  try {
    const parts: Buffer[] = [];
    // In pieces: the first (the header) is read on this thread, the workers take the rest from the second on.
    for (let at = 0; at < input.length; at += 256) {
      parts.push(await redactor.push(input.subarray(at, at + 256)));
      // Halfway, blocks have come back from the workers (more were out than the in-flight cap): they run now.
      if (at === 256 * Math.max(1, Math.floor(input.length / 512))) during?.();
    }
    parts.push(await redactor.end());
    const workers = (redactor as unknown as { workers: Array<{ thread: Worker }> }).workers.map((worker) => worker.thread);
    return { output: Buffer.concat(parts).toString("latin1"), workers };
  } finally {
    await redactor.close();
  }
}

async function singleThread(input: Buffer): Promise<string> {
  return (await run(new CsvRedactor(csvPlan, new FakeDecisions()), input, whole)).toString("latin1");
}

test("after a CSV document, the next one's worker threads are started and waiting; the next document takes them", async () => {
  const next = seeded(7);
  const first = randomCsv(next, { faults: false, rows: 60 });
  assert.equal((await throughWorkers(first)).output, await singleThread(first));
  assert.equal(spareCsvWorkers(), 2, "two spare threads wait once a two-thread document is closed");
  const second = randomCsv(next, { faults: false, rows: 60 });
  let sparesDuring = -1;
  const { output } = await throughWorkers(second, () => {
    sparesDuring = spareCsvWorkers();
  });
  assert.equal(output, await singleThread(second));
  assert.equal(sparesDuring, 0, "the second document took the spares");
  assert.equal(spareCsvWorkers(), 2, "and new ones wait after it");
});

test("no worker thread serves two documents: a document's threads end with it, the next has others", async () => {
  const next = seeded(11);
  const one = await throughWorkers(randomCsv(next, { faults: false, rows: 30 }));
  const two = await throughWorkers(randomCsv(next, { faults: false, rows: 30 }));
  const ids = (workers: Worker[]) => workers.map((worker) => worker.threadId);
  for (const id of ids(two.workers)) assert.ok(!ids(one.workers).includes(id), `thread ${id} served both documents`);
  // A terminated worker reports threadId -1.
  assert.deepEqual(ids(one.workers), [-1, -1]);
});

test("CSV worker threads are named csv-worker (Linux), so that top -H and the objectstore bench tell them apart", {
  skip: process.platform !== "linux",
}, async () => {
  let seen: Array<{ name: string }> = [];
  await throughWorkers(randomCsv(seeded(3), { faults: false, rows: 200 }), () => {
    seen = threadsNow().filter(({ name }) => name === "csv-worker");
  });
  assert.ok(seen.length >= 2, `the document's worker threads are named csv-worker (seen ${seen.length})`);
});

test("a document small enough for the calling thread starts no spare workers", async () => {
  const before = spareCsvWorkers();
  const input = randomCsv(seeded(5), { faults: false, rows: 20 });
  const redactor = new ThreadedCsvRedactor(csvPlan, new FakeDecisions(), { threads: before + 2, blockBytes: 64, inlineBytes: 1 << 20 });
  try {
    assert.equal((await run(redactor, input, whole)).toString("latin1"), await singleThread(input));
  } finally {
    await redactor.close();
  }
  assert.equal(spareCsvWorkers(), before);
});
