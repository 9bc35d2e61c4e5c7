// Benchmarks of a PostgreSQL export (issue 6), against baselines in the same run:
// 1. pgbench select-only custom script, 8 clients, -M prepared and -M simple (every statement a new
//    text to parse): directly, through PgBouncer (session mode), through a Node.js proxy that only
//    copies bytes (the floor for any proxy on Node's loop), through the export.
// 2. Rows per second of a 1M-row, 8-column SELECT (half the rows dropped, 3 columns nulled) vs the same SELECT directly.
// 3. What parsing costs: one statement analysed with PostgreSQL's parser, and the export's analysis cache hit rate per mode.
import { reportFigure } from "./report";
import { fork, spawnSync, type ChildProcess } from "node:child_process";
import { readFileSync } from "node:fs";
import { connect } from "node:net";
import { join } from "node:path";
import { splitFrames } from "../protocols/postgres/frames";
import { encodeQuery } from "../protocols/postgres/query";
import { encodeStartup } from "../protocols/postgres/startup";
import { realisticPolicy } from "../testkit/policy";
import { freePort } from "../testkit/ports";
import { startBenchNode } from "./http-load";
import { loadSqlParser } from "../proxies/postgres/analysis/sql-parser";
import { analyzeQuery } from "../proxies/postgres/analysis/statement-analysis";
import { AnalysisCache } from "../proxies/postgres/analysis/analysis-cache";
import { schemaView } from "../proxies/postgres/analysis/schema-view";
import { benchRole, pgbench, selectScript, startPgBouncer, startPgbenchDatabase } from "./pgbench";

const seconds = Number(process.env.BENCH_SECONDS ?? 10);
const accounts = Number(process.env.BENCH_ACCOUNTS ?? 10_000);
const wideRows = Number(process.env.BENCH_ROWS ?? 1_000_000);
const wideUsers = 1000;
/** Which measurements to run (all by default); e.g. BENCH_PARTS=export to profile the proxy under pgbench alone. */
const parts = new Set((process.env.BENCH_PARTS ?? "direct,pgbouncer,pipe,export,rows").split(","));
const pgbenchRun = { seconds, clients: 8, threads: 2 };
/** pgbench's query modes: prepared (each statement parsed once per connection) and simple (each a new text). */
const modes = (process.env.BENCH_MODES ?? "prepared,simple").split(",") as Array<"prepared" | "simple">;
/** Measured rounds (each path once per round, interleaved), after one unmeasured warm-up run per path. */
const rounds = Number(process.env.BENCH_ROUNDS ?? 3);
const warmUpSeconds = Number(process.env.BENCH_WARMUP_SECONDS ?? 5);
const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

/** User and system CPU seconds the processes have used so far (Linux /proc, clock ticks of 1/100 s). */
function cpuSeconds(pids: readonly number[]): { user: number; system: number } {
  let user = 0;
  let system = 0;
  for (const pid of pids) {
    const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ");
    user += Number(fields[11]) / 100;
    system += Number(fields[12]) / 100;
  }
  return { user, system };
}

/** The processes that run the export's sessions: its proxy workers (EXPORT_WORKERS), otherwise this one (the node runs in it). */
function exportPids(): number[] {
  const found = spawnSync("pgrep", ["-P", String(process.pid), "-f", "proxy-worker.js"], { encoding: "utf8" });
  const workers = found.stdout.split("\n").filter(Boolean).map(Number);
  return workers.length > 0 ? workers : [process.pid];
}

/** pgbench's TPS, and the CPU `pids` used per transaction meanwhile (microseconds; 0 with no pids). */
async function pgbenchWithCpu(
  port: number,
  script: string,
  pids: readonly number[],
  run: Parameters<typeof pgbench>[2],
): Promise<{ tps: number; user: number; system: number; node: number }> {
  const before = cpuSeconds(pids);
  const nodeBefore = process.cpuUsage();
  const tps = await pgbench(port, script, run);
  const node = process.cpuUsage(nodeBefore);
  const after = cpuSeconds(pids);
  const transactions = tps * pgbenchRun.seconds;
  return {
    tps,
    user: ((after.user - before.user) / transactions) * 1e6,
    system: ((after.system - before.system) / transactions) * 1e6,
    // This process holds the node (and waits on pgbench): what the workers' messages to it cost.
    node: (node.user + node.system) / transactions,
  };
}

