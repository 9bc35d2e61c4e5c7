import { createHash } from "node:crypto";
import { reportFigure } from "./report";
import { once } from "node:events";
import { createReadStream, createWriteStream, statSync, writeFileSync } from "node:fs";
import { isDeepStrictEqual } from "node:util";
import { benchGroup, benchUserAllowed, benchUserId, writeBenchCsv } from "./csv-fixture";
import { join } from "node:path";
import { pipeline } from "node:stream/promises";
import { performance } from "node:perf_hooks";
import { parse } from "csv-parse";
import { stringify } from "csv-stringify";
import { compilePolicy } from "../decision/compiled-policy";
import { planRecords } from "../decision/record-redaction";
import { CsvRedactor } from "../redaction/csv-redactor";
import { csvRedactor, csvThreading } from "../redaction/threaded-csv-redactor";
import type { DecisionSource, DocumentRedactor, RedactionTally, RowDecision } from "../redaction/types";
import { loadConfig } from "../service/config";
import { realisticPolicy } from "../testkit/policy";
import { tempDir } from "../testkit/temp";

/**
 * The redaction engine file to file, against (a) a bare csv-parse -> csv-stringify pipeline over
 * the same file and (b) DuckDB doing the same redaction as one COPY with a join. A CSV of
 * BENCH_MB megabytes (default 1024): 8 columns, quoted fields with commas (and doubled quotes),
 * 10,000 users of which half may not be used (their rows are dropped); of the kept rows' fields,
 * the user id, name, address and note are emptied. Prints MB/s of each and the ratios. The
 * engine runs with the node's REDACTION_THREADS (default: one fewer than the cores) and again on one thread; the
 * two outputs and stats must be identical.
 */
const megabytes = Number(process.env.BENCH_MB ?? 1024);
const users = 10_000;
const dir = tempDir("bench-redaction");
const input = join(dir, "input.csv");
const allowedCategories = new Set(["contact", "usage"]);

function rate(bytes: number, ms: number): number {
  return bytes / 1024 / 1024 / (ms / 1000);
}

const plan = planRecords(compilePolicy(realisticPolicy(), 1), benchGroup);

function benchDecisions(): DecisionSource {
  const allowed: RowDecision = { allowed: true, reason: "ALLOWED_BY_TERMS", categories: allowedCategories };
  const denied: RowDecision = { allowed: false, reason: "NO_TERMS_ACCEPTED", categories: new Set() };
  const decisions = new Map<string, RowDecision>();
  for (let user = 0; user < users; user++) decisions.set(benchUserId(user), benchUserAllowed(user) ? allowed : denied);
  return { prepare: async () => undefined, of: (userId) => decisions.get(userId) ?? denied };
}

/** Redacts the input file to `name` with `redactor`; the time, the stats and the output's SHA-256. */
async function ours(redactor: DocumentRedactor, name: string): Promise<{ ms: number; tally: RedactionTally; sha256: string }> {
  const started = performance.now();
  const output = join(dir, name);
  const out = createWriteStream(output, { highWaterMark: 1 << 20 });
  for await (const chunk of createReadStream(input, { highWaterMark: 1 << 20 })) {
    if (!out.write(await redactor.push(chunk as Buffer))) await once(out, "drain");
  }
  out.end(await redactor.end());
  await once(out, "finish");
  const ms = performance.now() - started;
  await redactor.close();
  const hash = createHash("sha256");
  for await (const chunk of createReadStream(output)) hash.update(chunk as Buffer);
  return { ms, tally: redactor.tally(), sha256: hash.digest("hex") };
}

async function csvParsePipeline(): Promise<number> {
  const started = performance.now();
  await pipeline(createReadStream(input, { highWaterMark: 1 << 20 }), parse(), stringify(), createWriteStream(join(dir, "csv-parse.csv")));
  return performance.now() - started;
}

/** The part of @duckdb/node-api used here. It is installed by the bench's npm script, not a dependency: its
 * lock entries name platform packages some registries do not carry, which would break `npm ci`. */
interface DuckDb {
  DuckDBInstance: {
    create(path: string): Promise<{
      connect(): Promise<{ run(sql: string): Promise<unknown>; runAndReadAll(sql: string): Promise<{ getRows(): unknown[][] }>; closeSync(): void }>;
    }>;
  };
}

