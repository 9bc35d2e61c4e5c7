import { spawn, spawnSync } from "node:child_process";
import { appendFileSync } from "node:fs";
import { join } from "node:path";
import { figureMarker, type Figure } from "./report";

/**
 * `npm run bench`: every benchmark in a short mode, one after another (each in its own process,
 * as when run alone), then one table of figures against their targets, also appended to
 * bench/RESULTS.md with the commit measured. Short runs are noisier than the full ones; they
 * are there to catch regressions. BENCH_ONLY=a,b runs only the benchmarks named.
 */
const benches: Array<{ name: string; env: Record<string, string> }> = [
  { name: "actor-call", env: { BENCH_SEQUENTIAL: "1000", BENCH_CONCURRENT: "10000" } },
  { name: "decision-engine", env: {} },
  { name: "decision-api", env: { BENCH_SECONDS: "3", BENCH_ROUNDS: "3" } },
  { name: "redact-record", env: { BENCH_SECONDS: "3", BENCH_ROUNDS: "3" } },
  { name: "redaction-engine", env: { BENCH_MB: "50" } },
  { name: "redaction-job", env: { BENCH_MB: "20" } },
  { name: "pipeline-stream", env: { BENCH_RECORDS: "10000" } },
  { name: "fhir-export", env: { BENCH_ROUNDS: "3" } },
  { name: "objectstore-export", env: { BENCH_MB: "20" } },
  { name: "postgres-export", env: { BENCH_SECONDS: "3", BENCH_ROUNDS: "1", BENCH_WARMUP_SECONDS: "2", BENCH_ROWS: "100000", BENCH_ACCOUNTS: "2000" } },
  { name: "postgres-proxy-loops", env: { BENCH_SECONDS: "3", BENCH_ROUNDS: "1" } },
  { name: "postgres-pushdown", env: { BENCH_SECONDS: "3", BENCH_ROUNDS: "3", BENCH_ROWS: "200000", BENCH_USERS: "2000", BENCH_CHANGES: "20" } },
  { name: "mysql-export", env: { BENCH_SECONDS: "3", BENCH_ROUNDS: "1", BENCH_WARMUP_SECONDS: "1", BENCH_ROWS: "100000" } },
];

const root = join(__dirname, "..", "..");

interface Row extends Figure {
  bench: string;
}

function run(name: string, env: Record<string, string>): Promise<{ figures: Figure[]; failure?: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [join(__dirname, `${name}.js`)], { cwd: root, env: { ...process.env, ...env }, stdio: ["ignore", "pipe", "pipe"] });
    const figures: Figure[] = [];
    let pending = "";
    let lastError = "";
    child.stdout.on("data", (chunk: Buffer) => {
      pending += chunk.toString("utf8");
      const lines = pending.split("\n");
      pending = lines.pop()!;
      for (const line of lines) {
        if (line.startsWith(figureMarker)) figures.push(JSON.parse(line.slice(figureMarker.length)) as Figure);
        else process.stderr.write(`  ${name} | ${line}\n`);
      }
    });
    child.stderr.on("data", (chunk: Buffer) => {
      const text = chunk.toString("utf8").trim();
      if (text) lastError = text.split("\n").find((line) => /error|failed/i.test(line)) ?? text.split("\n")[0]!;
    });
    child.once("exit", (code) => resolve(code === 0 ? { figures } : { figures, failure: `exit ${code}: ${lastError.slice(0, 160)}` }));
  });
}

function commitId(): string {
  const head = spawnSync("git", ["rev-parse", "--short", "HEAD"], { cwd: root, encoding: "utf8" }).stdout.trim() || "unknown";
  // RESULTS.md itself does not count: an earlier run's section not yet committed changes no code measured.
  const dirty =
    spawnSync("git", ["status", "--porcelain", "--untracked-files=no", "--", ".", ":!bench/RESULTS.md"], { cwd: root, encoding: "utf8" }).stdout.trim() !== "";
  return dirty ? `${head} + uncommitted changes` : head;
}

async function main(): Promise<void> {
  const only = process.env.BENCH_ONLY?.split(",").filter(Boolean);
  const rows: Row[] = [];
  const failed: string[] = [];
  for (const bench of benches) {
    if (only && !only.includes(bench.name)) continue;
    process.stderr.write(
      `bench ${bench.name} (${
        Object.entries(bench.env)
          .map(([k, v]) => `${k}=${v}`)
          .join(" ") || "defaults"
      })\n`,
    );
    const { figures, failure } = await run(bench.name, bench.env);
    rows.push(...figures.map((figure) => ({ bench: bench.name, ...figure })));
    if (failure) failed.push(`${bench.name}: ${failure}`);
  }
  const cell = (text: string) => text.replace(/\|/g, "\\|");
  const table = [
    "| Benchmark | Figure | Measured | Baseline | Ratio | Target | Met |",
    "| --- | --- | --- | --- | --- | --- | --- |",
    ...rows.map(
      (r) =>
        `| ${r.bench} | ${cell(r.figure)} | ${r.measured} | ${r.baseline} | ${r.ratio === null ? "-" : `${r.ratio.toFixed(2)}x`} | ${cell(r.target)} | ${r.met === undefined ? "-" : r.met ? "yes" : "**no**"} |`,
    ),
    ...failed.map((f) => `| ${cell(f.split(":")[0]!)} | did not run to the end | | | | | **failed**: ${cell(f.slice(f.indexOf(":") + 2))} |`),
  ].join("\n");
  process.stdout.write(`${table}\n`);
  const commit = commitId();
  const section = [
    "",
    `### \`npm run bench\`, ${new Date().toISOString().slice(0, 16).replace("T", " ")} UTC, commit ${commit}`,
    "",
    `Command: \`flock /tmp/warden-heavy.lock npm run bench\`${only ? ` (BENCH_ONLY=${only.join(",")})` : ""}; short mode (settings in \`bench/all.ts\`).`,
    "",
    table,
    "",
  ].join("\n");
  if (process.env.BENCH_RECORD !== "0") appendFileSync(join(root, "bench", "RESULTS.md"), section);
  process.exitCode = failed.length > 0 ? 1 : 0;
}

main().catch((error: unknown) => {
  process.stderr.write(`bench failed: ${(error as Error).stack ?? String(error)}\n`);
  process.exit(1);
});
