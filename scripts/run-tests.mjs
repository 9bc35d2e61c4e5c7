#!/usr/bin/env node
// Runs the compiled test files with Node's test runner, one file at a time: the integration
// suites start real servers and several node processes, and the machine has two cores.
// `node scripts/run-tests.mjs unit` (or any path fragment) runs only the matching files. A file whose
// tests are done exits even if a failed test left a connection open (--test-force-exit): a failure
// must not hang the run.
import { spawnSync } from "node:child_process";
import { readdirSync, statSync } from "node:fs";
import { join, dirname, relative } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const filters = process.argv.slice(2);

function findTests(dir) {
  return readdirSync(dir).flatMap((entry) => {
    const path = join(dir, entry);
    if (statSync(path).isDirectory()) return findTests(path);
    return entry.endsWith(".test.js") ? [path] : [];
  });
}

const files = findTests(join(root, "dist", "test"))
  .filter((file) => filters.length === 0 || filters.some((f) => relative(root, file).includes(f)))
  .sort();
if (files.length === 0) {
  process.stderr.write(`no test files match ${filters.join(" ") || "dist/test"}\n`);
  process.exit(1);
}
const result = spawnSync(process.execPath, ["--enable-source-maps", "--test", "--test-concurrency=1", "--test-force-exit", "--test-reporter=spec", ...files], {
  cwd: root,
  stdio: "inherit",
});
process.exit(result.status ?? 1);
