import { spawn, spawnSync } from "node:child_process";
import { rmSync } from "node:fs";
import { join } from "node:path";
import pino from "pino";
import { loadConfig } from "../service/config";
import { startServiceNode, type RunningNode } from "../service/node";
import { realisticPolicy } from "../testkit/policy";
import { freePort } from "../testkit/ports";
import { tempDir } from "../testkit/temp";
import { benchNodeArgs } from "./node-args";
import { reportFigure, reqPerSecond } from "./report";

/**
 * The node runs in the bench's own process: started without the node's V8 flags (as `node
 * dist/bench/x.js`), the bench runs itself again under them (bench/node-args.ts: the deployed
 * flags unless BENCH_DEPLOYED_FLAGS=off, then BENCH_NODE_ARGS) and exits with its status, so a
 * figure measures the node as it is launched for users (its no-op baseline too).
 */
export function underNodeFlags(): void {
  const flags = benchNodeArgs();
  if (process.env.BENCH_UNDER_FLAGS === "1" || flags.every((flag) => process.execArgv.includes(flag))) return;
  const run = spawnSync(process.execPath, [...flags, ...process.execArgv, ...process.argv.slice(1)], {
    stdio: "inherit",
    env: { ...process.env, BENCH_UNDER_FLAGS: "1" },
  });
  process.exit(run.status ?? 1);
}

export const benchSeconds = Number(process.env.BENCH_SECONDS ?? 10);
const autocannon = join(__dirname, "..", "..", "node_modules", "autocannon", "autocannon.js");

export interface LoadResult {
  requests: number;
  p99: number;
  errors: number;
  non2xx: number;
  /** CPU time of this process (the node and its gateway; not autocannon, not nats-server) per request answered: less noisy than req/s on a shared machine. */
  cpuMicrosPerRequest: number;
}

/** Runs autocannon (50 connections, PUT with a JSON body) in a separate process: the servers under test keep this one. */
export function load(url: string, body: string): Promise<LoadResult> {
  const cpuBefore = process.cpuUsage();
  return new Promise((resolve, reject) => {
    const child = spawn(
      process.execPath,
      [autocannon, "-c", "50", "-d", String(benchSeconds), "-m", "PUT", "-H", "content-type=application/json", "-b", body, "-j", url],
      { stdio: ["ignore", "pipe", "ignore"] },
    );
    let output = "";
    child.stdout.on("data", (chunk: Buffer) => (output += chunk.toString("utf8")));
    child.once("error", reject);
    child.once("exit", () => {
      const result = JSON.parse(output) as { requests: { average: number }; latency: { p99: number }; errors: number; non2xx: number };
      const cpu = process.cpuUsage(cpuBefore);
      resolve({
        requests: result.requests.average,
        p99: result.latency.p99,
        errors: result.errors,
        non2xx: result.non2xx,
        cpuMicrosPerRequest: (cpu.user + cpu.system) / (result.requests.average * benchSeconds),
      });
    });
  });
}

/**
 * One node in this process with its embedded nats-server, the realistic policy and one accepted
 * user, `bench-user`. Its gateway also has `PUT /noop`, which answers `{allowed: true}` and does
 * nothing else: the baseline of the HTTP benches, behind the same listener, hooks, request ids,
 * metrics and error handling as the routes measured (outside the REST components, so it pays no
 * authentication hook: what the component hooks cost counts against the measured route).
 */
export async function startBenchNode(): Promise<{ node: RunningNode; base: string }> {
  const logger = pino({ level: "warn" });
  // Each run's JetStream store is a few hundred MB: left behind, a day of bench runs fills the disk until nats-server cannot reserve its limits.
  const dataDir = tempDir("bench-node");
  process.once("exit", () => rmSync(dataDir, { recursive: true, force: true }));
  // Settings under test (e.g. EXPORT_WORKERS, REDACTION_THREADS) come from the bench's environment.
  const config = loadConfig([], {
    ...process.env,
    PORT: String(await freePort()),
    NATS_PORT: String(await freePort()),
    NATS_URL: undefined,
    DATA_DIR: dataDir,
    NODE_ID: "bench",
    LOG_LEVEL: "warn",
  });
  const node = await startServiceNode(config, logger, {
    extraRoutes: async (app) => {
      app.put("/noop", async () => ({ allowed: true }));
    },
  });
  const base = `http://127.0.0.1:${node.gatewayPort}`;
  const put = (path: string, body?: unknown) =>
    fetch(`${base}${path}`, {
      method: "PUT",
      ...(body === undefined ? {} : { headers: { "content-type": "application/json" }, body: JSON.stringify(body) }),
    }).then((r) => r.json());
  await put("/config", realisticPolicy());
  await put("/user", { userId: "bench-user", attributes: { dob: "1990-01-01", location: "US" } });
  await put("/user/terms?userId=bench-user");
  return { node, base };
}

