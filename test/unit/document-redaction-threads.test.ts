import { test } from "node:test";
import assert from "node:assert/strict";
import { CsvRedactor } from "../../redaction/csv-redactor";
import { csvRedactor, csvThreading, ThreadedCsvRedactor } from "../../redaction/threaded-csv-redactor";
import { documentLimits, type DocumentRedactor } from "../../redaction/types";
import { brokenCsvInputs, csvInputs, csvPlan, FakeDecisions, randomCsv, randomSplits, redactionOutcome, run, seeded, whole } from "../fixtures/csv-documents";

/** Everything a redaction reports: output (or error), tally, and which users it asked about. */
function outcome(redactor: DocumentRedactor, decisions: FakeDecisions, input: Buffer, split: (length: number) => number[]) {
  return redactionOutcome(redactor, decisions, () => run(redactor, input, split));
}

/** The single-thread engine's outcome for the whole document at once: the reference. */
function singleThread(input: Buffer) {
  const decisions = new FakeDecisions();
  return outcome(new CsvRedactor(csvPlan, decisions), decisions, input, whole);
}

/** Worker threads (two unless told) with tiny blocks, so that blocks end inside quoted fields and rows often. */
function threaded(
  input: Buffer,
  options: { blockBytes: number; inlineBytes?: number; split?: (length: number) => number[]; slow?: boolean; workers?: number },
) {
  const decisions = new FakeDecisions(options.slow);
  const redactor = new ThreadedCsvRedactor(csvPlan, decisions, {
    workers: options.workers ?? 2,
    blockBytes: options.blockBytes,
    inlineBytes: options.inlineBytes ?? 0,
  });
  return outcome(redactor, decisions, input, options.split ?? whole);
}

for (const [name, text] of Object.entries(csvInputs)) {
  test(`CSV ${name}: worker threads give the same bytes, stats and lookups as one thread, whatever the block size`, async () => {
    const input = Buffer.from(text);
    const expected = await singleThread(input);
    for (const workers of [1, 2])
      for (const blockBytes of [1, 5, 64]) {
        for (const split of [whole, randomSplits(blockBytes)])
          assert.deepEqual(await threaded(input, { blockBytes, split, workers }), expected, `${workers} worker(s), blocks of ${blockBytes}`);
      }
  });
}

test("CSV errors with worker threads: the same code, message, line and stats of the rows before", async () => {
  for (const [text] of brokenCsvInputs) {
    const input = Buffer.from(text);
    const expected = await singleThread(input);
    assert.ok(expected.error);
    for (const workers of [1, 2])
      for (const blockBytes of [1, 3, 16])
        assert.deepEqual(await threaded(input, { blockBytes, workers }), expected, `${JSON.stringify(text)}, ${workers} worker(s), blocks of ${blockBytes}`);
  }
});

test("a failing CSV row gives the same stats however the input was cut: the rows before it, the bytes before it", async () => {
  const input = Buffer.from("id,alt id,email,clicks,note\nu-all,,a@x,1,n\n\nu-none,,b@x,2,n\nu-contact,,c@x,3\nu-all,,d@x,4,n\n");
  const expected = await singleThread(input);
  assert.deepEqual(expected.error, { code: "CSV_RAGGED_ROW", message: "the row on line 5 has 4 fields; the header has 5", where: { line: 5 } });
  assert.equal(expected.tally.rowsIn, 2);
  assert.equal(expected.tally.emptyLines, 1);
  assert.equal(expected.tally.bytesIn, input.indexOf("u-contact"));
  assert.deepEqual(expected.users, ["u-all", "u-none"], "no user of the failing row or after it is decided");
  for (const split of [randomSplits(3, 5), randomSplits(4, 9)]) {
    const decisions = new FakeDecisions();
    assert.deepEqual(await outcome(new CsvRedactor(csvPlan, decisions), decisions, input, split), expected);
  }
});

test("400 random CSV documents (quoted newlines across blocks, CRLF, BOM, empty lines, long fields, faults): worker threads match one thread", async () => {
  const next = seeded(2024);
  for (let doc = 0; doc < 400; doc++) {
    const input = randomCsv(next, { faults: true, rows: 40 });
    const expected = await singleThread(input);
    const options = {
      blockBytes: 1 + next(300),
      inlineBytes: next(3) === 0 ? next(400) : 0,
      split: randomSplits(doc + 1, 1 + next(500)),
      slow: next(2) === 0,
      workers: 1 + (doc % 2),
    };
    assert.deepEqual(await threaded(input, options), expected, `document ${doc} with ${JSON.stringify(options)}: ${JSON.stringify(input.toString())}`);
  }
});

test("worker threads decide only users of rows whose start is known: a block cut inside a quoted field asks for nothing", async () => {
  // Each quoted note holds what looks like rows of other users; blocks of 8 bytes end inside them again and again.
  const note = '"\nu-intruder,,leak@x,9,n\nu-intruder2,,x,1,n\n"';
  const input = Buffer.from(
    `id,alt id,email,clicks,note\n${Array.from({ length: 50 }, (_, i) => `${i % 2 ? "u-all" : "u-contact"},,e${i}@x,${i},${note}`).join("\n")}\n`,
  );
  const result = await threaded(input, { blockBytes: 8, slow: true });
  assert.deepEqual(result, await singleThread(input));
  assert.deepEqual(result.users, ["u-all", "u-contact"]);
});

