import { test } from "node:test";
import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import type { Worker } from "node:worker_threads";
import { CsvRedactor } from "../../redaction/csv-redactor";
import { spareCsvWorkers } from "../../redaction/csv-worker-pool";
import { ThreadedCsvRedactor } from "../../redaction/threaded-csv-redactor";
import type { DecisionSource, RowDecision } from "../../redaction/types";
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
  const redactor = new ThreadedCsvRedactor(csvPlan, new FakeDecisions(), { workers: 2, blockBytes: 64, inlineBytes: 0 });
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

/** Decisions that allow every user, or drop every user. */
function everyone(allowed: boolean): DecisionSource {
  const decision: RowDecision = allowed
    ? { allowed: true, reason: "ALLOWED_BY_TERMS", categories: new Set(["contact", "usage"]) }
    : { allowed: false, reason: "NO_TERMS_ACCEPTED", categories: new Set() };
  return { prepare: async () => undefined, of: () => decision };
}

/** `input` through two worker threads (blocks of 64 bytes, all of them on the workers) with `decisions`; the output and the threads' ids. */
async function redactOn(input: Buffer, decisions: DecisionSource) {
  const redactor = new ThreadedCsvRedactor(csvPlan, decisions, { workers: 2, blockBytes: 64, inlineBytes: 0 });
  try {
    const output = await run(redactor, input, (length) => Array.from({ length: Math.ceil(length / 100) }, () => 100));
    const ids = (redactor as unknown as { workers: Array<{ thread: Worker }> }).workers.map((worker) => worker.thread.threadId);
    return { output: output.toString("latin1"), ids };
  } finally {
    await redactor.close();
  }
}

test("a worker thread serves documents one after another, and nothing of one reaches the next: its users' verdicts are the next one's own", async () => {
  const rows = Array.from({ length: 200 }, (_, i) => `u-${i % 7},,user${i}@example.com,${i},note ${i}\n`).join("");
  const input = Buffer.from(`id,alt id,email,clicks,note\n${rows}`);
  const allowed = await redactOn(input, everyone(true));
  assert.ok(allowed.output.includes("user199@example.com"), "the first document keeps its users' rows");
  assert.equal(spareCsvWorkers(), 2);
  // The same threads, the same users met already: this document's verdicts drop every one of them.
  const dropped = await redactOn(input, everyone(false));
  assert.deepEqual(dropped.ids.sort(), allowed.ids.sort(), "the second document had the first one's threads");
  assert.equal(dropped.output, "id,alt id,email,clicks,note\n", "no row of a user the first document allowed is kept");
  // And back: the verdicts of the document that dropped them do not stay either.
  assert.equal((await redactOn(input, everyone(true))).output, allowed.output);
});

test("a document whose worker failed ends its threads instead of handing them to the next", async () => {
  const input = Buffer.from(`id,alt id,email,clicks,note\n${"u-all,,a@example.com,1,n\n".repeat(50)}`);
  const redactor = new ThreadedCsvRedactor(csvPlan, new FakeDecisions(), { workers: 2, blockBytes: 64, inlineBytes: 0 });
  // The header on this thread, then the workers start with the next piece.
  await redactor.push(input.subarray(0, 100));
  await redactor.push(input.subarray(100, 200));
  const threads = (redactor as unknown as { workers: Array<{ thread: Worker }> }).workers.map((worker) => worker.thread);
  await threads[0].terminate();
  await assert.rejects(async () => {
    await redactor.push(input.subarray(200));
    await redactor.end();
  }, /CSV worker thread stopped/);
  await redactor.close();
  assert.equal(threads[1].threadId, -1, "the other thread of the failed document ended too");
  assert.equal(spareCsvWorkers(), 2, "and new ones wait in their place");
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
  const redactor = new ThreadedCsvRedactor(csvPlan, new FakeDecisions(), { workers: before + 2, blockBytes: 64, inlineBytes: 1 << 20 });
  try {
    assert.equal((await run(redactor, input, whole)).toString("latin1"), await singleThread(input));
  } finally {
    await redactor.close();
  }
  assert.equal(spareCsvWorkers(), before);
});
