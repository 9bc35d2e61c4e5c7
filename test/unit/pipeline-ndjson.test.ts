import { test } from "node:test";
import assert from "node:assert/strict";
import { ndjsonBatches, type NdjsonLine } from "../../proxies/pipeline/ndjson-lines";

async function linesOf(chunks: string[], maxLineBytes = 1024): Promise<Array<{ number: number; text?: string; overlong?: true }>> {
  async function* source() {
    for (const chunk of chunks) yield Buffer.from(chunk);
  }
  const out: Array<{ number: number; text?: string; overlong?: true }> = [];
  for await (const batch of ndjsonBatches(source(), maxLineBytes)) {
    assert.ok(batch.length > 0, "no empty batches");
    for (const line of batch as NdjsonLine[])
      out.push("overlong" in line ? { number: line.number, overlong: true } : { number: line.number, text: line.bytes.toString() });
  }
  return out;
}

test("lines are found at every split point of the stream, numbered from 1; blank lines are skipped but counted", async () => {
  const text = '{"a":1}\n\n{"b":"é"}\r\n  \n{"c":3}';
  const expected = [
    { number: 1, text: '{"a":1}' },
    { number: 3, text: '{"b":"é"}\r' },
    { number: 5, text: '{"c":3}' },
  ];
  const bytes = Buffer.from(text);
  for (let split = 0; split <= bytes.length; split++) {
    const chunks = [bytes.subarray(0, split).toString("latin1"), bytes.subarray(split).toString("latin1")];
    async function* source() {
      for (const chunk of chunks) yield Buffer.from(chunk, "latin1");
    }
    const found: Array<{ number: number; text: string }> = [];
    for await (const batch of ndjsonBatches(source(), 1024))
      for (const line of batch) if (!("overlong" in line)) found.push({ number: line.number, text: line.bytes.toString() });
    assert.deepEqual(found, expected, `split at ${split}`);
  }
});

test("a line longer than the limit is reported once by number and its bytes are dropped as they come; the next line goes on", async () => {
  const long = "x".repeat(30);
  assert.deepEqual(await linesOf([`{"a":1}\n${long.slice(0, 10)}`, long.slice(10, 20), `${long.slice(20)}\n{"b":2}\n`], 16), [
    { number: 1, text: '{"a":1}' },
    { number: 2, overlong: true },
    { number: 3, text: '{"b":2}' },
  ]);
  assert.deepEqual(await linesOf([`${long}\n{"b":2}`], 16), [
    { number: 1, overlong: true },
    { number: 2, text: '{"b":2}' },
  ]);
  assert.deepEqual(await linesOf([long], 16), [{ number: 1, overlong: true }], "an overlong last line without a newline");
});

test("what arrived in one chunk is one batch", async () => {
  async function* source() {
    yield Buffer.from("{}\n{}\n{");
    yield Buffer.from("}\n");
  }
  const sizes: number[] = [];
  for await (const batch of ndjsonBatches(source(), 1024)) sizes.push(batch.length);
  assert.deepEqual(sizes, [2, 1]);
});
