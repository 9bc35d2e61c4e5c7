import { test } from "node:test";
import assert from "node:assert/strict";
import { LineBlocks } from "../../redaction/line-blocks";

/** Rows of `row` up to at least `bytes`. */
const rows = (row: string, bytes: number) => Buffer.from(row.repeat(Math.ceil(bytes / row.length)));

test("a block buffer reused by another document holds none of the first document's bytes", () => {
  const blockBytes = 4096;
  const first = new LineBlocks(blockBytes);
  first.append(rows("alice,secret-field\n", blockBytes * 2));
  const firstBlock = first.take();
  assert.ok(firstBlock, "the first document gives a block");
  // Its reader hands the block back, and the document ends: both buffers are kept for reuse.
  first.recycle(firstBlock.input);
  first.release();

  const second = new LineBlocks(blockBytes);
  second.append(rows("b\n", blockBytes));
  const block = second.take();
  assert.ok(block, "the second document gives a block");
  const bytes = Buffer.from(block.input);
  assert.equal(bytes.subarray(0, block.length).toString(), "b\n".repeat(block.length / 2));
  assert.equal(bytes.includes("secret"), false, "no byte of the first document past the block's length");
  const rest = second.takeRest();
  assert.equal(Buffer.from(rest.input).includes("secret"), false, "nor in the buffer that gathers the rest");
});

test("a released LineBlocks keeps nothing of its input", () => {
  const blocks = new LineBlocks(1024);
  blocks.append(Buffer.from("x,y\n".repeat(10)));
  blocks.release();
  assert.equal(blocks.takeRest().length, 0);
});

test("input read into the room is gathered in place, and the block it completes holds it", () => {
  const blocks = new LineBlocks(4096);
  const room = blocks.room();
  const input = rows("carol,field\n", 5000);
  input.copy(room);
  blocks.commit(room.subarray(0, input.length));
  const block = blocks.take();
  assert.ok(block);
  assert.equal(block.input, room.buffer, "the block is the buffer the room was in: no copy");
  assert.equal(
    Buffer.from(block.input, 0, block.length).toString() +
      Buffer.from(blocks.takeRest().input)
        .toString("utf8")
        .slice(0, input.length - block.length),
    input.toString(),
  );
});

test("bytes read into a room the buffer has since moved away from (prepend) are copied, none lost", () => {
  const blocks = new LineBlocks(4096);
  blocks.append(Buffer.from("a,1\n"));
  const room = blocks.room();
  blocks.prepend(Buffer.from("head,0\n"));
  room.write("b,2\n");
  blocks.commit(room.subarray(0, 4));
  const rest = blocks.takeRest();
  assert.equal(Buffer.from(rest.input, 0, rest.length).toString(), "head,0\na,1\nb,2\n");
});

test("a buffer whose room a reader may still write into is never handed to another document", () => {
  const blockBytes = 4096;
  const first = new LineBlocks(blockBytes);
  first.append(Buffer.from("a,1\n"));
  const room = first.room();
  // The first document ends while its reader still holds the room (its socket not yet closed).
  first.release();
  const second = new LineBlocks(blockBytes);
  second.append(rows("b\n", blockBytes * 2));
  // The first document's store writes into the room it was given: none of it may reach the second document.
  room.fill("secret");
  const block = second.take();
  assert.ok(block);
  assert.equal(Buffer.from(block.input).includes("secret"), false, "not in the second document's block");
  assert.equal(Buffer.from(second.takeRest().input).includes("secret"), false, "nor in its gathering buffer");
});

test("unfinished rows put back again and again keep the gathering buffer at its size (it grows only when outgrown)", () => {
  const blocks = new LineBlocks(256);
  const unfinished = Buffer.from('u1,"a quoted field not yet closed');
  // Each block's unfinished end goes back in front (ThreadedCsvRedactor.release): twice the buffer per time, it overflowed.
  for (let i = 0; i < 40; i++) blocks.prepend(unfinished);
  const block = blocks.takeRest();
  assert.equal(Buffer.from(block.input, 0, block.length).toString(), unfinished.toString().repeat(40));
  assert.ok(block.input.byteLength < 1 << 20, `the gathering buffer reached ${block.input.byteLength} bytes`);
});