async function duckdb(): Promise<{ ms: number; kept: number }> {
  const { DuckDBInstance } = require("@duckdb/node-api") as DuckDb;
  const usersFile = join(dir, "users.csv");
  writeFileSync(usersFile, `user_id,allowed\n${Array.from({ length: users }, (_, user) => `${benchUserId(user)},${benchUserAllowed(user)}`).join("\n")}\n`);
  const instance = await DuckDBInstance.create(":memory:");
  const connection = await instance.connect();
  const output = join(dir, "duckdb.csv");
  const started = performance.now();
  await connection.run(
    `COPY (SELECT '' AS user_id, d.email, '' AS name, '' AS address, d.phone, d.clicks, '' AS note, d.created_at
           FROM read_csv('${input}', header = true, all_varchar = true) d
           JOIN read_csv('${usersFile}', header = true) u ON d.user_id = u.user_id
           WHERE u.allowed)
     TO '${output}' (HEADER)`,
  );
  const ms = performance.now() - started;
  const count = await connection.runAndReadAll(`SELECT count(*) FROM read_csv('${output}', header = true, all_varchar = true)`);
  connection.closeSync();
  return { ms, kept: Number(count.getRows()[0][0]) };
}

async function main(): Promise<void> {
  process.stdout.write(`generating ${megabytes} MB of CSV in ${dir} ...\n`);
  const generated = await writeBenchCsv(input, megabytes, users);
  const bytes = statSync(input).size;
  process.stdout.write(`${generated.rows} rows, ${(bytes / 2 ** 20).toFixed(0)} MiB, ${generated.kept} rows of allowed users\n`);
  const threading = csvThreading(loadConfig([], process.env).redactionThreads);
  const engine = await ours(csvRedactor(plan, benchDecisions(), threading), "ours.csv");
  if (engine.tally.rowsKept !== generated.kept) throw new Error(`the engine kept ${engine.tally.rowsKept} rows, expected ${generated.kept}`);
  process.stdout.write(
    `engine, ${threading.workers} worker threads:          ${rate(bytes, engine.ms).toFixed(1)} MiB/s (${(engine.ms / 1000).toFixed(1)} s)\n`,
  );
  const single = await ours(new CsvRedactor(plan, benchDecisions()), "ours-one-thread.csv");
  process.stdout.write(`engine, one thread:           ${rate(bytes, single.ms).toFixed(1)} MiB/s (${(single.ms / 1000).toFixed(1)} s)\n`);
  if (engine.sha256 !== single.sha256) throw new Error(`the outputs differ: ${engine.sha256} with threads, ${single.sha256} on one thread`);
  if (!isDeepStrictEqual(engine.tally, single.tally))
    throw new Error(`the stats differ: ${JSON.stringify(engine.tally)} with threads, ${JSON.stringify(single.tally)} on one thread`);
  process.stdout.write(`same output (sha256 ${engine.sha256.slice(0, 16)}…) and stats with threads and on one thread\n`);
  const duck = await duckdb();
  if (duck.kept !== generated.kept) throw new Error(`DuckDB kept ${duck.kept} rows, expected ${generated.kept}`);
  process.stdout.write(`DuckDB COPY with a join:      ${rate(bytes, duck.ms).toFixed(1)} MiB/s (${(duck.ms / 1000).toFixed(1)} s)\n`);
  const bare = await csvParsePipeline();
  process.stdout.write(`csv-parse -> csv-stringify:   ${rate(bytes, bare).toFixed(1)} MiB/s (${(bare / 1000).toFixed(1)} s)\n`);
  process.stdout.write(
    `ratio engine / DuckDB: ${(duck.ms / engine.ms).toFixed(2)}x (target >= 0.5x; one thread ${(duck.ms / single.ms).toFixed(2)}x); engine / csv-parse: ${(bare / engine.ms).toFixed(2)}x\n`,
  );
  reportFigure({
    figure: `CSV redaction engine vs DuckDB, file to file (${megabytes} MiB, ${threading.workers} worker threads)`,
    measured: `${rate(bytes, engine.ms).toFixed(1)} MiB/s`,
    baseline: `${rate(bytes, duck.ms).toFixed(1)} MiB/s`,
    ratio: duck.ms / engine.ms,
    target: ">= 0.5x",
    met: duck.ms / engine.ms >= 0.5,
  });
}

main().catch((error: unknown) => {
  process.stderr.write(`bench failed: ${(error as Error).stack ?? String(error)}\n`);
  process.exit(1);
});