/** The byte-copying Node.js proxy (bench/tcp-pipe-proxy.ts) in a process of its own, in front of `targetPort`. */
async function startPipeProxy(targetPort: number): Promise<{ port: number; child: ChildProcess }> {
  const port = await freePort();
  const child = fork(join(__dirname, "tcp-pipe-proxy.js"), [String(port), String(targetPort)], { stdio: "ignore" });
  await new Promise((resolve, reject) => child.once("message", resolve).once("exit", reject));
  return { port, child };
}

/** Seconds to receive every row of `sql` (rows counted, not parsed), with a bare protocol client. */
function timeQuery(port: number, sql: string): Promise<{ seconds: number; rows: number }> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: "127.0.0.1", port });
    let buffer: Buffer = Buffer.alloc(0);
    let rows = 0;
    let ready = 0;
    let started = 0n;
    socket.on("error", reject);
    socket.on("connect", () =>
      socket.write(
        encodeStartup(
          new Map([
            ["user", benchRole],
            ["database", "app"],
          ]),
        ),
      ),
    );
    socket.on("data", (chunk: Buffer) => {
      buffer = buffer.length ? Buffer.concat([buffer, chunk]) : chunk;
      const { frames, consumed } = splitFrames(buffer, 1 << 30);
      buffer = buffer.subarray(consumed);
      for (const frame of frames) {
        if (frame.code === 0x44) rows++;
        else if (frame.code === 0x45) reject(new Error(`query failed on port ${port}`));
        else if (frame.code === 0x5a && ++ready === 1) {
          started = process.hrtime.bigint();
          socket.write(encodeQuery(sql));
        } else if (frame.code === 0x5a) {
          socket.destroy();
          resolve({ seconds: Number(process.hrtime.bigint() - started) / 1e9, rows });
        }
      }
    });
  });
}

/**
 * What one statement's analysis costs in this process: pgbench's statement with a new constant
 * each time (parsed, attributed), and found in the cache; 20,000 of each after a warm-up.
 */
function parseCost(): void {
  const schema = schemaView([
    { schema: "public", name: "pgbench_accounts", columns: ["aid", "bid", "abalance", "filler"], subjectColumns: ["aid"], mapped: true },
  ]);
  const policy = { allowWrites: false, strict: false };
  const count = 20_000;
  const time = (work: (i: number) => void) => {
    for (let i = 0; i < 2000; i++) work(i);
    const started = process.hrtime.bigint();
    for (let i = 0; i < count; i++) work(i);
    return Number(process.hrtime.bigint() - started) / count / 1000;
  };
  const fresh = time((i) => analyzeQuery(`SELECT aid, abalance FROM pgbench_accounts WHERE aid = ${i + 1};`, schema, policy));
  const hidden = time((i) => analyzeQuery(`SELECT abalance FROM pgbench_accounts WHERE aid = ${i + 1};`, schema, policy));
  const cache = new AnalysisCache();
  const cached = time(() => cache.get("SELECT aid, abalance FROM pgbench_accounts WHERE aid = $1", schema, policy));
  const byForm = time((i) => cache.get(`SELECT aid, abalance FROM pgbench_accounts WHERE aid = ${i + 1};`, schema, policy));
  // A comment: no quick key, so the normalizer finds the form every time.
  const byNormalizer = time((i) => cache.get(`/* c */ SELECT aid, abalance FROM pgbench_accounts WHERE aid = ${i + 1};`, schema, policy));
  const hiddenByForm = time((i) => cache.get(`SELECT abalance FROM pgbench_accounts WHERE aid = ${i + 1};`, schema, policy));
  console.log(
    `\nstatement analysis in this process (libpg-query parse + read-only check + attribution), µs per statement: ${fresh.toFixed(1)} parsed; ${hidden.toFixed(1)} parsed with a hidden resource-context column spliced in and checked by a second parse; ${cached.toFixed(2)} from the cache by text; ${byForm.toFixed(1)} a new text from the cache by its form, found by the quick constants key; ${byNormalizer.toFixed(1)} the same through libpg-query's normalize (a text with a comment: no quick key); ${hiddenByForm.toFixed(1)} a new text needing the hidden column, from the cache by its form (normalize, the form's columns spliced in, the result normalized again and compared)`,
  );
}

