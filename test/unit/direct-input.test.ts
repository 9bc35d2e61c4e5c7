import { test } from "node:test";
import assert from "node:assert/strict";
import { CsvRedactor } from "../../redaction/csv-redactor";
import type { DirectInput, InputSink } from "../../redaction/direct-input";
import { redactedChunks } from "../../redaction/document-stream";
import { ThreadedCsvRedactor } from "../../redaction/threaded-csv-redactor";
import type { DocumentRedactor } from "../../redaction/types";
import { brokenCsvInputs, csvInputs, csvPlan, FakeDecisions, randomCsv, redactionOutcome, seeded, whole, run } from "../fixtures/csv-documents";

/** A reader like the store's body (store-body.ts): each read written into the sink's room, of a size from `next`, one per turn of the event loop. */
class FakeReader implements DirectInput {
  private sink?: InputSink;
  private at = 0;
  /** Bytes read so far. */
  get read(): number {
    return this.at;
  }
  private paused = true;
  private scheduled = false;
  private ended = false;
  pauses = 0;
  inPlace = 0;

  constructor(
    private readonly input: Buffer,
    private readonly next: (n: number) => number,
  ) {}

  readInto(sink: InputSink): void {
    this.sink = sink;
  }

  pause(): void {
    this.paused = true;
  }

  resume(): void {
    this.paused = false;
    if (!this.scheduled && !this.ended) {
      this.scheduled = true;
      setImmediate(() => this.readOnce());
    }
  }

  destroy(error?: Error): void {
    if (this.ended) return;
    this.ended = true;
    this.sink?.ended(error ?? new Error("destroyed"));
  }

  private readOnce(): void {
    this.scheduled = false;
    if (this.paused || this.ended) return;
    if (this.at === this.input.length) {
      this.ended = true;
      return this.sink!.ended();
    }
    const room = this.sink!.room();
    const size = Math.min(1 + this.next(40), room.length, this.input.length - this.at);
    this.input.copy(room, 0, this.at, this.at + size);
    this.at += size;
    if (!this.sink!.arrived(room.subarray(0, size))) {
      this.paused = true;
      this.pauses++;
      return;
    }
    this.resume();
  }
}

/** Output (or error), tally and the users asked about: of `redactor` fed by `input`. */
function outcome(redactor: DocumentRedactor, decisions: FakeDecisions, input: DirectInput | Buffer) {
  return redactionOutcome(redactor, decisions, async () => {
    if (Buffer.isBuffer(input)) return run(redactor, input, whole);
    const parts: Buffer[] = [];
    for await (const out of redactedChunks(redactor, input)) parts.push(out);
    return Buffer.concat(parts);
  });
}

async function direct(input: Buffer, blockBytes: number, seed: number) {
  const decisions = new FakeDecisions(true);
  const reader = new FakeReader(input, seeded(seed));
  const result = await outcome(new ThreadedCsvRedactor(csvPlan, decisions, { workers: 2, blockBytes, inlineBytes: 0 }), decisions, reader);
  return { result, reader };
}

async function singleThread(input: Buffer) {
  const decisions = new FakeDecisions();
  return outcome(new CsvRedactor(csvPlan, decisions), decisions, input);
}

test("a CSV read straight into the block buffers gives the bytes, stats and lookups of one thread, however the reads fall", { timeout: 60_000 }, async () => {
  const inputs = [...Object.values(csvInputs).map((text) => Buffer.from(text)), randomCsv(seeded(7), { faults: false, rows: 400 })];
  let pauses = 0;
  for (const [n, input] of inputs.entries()) {
    const expected = await singleThread(input);
    for (const blockBytes of [16, 256]) {
      const { result, reader } = await direct(input, blockBytes, n + blockBytes);
      assert.deepEqual(result, expected, `input ${n} in blocks of ${blockBytes}`);
      pauses += reader.pauses;
    }
  }
  assert.ok(pauses > 0, "the reader was stopped (enough blocks in flight) and resumed");
});

test("a broken CSV read straight into the block buffers fails as with one thread", async () => {
  for (const [text] of brokenCsvInputs) {
    const input = Buffer.from(text);
    const expected = await singleThread(input);
    assert.ok(expected.error);
    assert.deepEqual((await direct(input, 8, 3)).result, expected, JSON.stringify(text));
  }
});

test("a reader that fails midway fails the document: it never ends as complete", async () => {
  const input = randomCsv(seeded(11), { faults: false, rows: 2000 });
  const decisions = new FakeDecisions();
  const redactor = new ThreadedCsvRedactor(csvPlan, decisions, { workers: 2, blockBytes: 64, inlineBytes: 0 });
  const reader = new FakeReader(input, seeded(5));
  setTimeout(() => reader.destroy(new Error("the store's connection ended early")), 5);
  await assert.rejects(
    (async () => {
      for await (const _ of redactedChunks(redactor, reader));
    })(),
    /ended early/,
  );
});

test("a consumer that stops reading stops the reader: what is read stays within the blocks in flight", async () => {
  const input = randomCsv(seeded(13), { faults: false, rows: 4000 });
  assert.ok(input.length > 100_000, `${input.length} bytes`);
  const decisions = new FakeDecisions();
  const redactor = new ThreadedCsvRedactor(csvPlan, decisions, { workers: 2, blockBytes: 256, inlineBytes: 0 });
  const reader = new FakeReader(input, seeded(17));
  const chunks = redactedChunks(redactor, reader);
  assert.equal((await chunks.next()).done, false, "the header's output");
  assert.equal((await chunks.next()).done, false, "the first block's output: the reader reads into the block buffers");
  await new Promise((resolve) => setTimeout(resolve, 300));
  const read = reader.read;
  assert.ok(read < 20_000, `${read} of ${input.length} bytes read while nothing was taken`);
  const parts: Buffer[] = [];
  for (let next = await chunks.next(); !next.done; next = await chunks.next()) parts.push(next.value);
  assert.ok(reader.read === input.length, "all of it once the consumer reads again");
});
