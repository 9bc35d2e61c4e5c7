import { test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { join } from "node:path";
import { nodeFlags } from "../../service/node-flags";

/**
 * A node launched with the deployed flags starts three workers asking for an 8 MiB young generation: one before
 * withoutSemiSpaceFlag, one inside it, one after its restore. Each reports its heap limit (old generation plus the
 * young one), which shows which young generation it got.
 */
const script = `
const { Worker } = require("node:worker_threads");
const { withoutSemiSpaceFlag } = require(${JSON.stringify(join(__dirname, "..", "..", "service", "node-flags.js"))});
const report = "require('node:worker_threads').parentPort.postMessage(require('node:v8').getHeapStatistics().heap_size_limit)";
const start = () => {
  const worker = new Worker(report, { eval: true, resourceLimits: { maxYoungGenerationSizeMb: 8, maxOldGenerationSizeMb: 64 } });
  return { worker, limit: new Promise((resolve) => worker.once("message", resolve)) };
};
(async () => {
  const before = await start().limit;
  const restore = withoutSemiSpaceFlag();
  const inside = start();
  inside.worker.once("online", restore);
  const within = await inside.limit;
  const after = await start().limit;
  process.stdout.write(JSON.stringify({ before, within, after }));
})();
`;

test("a worker started within withoutSemiSpaceFlag gets its own young generation under the deployed semi-space flag, and the flag is back after", () => {
  const mib = 2 ** 20;
  const { before, within, after } = JSON.parse(execFileSync(process.execPath, [...nodeFlags, "-e", script], { encoding: "utf8" })) as Record<string, number>;
  // 64 MiB old generation: with the 8 MiB young one asked for, about 72-76 MiB; the flag's 24 MiB semi-spaces add tens of MiB.
  assert.ok(within / mib < 80, `the worker's limits applied: ${within / mib} MiB`);
  assert.ok(before / mib > within / mib + 40, `under the flag a worker's young generation follows it (${before / mib} MiB), which is why the window exists`);
  assert.equal(after, before, "the flag is restored as launched once the worker is online");
});