async function main(): Promise<void> {
  await loadSqlParser();
  const pg = await startPgbenchDatabase();
  let bouncer: ChildProcess | undefined;
  let pipe: ChildProcess | undefined;
  let node: Awaited<ReturnType<typeof startBenchNode>>["node"] | undefined;
  try {
    pg.sql(
      [
        `CREATE TABLE wide AS SELECT 'w' || (i % ${wideUsers}) AS uid, i AS c1, i * 2 AS c2, 'value-' || i AS c3, i::float8 / 3 AS c4, 'contact-' || i AS c5, 'phone-' || i AS c6, md5(i::text) AS c7 FROM generate_series(1, ${wideRows}) AS i`,
        `GRANT SELECT ON ALL TABLES IN SCHEMA public TO ${benchRole}`,
      ].join("; "),
      "app",
    );
    pg.sql("VACUUM ANALYZE", "app");
    // The node starts after the data: psql and pgbench -i above block this process, which would stall its heartbeats.
    const started = await startBenchNode();
    node = started.node;
    const base = started.base;

    // Policy: purpose 'analytics' allows 'usage' only; a user for every aid the script selects (accepted), and wide's users half accepted.
    const put = (path: string, body?: unknown) =>
      fetch(`${base}${path}`, {
        method: "PUT",
        ...(body === undefined ? {} : { headers: { "content-type": "application/json" }, body: JSON.stringify(body) }),
      }).then((r) => r.status);
    const policy = realisticPolicy();
    policy.mappingGroups.push(
      {
        name: "accounts",
        fieldMappings: [
          { recordField: "pgbench_accounts.aid", resourceContext: true, categoryId: "usage" },
          { recordField: "pgbench_accounts.abalance", categoryId: "usage" },
        ],
      },
      {
        name: "wide",
        fieldMappings: [
          { recordField: "wide.uid", resourceContext: true, categoryId: "usage" },
          ...["c1", "c2", "c3", "c4"].map((c) => ({ recordField: `wide.${c}`, categoryId: "usage" })),
          ...["c5", "c6", "c7"].map((c) => ({ recordField: `wide.${c}`, categoryId: "contact" })),
        ],
      },
    );
    if ((await put("/config", policy)) !== 200) throw new Error("policy not accepted");
    const users = [
      ...Array.from({ length: accounts }, (_, i) => ({ id: String(i + 1), accept: true })),
      ...Array.from({ length: wideUsers }, (_, i) => ({ id: `w${i}`, accept: i % 2 === 0 })),
    ];
    for (let i = 0; i < users.length; i += 64) {
      await Promise.all(
        users.slice(i, i + 64).map(async (u) => {
          await put("/user", { userId: u.id, attributes: { dob: "1990-01-01", location: "US" } });
          if (u.accept) await put(`/user/terms?userId=${u.id}`);
        }),
      );
    }
    const exportPort = async (resolverGroup: string) => {
      const port = await freePort();
      const created = await fetch(`${base}/export`, {
        method: "PUT",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({
          type: "postgres",
          endpoint: `127.0.0.1:${pg.port}`,
          resolverGroup,
          metadata: { type: "platformUse", purposeId: "analytics" },
          port,
        }),
      });
      if (created.status !== 200) throw new Error(`export not created: ${await created.text()}`);
      await new Promise((resolve) => setTimeout(resolve, 1500));
      return port;
    };
    const accountsExport = await exportPort("accounts");
    const wideExport = await exportPort("wide");
    const bouncing = await startPgBouncer(pg.port);
    bouncer = bouncing.child;

    const script = selectScript(accounts);
    // Every account read once per export process (the node hands connections to its workers in turn): each worker's
    // verdicts are loaded in one batch, as they would be after its first minutes of real traffic. Without this the
    // pgbench warm-up loads them one user per transaction, and the first measured rounds still pay for it.
    for (const _ of exportPids()) {
      const check = await timeQuery(accountsExport, `SELECT aid, abalance FROM pgbench_accounts WHERE aid <= ${accounts}`);
      if (check.rows !== accounts) throw new Error(`expected every selected account through the export, got ${check.rows}`);
    }
    const piping = parts.has("pipe") ? await startPipeProxy(pg.port) : undefined;
    pipe = piping?.child;
    /** Each path pgbench runs through, with the processes whose CPU it costs (none counted for direct). */
    const paths = [
      { name: "direct", port: pg.port, pids: (): number[] => [] },
      { name: "pgbouncer", port: bouncing.port, pids: () => [bouncing.child.pid!] },
      { name: "pipe", port: piping?.port ?? 0, pids: () => [piping!.child.pid!] },
      { name: "export", port: accountsExport, pids: exportPids },
    ].filter((path) => parts.has(path.name));
    /** The export's statement counts (GET /export: analysed, and parsed rather than found in the analysis cache). */
    const statementCounts = async () => {
      const listed = (await (await fetch(`${base}/export`)).json()) as {
        exports: Array<{ listen: { port: number }; serving?: { statements?: { analysed: number; parsed: number } } }>;
      };
      return listed.exports.find((e) => e.listen.port === accountsExport)?.serving?.statements ?? { analysed: 0, parsed: 0 };
    };
    for (const mode of modes) {
      const run = { ...pgbenchRun, mode };
      console.log(
        `pgbench select-only, 8 clients, 2 threads, -M ${mode}, ${warmUpSeconds} s warm-up then ${rounds} rounds of ${seconds} s per path, aid in 1..${accounts} (every one a user allowed 'usage' for 'analytics')`,
      );
      const tps = new Map<string, number[]>(paths.map((path) => [path.name, []]));
      const cpu = new Map<string, string[]>(paths.map((path) => [path.name, []]));
      // Steady state is measured: the warm-up fills the export's verdict memory (each worker's too) and lets the JIT settle, for every path alike.
      for (const path of paths) await pgbench(path.port, script, { ...run, seconds: warmUpSeconds });
      // GET /export lags the workers by up to a second.
      await new Promise((resolve) => setTimeout(resolve, 1500));
      const before = await statementCounts();
      for (let round = 0; round < rounds; round++) {
        for (const path of paths) {
          const pids = path.pids();
          const measured = await pgbenchWithCpu(path.port, script, pids, run);
          tps.get(path.name)!.push(measured.tps);
          if (pids.length > 0)
            cpu
              .get(path.name)!
              .push(`${measured.user.toFixed(1)} + ${measured.system.toFixed(1)}${path.name === "export" ? ` (node ${measured.node.toFixed(2)})` : ""}`);
        }
      }
      await new Promise((resolve) => setTimeout(resolve, 1500));
      const after = await statementCounts();
      const sessionPids = exportPids();
      const exportProcesses = sessionPids[0] === process.pid ? "the node's loop" : `${sessionPids.length} workers`;
      for (const path of paths) {
        const label = path.name === "pipe" ? "node pipe" : path.name === "export" ? `export (${exportProcesses})` : path.name;
        const cpuNote = cpu.get(path.name)!.length > 0 ? `; CPU µs per transaction, user + system: ${cpu.get(path.name)!.join(" / ")}` : "";
        console.log(
          `  ${label.padEnd(26)} ${tps
            .get(path.name)!
            .map((t) => t.toFixed(0))
            .join(" / ")} TPS, median ${median(tps.get(path.name)!).toFixed(0)}${cpuNote}`,
        );
      }
      const ratio = (a: string, b: string) => (tps.get(a)?.length && tps.get(b)?.length ? `${(median(tps.get(a)!) / median(tps.get(b)!)).toFixed(2)}x` : "-");
      const target = mode === "prepared" ? 0.7 : 0.6;
      const [exportTps, bouncerTps] = ["export", "pgbouncer"].map((name) => (tps.get(name)?.length ? median(tps.get(name)!) : undefined));
      if (exportTps !== undefined && bouncerTps !== undefined)
        reportFigure({
          figure: `pgbench -M ${mode} select-only through a PostgreSQL export vs PgBouncer (${exportProcesses})`,
          measured: `${exportTps.toFixed(0)} TPS`,
          baseline: `${bouncerTps.toFixed(0)} TPS`,
          ratio: exportTps / bouncerTps,
          target: `>= ${target}x`,
          met: exportTps / bouncerTps >= target,
        });
      console.log(
        `  export vs pgbouncer (medians): ${ratio("export", "pgbouncer")} (target >= ${target.toFixed(2)}x); vs direct ${ratio("export", "direct")}; node pipe vs pgbouncer ${ratio("pipe", "pgbouncer")}; export vs node pipe ${ratio("export", "pipe")}`,
      );
      const analysed = after.analysed - before.analysed;
      const parsed = after.parsed - before.parsed;
      if (analysed > 0)
        console.log(
          `  statements through the export in the measured rounds: ${analysed.toLocaleString("en")} analysed, ${parsed.toLocaleString("en")} parsed: analysis cache hit rate ${(((analysed - parsed) / analysed) * 100).toFixed(1)}% (by text, or by the form with constants replaced)`,
        );
    }
    if (!parts.has("rows")) return;
    const sql = "SELECT uid, c1, c2, c3, c4, c5, c6, c7 FROM wide";
    console.log(`\n${wideRows.toLocaleString("en")}-row, 8-column SELECT: ${wideUsers} users, half allowed (rows dropped), 3 columns of kept rows nulled`);
    const runs = { direct: [] as number[], export: [] as number[] };
    let kept = 0;
    for (let round = 0; round < 5; round++) {
      const straight = await timeQuery(pg.port, sql);
      if (straight.rows !== wideRows) throw new Error(`direct returned ${straight.rows} rows`);
      runs.direct.push(straight.seconds);
      const through = await timeQuery(wideExport, sql);
      kept = through.rows;
      runs.export.push(through.seconds);
    }
    if (kept !== wideRows / 2) throw new Error(`expected half the rows through the export, got ${kept}`);
    const rate = (s: number) => Math.round(wideRows / s);
    console.log(`  direct  ${runs.direct.map((s) => s.toFixed(2)).join(" / ")} s -> ${rate(median(runs.direct)).toLocaleString("en")} rows/s (median)`);
    console.log(
      `  export  ${runs.export.map((s) => s.toFixed(2)).join(" / ")} s -> ${rate(median(runs.export)).toLocaleString("en")} rows/s read from the backend, ${kept.toLocaleString("en")} sent (median)`,
    );
    console.log(`  export vs direct: ${(median(runs.direct) / median(runs.export)).toFixed(2)}x (target >= 0.50x)`);
    const rowsRatio = median(runs.direct) / median(runs.export);
    reportFigure({
      figure: `${wideRows.toLocaleString("en")}-row SELECT through an export vs directly`,
      measured: `${rate(median(runs.export)).toLocaleString("en")} rows/s`,
      baseline: `${rate(median(runs.direct)).toLocaleString("en")} rows/s`,
      ratio: rowsRatio,
      target: ">= 0.5x",
      met: rowsRatio >= 0.5,
    });
  } finally {
    bouncer?.kill("SIGINT");
    pipe?.kill();
    await node?.stop();
    await pg.stop();
  }
  // Last, with the node stopped: tens of thousands of analyses in a row hold this process's loop for seconds (the node's heartbeats run on it).
  parseCost();
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
