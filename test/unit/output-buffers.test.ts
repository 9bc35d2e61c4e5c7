import { test } from "node:test";
import assert from "node:assert/strict";
import { OutputBuffers } from "../../redaction/output-buffers";
import { ThreadedCsvRedactor } from "../../redaction/threaded-csv-redactor";
import { CsvRedactor } from "../../redaction/csv-redactor";
import { csvPlan, FakeDecisions, run, whole } from "../fixtures/csv-documents";

/** Empties the process-wide pool, so that a test sees only the buffers it gave back. */
function drain(): void {
  const buffers = new OutputBuffers();
  while (buffers.take()) {}
}

test("an output buffer taken by another document holds none of the first document's bytes; only whole outputs handed out come back, once", () => {
  drain();
  const first = new OutputBuffers();
  const buffer = new ArrayBuffer(256);
  Buffer.from(buffer).write("alice,secret-field\n".repeat(12));
  const output = first.output(buffer, 19);
  assert.equal(output.toString(), "alice,secret-field\n");

  first.written(output.subarray(1));
  first.written(Buffer.from("not an output of this document"));
  new OutputBuffers().written(output);
  assert.equal(first.take(), undefined, "a view into an output, a buffer of no worker, another document's output: none is kept");

  first.written(output);
  first.written(output);
  const second = new OutputBuffers();
  const taken = second.take();
  assert.equal(taken, buffer, "the written output's buffer is kept");
  assert.ok(
    Buffer.from(taken).every((byte) => byte === 0),
    "zeroed for another document",
  );
  assert.equal(second.take(), undefined, "kept once, however often it is said to be written");
});

test("worker threads write a later document's outputs into the buffers of an earlier one's written outputs, with none of its bytes past their length", async () => {
  drain();
  const blockBytes = 4096;
  /** Redacts `input` in chunks of a block, saying each output written once read; the outputs. */
  const redact = async (input: Buffer) => {
    const redactor = new ThreadedCsvRedactor(csvPlan, new FakeDecisions(), { workers: 2, blockBytes, inlineBytes: 0 });
    const outputs: Buffer[] = [];
    const take = (output: Buffer) => {
      if (output.length === 0) return;
      // What the client is sent: copied before the buffer is given back (it may take another output at once).
      outputs.push(Buffer.from(output));
      // The whole buffer as it is when written, past the output's length too; not an output Buffer.concat joined in Node's shared slab (Buffer.poolSize).
      outputs.push(output.buffer.byteLength === Buffer.poolSize ? Buffer.alloc(0) : Buffer.from(new Uint8Array(output.buffer)));
      redactor.written(output);
    };
    try {
      for (let at = 0; at < input.length; at += blockBytes) {
        let output = await redactor.push(input.subarray(at, at + blockBytes));
        // Each block's output taken before the next block (what still waits at the end is joined into a new buffer): every block here keeps rows.
        for (let tries = 0; output.length === 0 && at >= blockBytes && tries < 500; tries++) {
          await new Promise((resolve) => setTimeout(resolve, 2));
          output = await redactor.push(Buffer.alloc(0));
        }
        take(output);
      }
      take(await redactor.end());
    } finally {
      await redactor.close();
    }
    return { sent: Buffer.concat(outputs.filter((_, i) => i % 2 === 0)).toString(), buffers: outputs.filter((_, i) => i % 2 === 1) };
  };
  const header = "id,alt id,email,clicks,note\n";
  // Long rows kept first, so that the first document's buffers are big; then rows mostly dropped, whose outputs are short.
  const first = await redact(Buffer.from(header + Array.from({ length: 400 }, (_, n) => `u-all,,secret-${n}-${"x".repeat(80)}@x,1,n\n`).join("")));
  assert.ok(first.sent.includes("secret-399-"), "the first document's rows are kept");
  const input = Buffer.from(header + Array.from({ length: 3000 }, (_, n) => (n % 50 === 0 ? `u-all,,b-${n}@x,1,n\n` : "u-none,,c@x,1,n\n")).join(""));
  const second = await redact(input);
  assert.equal(second.sent, (await run(new CsvRedactor(csvPlan, new FakeDecisions()), input, whole)).toString());
  assert.ok(
    second.buffers.some((buffer) => buffer.length > 2048),
    "some of the second document's short outputs are in buffers the first document's long outputs were written in",
  );
  for (const buffer of second.buffers) assert.equal(buffer.includes("secret"), false, "no byte of the first document in the second's buffers");
});
