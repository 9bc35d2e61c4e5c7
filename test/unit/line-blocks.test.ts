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
