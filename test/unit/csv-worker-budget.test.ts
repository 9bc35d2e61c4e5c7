import { test } from "node:test";
import assert from "node:assert/strict";
import { CsvRedactor } from "../../redaction/csv-redactor";
import { csvWorkerBudget, limitCsvWorkers } from "../../redaction/csv-worker-pool";
import { ThreadedCsvRedactor } from "../../redaction/threaded-csv-redactor";
import { csvPlan, FakeDecisions, run, whole } from "../fixtures/csv-documents";

/** A document past the inline part (none here): after its header, every push asks for the workers. */
const csv = Buffer.from(
  `id,alt id,email,clicks,note\n${Array.from({ length: 600 }, (_, i) => `${i % 3 ? "u-all" : "u-none"},,e${i}@x,${i},"n, ${i}"`).join("\n")}\n`,
);
const threading = { workers: 2, blockBytes: 1024, inlineBytes: 0 };

/** `csv` cut into `parts` pieces of about the same size (cut anywhere, rows included). */
function pieces(parts: number): Buffer[] {
  const size = Math.ceil(csv.length / parts);
  return Array.from({ length: parts }, (_, n) => csv.subarray(n * size, (n + 1) * size));
}

async function withLimit(limit: number, body: () => Promise<void>): Promise<void> {
  const before = csvWorkerBudget.limit;
  limitCsvWorkers(limit);
  try {
    await body();
  } finally {
    limitCsvWorkers(before);
  }
}

test("the node's worker budget: threads are taken only while that many are free, and given back", () =>
  withLimit(4, async () => {
    assert.equal(csvWorkerBudget.held, 0);
    assert.ok(csvWorkerBudget.take(2));
    assert.ok(csvWorkerBudget.take(2));
    assert.ok(!csvWorkerBudget.take(1), "past the bound");
    csvWorkerBudget.giveBack(2);
    assert.ok(!csvWorkerBudget.take(3));
    assert.ok(csvWorkerBudget.take(2));
    csvWorkerBudget.giveBack(2);
    csvWorkerBudget.giveBack(2);
    assert.equal(csvWorkerBudget.held, 0);
  }));

test("a CSV document that finds no threads free goes on on the calling thread, takes threads once some are free, and gives the bytes and counts of one thread", () =>
  withLimit(2, async () => {
    const reference = new CsvRedactor(csvPlan, new FakeDecisions());
    const expected = (await run(reference, csv, whole)).toString();
    const expectedTally = reference.tally();

    // Another document holds every thread of the node.
    assert.ok(csvWorkerBudget.take(2));
    const redactor = new ThreadedCsvRedactor(csvPlan, new FakeDecisions(), threading);
    const [first, second, third, fourth] = pieces(4);
    const out = [await redactor.push(first!), await redactor.push(second!)];
    assert.equal(
      redactor.directSink(() => undefined),
      undefined,
      "no workers: nothing can be read straight into blocks",
    );
    assert.equal(csvWorkerBudget.held, 2, "this document took none");
    // The other document ends: the next push moves this one to the workers.
    csvWorkerBudget.giveBack(2);
    out.push(await redactor.push(third!));
    assert.equal(csvWorkerBudget.held, 2, "this document's two threads");
    assert.ok(
      redactor.directSink(() => undefined),
      "on the workers now",
    );
    out.push(await redactor.push(fourth!), await redactor.end());
    await redactor.close();
    assert.equal(csvWorkerBudget.held, 0, "given back once its workers ended");
    assert.equal(Buffer.concat(out).toString(), expected);
    assert.deepEqual(redactor.tally(), expectedTally);

    // With no threads free for the whole document: all of it on the calling thread, the same bytes.
    assert.ok(csvWorkerBudget.take(2));
    const starved = new ThreadedCsvRedactor(csvPlan, new FakeDecisions(), threading);
    const all = await run(starved, csv, (length) => [64, length - 64]);
    await starved.close();
    assert.equal(all.toString(), expected);
    assert.deepEqual(starved.tally(), expectedTally);
    csvWorkerBudget.giveBack(2);
    assert.equal(csvWorkerBudget.held, 0);
  }));