test("a document larger than the inline size goes to the workers in blocks, its users asked for block by block", async () => {
  const rows = Array.from({ length: 3000 }, (_, i) => `u-${i % 300},,e${i}@x,${i},"a note, with a comma"`);
  const input = Buffer.from(`id,alt id,email,clicks,note\r\n${rows.join("\r\n")}\r\n`);
  const decisions = new FakeDecisions(true);
  const result = await outcome(
    new ThreadedCsvRedactor(csvPlan, decisions, { workers: 2, blockBytes: 4096, inlineBytes: 10_000 }),
    decisions,
    input,
    randomSplits(9, 3000),
  );
  assert.deepEqual(result, { ...(await singleThread(input)), users: result.users });
  assert.ok(decisions.prepared.length > 3, `users were asked for in ${decisions.prepared.length} requests`);
});

test("a CSV row over the size limit fails the same way on worker threads", async () => {
  const input = Buffer.concat([
    Buffer.from('id,alt id,email,clicks,note\nu-all,,a,1,n\nu-all,,"'),
    Buffer.alloc(documentLimits.maxRecordBytes + 10, 0x61),
    Buffer.from('",1,n\n'),
  ]);
  const expected = await singleThread(input);
  assert.equal(expected.error?.code, "RECORD_TOO_LARGE");
  assert.deepEqual(await threaded(input, { blockBytes: 1 << 16, split: randomSplits(5, 1 << 18) }), expected);
});

test("no workers means the calling thread; one or more are worker threads", () => {
  assert.ok(csvRedactor(csvPlan, new FakeDecisions(), csvThreading(0)) instanceof CsvRedactor);
  assert.ok(csvRedactor(csvPlan, new FakeDecisions(), csvThreading(1)) instanceof ThreadedCsvRedactor);
  assert.ok(csvRedactor(csvPlan, new FakeDecisions(), csvThreading(4)) instanceof ThreadedCsvRedactor);
});

test("a failed decision lookup fails the threaded document instead of releasing its rows, and stopping midway ends the workers", async () => {
  const rows = Array.from({ length: 2000 }, (_, i) => `u-${i},,e${i}@x,${i},n`);
  const input = Buffer.from(`id,alt id,email,clicks,note\n${rows.join("\n")}\n`);
  const failing = new FakeDecisions();
  failing.prepare = async () => {
    throw new Error("user state unavailable");
  };
  const redactor = new ThreadedCsvRedactor(csvPlan, failing, { workers: 2, blockBytes: 1024, inlineBytes: 0 });
  const headerEnd = input.indexOf("\n") + 1;
  const header = await redactor.push(input.subarray(0, headerEnd));
  await assert.rejects(run(redactor, input.subarray(headerEnd), whole), /user state unavailable/);
  assert.equal(header.toString(), "id,alt id,email,clicks,note\n", "only the header, redacted before the lookups failed, came out");
  await redactor.close();

  const stopped = new ThreadedCsvRedactor(csvPlan, new FakeDecisions(true), { workers: 2, blockBytes: 1024, inlineBytes: 0 });
  await stopped.push(input.subarray(0, input.length / 2));
  await stopped.close();
});

test("closing while a push waits (a stopped attempt): the push is released with an error and no decision is asked for afterwards", async () => {
  const rows = Array.from({ length: 20_000 }, (_, i) => `u-${i},,e${i}@x,${i},n`);
  const input = Buffer.from(`id,alt id,email,clicks,note\n${rows.join("\n")}\n`);
  const decisions = new FakeDecisions();
  let closed = false;
  let askedAfterClose = 0;
  const prepare = decisions.prepare.bind(decisions);
  decisions.prepare = async (userIds) => {
    if (closed) askedAfterClose++;
    await new Promise((resolve) => setTimeout(resolve, 50));
    return prepare(userIds);
  };
  const redactor = new ThreadedCsvRedactor(csvPlan, decisions, { workers: 2, blockBytes: 8192, inlineBytes: 0 });
  let waiting = false;
  const pushing = (async () => {
    for (let at = 0; at < input.length; at += 9000) {
      waiting = true;
      await redactor.push(input.subarray(at, at + 9000));
      waiting = false;
    }
  })().then(
    () => assert.fail("the document was pushed to its end although it was closed"),
    (error: unknown) => error as Error,
  );
  while (!waiting || decisions.prepared.length < 2) await new Promise((resolve) => setTimeout(resolve, 5));
  closed = true;
  await redactor.close();
  assert.match((await pushing).message, /closed/, "the waiting push is told, not left hanging");
  await new Promise((resolve) => setTimeout(resolve, 300));
  assert.equal(askedAfterClose, 0, "queued decision requests were skipped");
});
