import { test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { join } from "node:path";

const dist = join(__dirname, "..", "..");

/**
 * In a fresh process, as a node starts: the registry of export types (which imports every door,
 * the PostgreSQL one with its statement analysis) leaves libpg-query unloaded, a parse before
 * loadSqlParser() fails with a clear error instead of working on a half-loaded parser, and the
 * first parse after it works and sees PostgreSQL's grammar.
 */
const script = `
const { exportDoors } = require(${JSON.stringify(join(dist, "service", "export-doors.js"))});
const parser = require(${JSON.stringify(join(dist, "proxies", "postgres", "analysis", "sql-parser.js"))});
const loaded = () => Object.keys(require.cache).some((file) => file.includes("/node_modules/libpg-query/"));
const report = { registry: typeof exportDoors, atStart: loaded() };
try { parser.parseStatements("select 1"); report.before = "parsed"; } catch (error) { report.before = error.message; }
parser.loadSqlParser().then(() => {
  report.afterLoad = loaded();
  report.statements = parser.parseStatements("select id from users; update t set a = 1").map((s) => Object.keys(s.node)[0]);
  try { parser.parseStatements("selec 1"); } catch (error) { report.syntaxError = error.constructor.name + " at " + error.position; }
  process.stdout.write(JSON.stringify(report));
});
`;

test("libpg-query is loaded by loadSqlParser (a PostgreSQL export opening its port), not when the node imports the export types, and parses on first use", () => {
  const report = JSON.parse(execFileSync(process.execPath, ["-e", script], { encoding: "utf8" })) as Record<string, unknown>;
  assert.equal(report.registry, "function");
  assert.equal(report.atStart, false, "importing the export types must not load libpg-query (its WebAssembly is ~17 MiB resident)");
  assert.equal(report.before, "the SQL parser is not loaded (loadSqlParser() first)");
  assert.equal(report.afterLoad, true);
  assert.deepEqual(report.statements, ["SelectStmt", "UpdateStmt"]);
  assert.equal(report.syntaxError, "SqlSyntaxError at 1");
});
