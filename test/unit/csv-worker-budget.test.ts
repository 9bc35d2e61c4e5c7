import { test } from "node:test";
import assert from "node:assert/strict";
import { csvWorkerBudget, limitCsvWorkers } from "../../redaction/csv-worker-pool";
import { ThreadedCsvRedactor } from "../../redaction/threaded-csv-redactor";
import { csvPlan, FakeDecisions, run, whole } from "../fixtures/csv-documents";

const settled = (promise: Promise<unknown>) =>
  Promise.race([
    promise.then(
      () => "settled",
      () => "settled",
    ),
    new Promise((resolve) => setTimeout(() => resolve("pending"), 100)),
  ]);

/** A document past the inline part: its second push needs the workers. */
const csv = Buffer.from(`id,alt id,email,clicks,note\n${Array.from({ length: 200 }, (_, i) => `u-all,,e${i}@x,${i},n`).join("\n")}\n`);
const header = csv.subarray(0, csv.indexOf("\n") + 1);
const rows = csv.subarray(header.length);
const threading = { threads: 2, blockBytes: 1024, inlineBytes: 0 };

test("the node's worker budget: granted in order up to the bound, a document waiting holds up those after it, a cancelled wait leaves the queue", async () => {
  const before = csvWorkerBudget.limit;
  limitCsvWorkers(4);
  try {
    const first = csvWorkerBudget.acquire(2);
    const second = csvWorkerBudget.acquire(2);
    const third = csvWorkerBudget.acquire(3);
    const fourth = csvWorkerBudget.acquire(1);
    assert.equal(await settled(first.granted), "settled");
    assert.equal(await settled(second.granted), "settled");
    assert.equal(await settled(third.granted), "pending", "past the bound");
    assert.equal(await settled(fourth.granted), "pending", "behind a document that waits, though one thread would fit later");
    first.cancel();
    assert.equal(await settled(third.granted), "pending", "3 do not fit beside 2");
    second.cancel();
    assert.equal(await settled(third.granted), "settled");
    assert.equal(await settled(fourth.granted), "settled", "3 + 1 fit");
    assert.equal(csvWorkerBudget.held, 4);
    third.cancel();
    fourth.cancel();
    fourth.cancel();
    assert.equal(csvWorkerBudget.held, 0, "each given back once");

    const holder = csvWorkerBudget.acquire(4);
    const leaving = csvWorkerBudget.acquire(2);
    const after = csvWorkerBudget.acquire(2);
    leaving.cancel();
    assert.equal(await settled(leaving.granted), "settled", "a cancelled wait wakes its waiter");
    holder.cancel();
    assert.equal(await settled(after.granted), "settled", "the cancelled wait holds up nobody");
    assert.equal(csvWorkerBudget.held, 2);
    after.cancel();
    assert.equal(csvWorkerBudget.waiting(), 0);
    assert.equal(csvWorkerBudget.held, 0);
  } finally {
    limitCsvWorkers(before);
  }
});

test("a CSV document past the node's worker budget waits for its threads, reading nothing, and goes on once a document before it ends", async () => {
  const before = csvWorkerBudget.limit;
  limitCsvWorkers(2);
  try {
    const a = new ThreadedCsvRedactor(csvPlan, new FakeDecisions(), threading);
    const b = new ThreadedCsvRedactor(csvPlan, new FakeDecisions(), threading);
    assert.ok((await a.push(header)).length > 0);
    assert.ok((await b.push(header)).length > 0, "the header is redacted on the calling thread, before any worker");
    const aRows = a.push(rows);
    const bRows = b.push(rows);
    assert.equal(await settled(aRows), "settled");
    assert.equal(await settled(bRows), "pending", "the second document waits for threads");
    assert.equal(csvWorkerBudget.held, 2);
    await a.end();
    await a.close();
    assert.equal(await settled(bRows), "settled", "and goes on once the first document's threads are gone");
    const rest = await b.end();
    await b.close();
    assert.equal(csvWorkerBudget.held, 0);
    assert.ok(
      Buffer.concat([await bRows, rest])
        .toString()
        .includes("e199@x"),
      "the whole document",
    );

    // The same document whole, for comparison, with room for it.
    const alone = new ThreadedCsvRedactor(csvPlan, new FakeDecisions(), threading);
    const expected = await run(alone, csv, whole);
    await alone.close();
    assert.ok(expected.includes(Buffer.concat([await bRows, rest])));
  } finally {
    limitCsvWorkers(before);
  }
});

test("a document whose reader goes away while it waits for threads fails at once and leaves the queue; one closed while it waits too", async () => {
  const before = csvWorkerBudget.limit;
  limitCsvWorkers(2);
  try {
    const holder = csvWorkerBudget.acquire(2);
    const gone = new AbortController();
    const waiting = new ThreadedCsvRedactor(csvPlan, new FakeDecisions(), threading, gone.signal);
    await waiting.push(header);
    const pushed = waiting.push(rows);
    assert.equal(await settled(pushed), "pending");
    assert.equal(csvWorkerBudget.waiting(), 1);
    gone.abort();
    await assert.rejects(pushed, /went away while it waited for worker threads/);
    assert.equal(csvWorkerBudget.waiting(), 0, "its place in the queue is given up");
    await waiting.close();

    const closed = new ThreadedCsvRedactor(csvPlan, new FakeDecisions(), threading);
    await closed.push(header);
    const blocked = closed.push(rows);
    assert.equal(await settled(blocked), "pending");
    await closed.close();
    await assert.rejects(blocked, /closed/);
    assert.equal(csvWorkerBudget.waiting(), 0);
    holder.cancel();
    assert.equal(csvWorkerBudget.held, 0);
  } finally {
    limitCsvWorkers(before);
  }
});
