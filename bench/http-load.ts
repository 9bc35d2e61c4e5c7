import { spawn } from "node:child_process";
import { join } from "node:path";
import pino from "pino";
import { Registry } from "prom-client";
import type { FastifyInstance } from "fastify";
import { build } from "../gateway/build";
import { loadConfig } from "../service/config";
import { startServiceNode, type RunningNode } from "../service/node";
import { realisticPolicy } from "../test/fixtures/policy";
import { freePort } from "../test/helpers/ports";
import { tempDir } from "../test/helpers/temp";

export const benchSeconds = Number(process.env.BENCH_SECONDS ?? 10);
const autocannon = join(__dirname, "..", "..", "node_modules", "autocannon", "autocannon.js");

export interface LoadResult {
  requests: number;
  p99: number;
  errors: number;
  non2xx: number;
}

/** Runs autocannon (50 connections, PUT with a JSON body) in a separate process: the servers under test keep this one. */
export function load(url: string, body: string): Promise<LoadResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [autocannon, "-c", "50", "-d", String(benchSeconds), "-m", "PUT", "-H", "content-type=application/json", "-b", body, "-j", url], { stdio: ["ignore", "pipe", "ignore"] });
    let output = "";
    child.stdout.on("data", (chunk: Buffer) => (output += chunk.toString("utf8")));
    child.once("error", reject);
    child.once("exit", () => {
      const result = JSON.parse(output) as { requests: { average: number }; latency: { p99: number }; errors: number; non2xx: number };
      resolve({ requests: result.requests.average, p99: result.latency.p99, errors: result.errors, non2xx: result.non2xx });
    });
  });
}

/** One node in this process with its embedded nats-server, the realistic policy and one accepted user, `bench-user`. */
export async function startBenchNode(): Promise<{ node: RunningNode; base: string }> {
  const logger = pino({ level: "warn" });
  // Settings under test (e.g. EXPORT_WORKERS, REDACTION_THREADS) come from the bench's environment.
  const config = loadConfig([], { ...process.env, PORT: String(await freePort()), NATS_PORT: String(await freePort()), NATS_URL: undefined, DATA_DIR: tempDir("bench-node"), NODE_ID: "bench", LOG_LEVEL: "warn" });
  const node = await startServiceNode(config, logger);
  const base = `http://127.0.0.1:${node.gatewayPort}`;
  const put = (path: string, body?: unknown) =>
    fetch(`${base}${path}`, { method: "PUT", ...(body === undefined ? {} : { headers: { "content-type": "application/json" }, body: JSON.stringify(body) }) }).then((r) => r.json());
  await put("/config", realisticPolicy());
  await put("/user", { userId: "bench-user", attributes: { dob: "1990-01-01", location: "US" } });
  await put("/user/terms?userId=bench-user");
  return { node, base };
}

/** The baseline: a gateway made by the same build() (hooks, request ids, metrics, errors) with a PUT /noop that does nothing. */
export async function startNoopGateway(): Promise<{ gateway: FastifyInstance; url: string }> {
  const gateway = build({ logger: pino({ level: "warn" }), metrics: new Registry(), nodeId: "noop", health: () => ({ ready: true, checks: {} }) });
  gateway.put("/noop", async () => ({ allowed: true }));
  const port = await freePort();
  await gateway.listen({ port, host: "127.0.0.1" });
  return { gateway, url: `http://127.0.0.1:${port}/noop` };
}

/** Loads the route and the no-op baseline (after a warm-up) and prints both, the ratio and p99s. */
export async function compareWithNoop(name: string, url: string, body: string): Promise<void> {
  const noop = await startNoopGateway();
  await load(url, body); // warm up the server and its caches
  const baseline = await load(noop.url, body);
  const measured = await load(url, body);
  process.stdout.write(
    [
      `no-op route (same gateway): ${Math.round(baseline.requests)} req/s, p99 ${baseline.p99} ms (errors ${baseline.errors}, non-2xx ${baseline.non2xx})`,
      `${name}: ${Math.round(measured.requests)} req/s, p99 ${measured.p99} ms (errors ${measured.errors}, non-2xx ${measured.non2xx})`,
      `ratio ${name} / no-op: ${(measured.requests / baseline.requests).toFixed(2)}x (target >= 0.5x)`,
    ].join("\n") + "\n",
  );
  await noop.gateway.close();
}
