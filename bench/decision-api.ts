import "reflect-metadata";
import { spawn } from "node:child_process";
import { join } from "node:path";
import { Registry } from "prom-client";
import { build } from "../gateway/build";
import pino from "pino";
import { loadConfig } from "../service/config";
import { startServiceNode } from "../service/node";
import { realisticPolicy } from "../test/fixtures/policy";
import { freePort } from "../test/helpers/ports";
import { tempDir } from "../test/helpers/temp";

/**
 * /decision requests per second against a no-op route on the same gateway in the same run, 50 connections,
 * autocannon in a separate process (the server keeps its own core). Prints both rates, the
 * ratio (target: at least 0.5x) and p99 latencies.
 */
const seconds = Number(process.env.BENCH_SECONDS ?? 10);
const autocannon = join(__dirname, "..", "..", "node_modules", "autocannon", "autocannon.js");

/** Runs autocannon without blocking this process: the servers under test live here. */
function load(url: string, body: string): Promise<{ requests: number; p99: number; errors: number; non2xx: number }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [autocannon, "-c", "50", "-d", String(seconds), "-m", "PUT", "-H", "content-type=application/json", "-b", body, "-j", url], { stdio: ["ignore", "pipe", "ignore"] });
    let output = "";
    child.stdout.on("data", (chunk: Buffer) => (output += chunk.toString("utf8")));
    child.once("error", reject);
    child.once("exit", () => {
      const result = JSON.parse(output) as { requests: { average: number }; latency: { p99: number }; errors: number; non2xx: number };
      resolve({ requests: result.requests.average, p99: result.latency.p99, errors: result.errors, non2xx: result.non2xx });
    });
  });
}

async function main(): Promise<void> {
  const logger = pino({ level: "warn" });
  const config = loadConfig([], { PORT: String(await freePort()), NATS_PORT: String(await freePort()), DATA_DIR: tempDir("bench-decision"), NODE_ID: "bench", LOG_LEVEL: "warn" });
  const node = await startServiceNode(config, logger);
  const base = `http://127.0.0.1:${node.gatewayPort}`;
  const put = (path: string, body?: unknown) =>
    fetch(`${base}${path}`, { method: "PUT", ...(body === undefined ? {} : { headers: { "content-type": "application/json" }, body: JSON.stringify(body) }) }).then((r) => r.json());
  await put("/config", realisticPolicy());
  await put("/user", { userId: "bench-user", attributes: { dob: "1990-01-01", location: "US" } });
  await put("/user/terms?userId=bench-user");

  // The baseline is the same gateway (build(): hooks, request ids, metrics, error handling) with a route that does nothing.
  const noop = build({ logger, metrics: new Registry(), nodeId: "noop", health: () => ({ ready: true, checks: {} }) });
  noop.put("/noop", async () => ({ allowed: true }));
  const noopPort = await freePort();
  await noop.listen({ port: noopPort, host: "127.0.0.1" });

  const query = JSON.stringify({ userId: "bench-user", type: "platformUse", purposeId: "service" });
  await load(`${base}/decision`, query); // warm up the server and its caches
  const baseline = await load(`http://127.0.0.1:${noopPort}/noop`, query);
  const decisions = await load(`${base}/decision`, query);
  process.stdout.write(
    [
      `no-op route (same gateway): ${Math.round(baseline.requests)} req/s, p99 ${baseline.p99} ms (errors ${baseline.errors}, non-2xx ${baseline.non2xx})`,
      `/decision:           ${Math.round(decisions.requests)} req/s, p99 ${decisions.p99} ms (errors ${decisions.errors}, non-2xx ${decisions.non2xx})`,
      `ratio /decision / no-op: ${(decisions.requests / baseline.requests).toFixed(2)}x (target >= 0.5x)`,
    ].join("\n") + "\n",
  );
  await noop.close();
  await node.stop();
}

main().catch((error: unknown) => {
  process.stderr.write(`bench failed: ${(error as Error).stack ?? String(error)}\n`);
  process.exit(1);
});