/** The record the /redact/record benches send: `bench-user`'s row of the users-table group (kept, redacted field by field). */
export const benchRecord = {
  "users.id": "bench-user",
  "users.email": "bench@example.com",
  "users.login": "bench",
  "users.name": "Bench User",
  "users.clicks": 7,
  "users.secret": "s3cret",
};
export const benchRedactPath = "/redact/record?purposeId=service&type=platformUse&mappingGroup=users-table";
/** The query the /decision benches send. */
export const benchDecisionQuery = { userId: "bench-user", type: "platformUse", purposeId: "service" };

export const benchRounds = Number(process.env.BENCH_ROUNDS ?? 3);
const p99TargetMs = 10;

export interface Comparison {
  name: string;
  /** Medians over the rounds. */
  baseline: { requests: number; p99: number };
  measured: { requests: number; p99: number };
  ratio: number;
  /** Errors and non-2xx answers over every round of the measured route (a failing route is not fast). */
  failures: number;
}

const median = (values: number[]): number => {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = sorted.length >> 1;
  return sorted.length % 2 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
};

/**
 * Loads the route and the no-op baseline after a warm-up, interleaved in `BENCH_ROUNDS` rounds
 * (noise on a shared machine then hits both alike), and prints each round, the medians, their
 * ratio and p99s.
 */
export async function compareWithNoop(name: string, url: string, body: string, target = 0.7): Promise<Comparison> {
  const noop = { url: `${new URL(url).origin}/noop` };
  await load(noop.url, body);
  await load(url, body); // warm up the server and its caches
  const baselines: LoadResult[] = [];
  const measures: LoadResult[] = [];
  for (let round = 1; round <= benchRounds; round++) {
    // Alternate which goes first, so neither always runs on a machine that just cooled down.
    const order = round % 2 ? ["noop", "measured"] : ["measured", "noop"];
    for (const which of order) (which === "noop" ? baselines : measures).push(await load(which === "noop" ? noop.url : url, body));
    const [b, m] = [baselines.at(-1)!, measures.at(-1)!];
    process.stdout.write(
      `round ${round}: no-op ${Math.round(b.requests)} req/s p99 ${b.p99} ms ${b.cpuMicrosPerRequest.toFixed(1)} us CPU/req; ${name} ${Math.round(m.requests)} req/s p99 ${m.p99} ms ${m.cpuMicrosPerRequest.toFixed(1)} us CPU/req (errors ${m.errors}, non-2xx ${m.non2xx}); ratio ${(m.requests / b.requests).toFixed(2)}x\n`,
    );
  }
  const result: Comparison = {
    name,
    baseline: { requests: median(baselines.map((r) => r.requests)), p99: median(baselines.map((r) => r.p99)) },
    measured: { requests: median(measures.map((r) => r.requests)), p99: median(measures.map((r) => r.p99)) },
    ratio: 0,
    failures: measures.reduce((n, r) => n + r.errors + r.non2xx, 0),
  };
  result.ratio = result.measured.requests / result.baseline.requests;
  const clean = result.failures === 0;
  reportFigure({
    figure: `${name} throughput vs no-op route (50 connections, durable traces)`,
    measured: reqPerSecond(result.measured.requests),
    baseline: reqPerSecond(result.baseline.requests),
    ratio: result.ratio,
    target: `>= ${target}x`,
    met: clean && result.ratio >= target,
  });
  reportFigure({
    figure: `${name} p99 latency (50 connections)`,
    measured: `${result.measured.p99} ms`,
    baseline: `no-op ${result.baseline.p99} ms`,
    ratio: result.measured.p99 / p99TargetMs,
    target: `< ${p99TargetMs} ms`,
    met: clean && result.measured.p99 < p99TargetMs,
  });
  process.stdout.write(
    `${[
      `median no-op route (same gateway): ${Math.round(result.baseline.requests)} req/s, p99 ${result.baseline.p99} ms`,
      `median ${name}: ${Math.round(result.measured.requests)} req/s, p99 ${result.measured.p99} ms (failures ${result.failures})`,
      `ratio ${name} / no-op: ${result.ratio.toFixed(2)}x (target >= ${target}x; p99 target < 10 ms)`,
      `median CPU of this process per request: no-op ${median(baselines.map((r) => r.cpuMicrosPerRequest)).toFixed(1)} us, ${name} ${median(measures.map((r) => r.cpuMicrosPerRequest)).toFixed(1)} us`,
    ].join("\n")}\n`,
  );
  return result;
}
