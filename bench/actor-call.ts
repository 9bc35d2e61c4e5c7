import "reflect-metadata";
import { reportFigure } from "./report";
import { performance } from "node:perf_hooks";
import { startNode } from "../actors/runtime/runtime";
import { counter } from "../testkit/counter-actor";
import { connectTo, silentLogger, startNats } from "../testkit/nats";

/**
 * Actor call round trip against a warm actor vs a raw NATS request/reply to a responder in
 * the same process, same connection, same run. Prints median latency one call at a time and
 * throughput with 64 calls in flight, and the ratios (targets: latency <= 1.5x, throughput >= 0.6x).
 */
const sequentialCalls = Number(process.env.BENCH_SEQUENTIAL ?? 5000);
const concurrentCalls = Number(process.env.BENCH_CONCURRENT ?? 50_000);
const inFlight = 64;
const rounds = 3;

function median(samples: number[]): number {
  const sorted = [...samples].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)];
}

function percentile(samples: number[], p: number): number {
  const sorted = [...samples].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))];
}

async function latencies(call: () => Promise<unknown>, count: number): Promise<number[]> {
  const samples: number[] = [];
  for (let i = 0; i < count; i++) {
    const start = performance.now();
    await call();
    samples.push((performance.now() - start) * 1000);
  }
  return samples;
}

async function throughput(call: () => Promise<unknown>, count: number): Promise<number> {
  let next = 0;
  const start = performance.now();
  await Promise.all(
    Array.from({ length: inFlight }, async () => {
      while (next++ < count) await call();
    }),
  );
  return count / ((performance.now() - start) / 1000);
}

async function main(): Promise<void> {
  const nats = await startNats();
  const nc = await connectTo(nats);
  const { runtime } = await startNode({ nc, logger: silentLogger, options: { nodeId: "bench" } }, [counter]);
  while (runtime.placement.ownedCount() < runtime.placement.partitionCount) await new Promise((resolve) => setTimeout(resolve, 50));

  const actor = runtime.client.ref(counter, "bench");
  await actor.increment(1);
  // The raw baseline carries a payload of the same size as the actor call's envelope.
  const payload = JSON.stringify({ t: "counter", i: "bench", m: "get", d: 5000 });
  nc.subscribe("bench.raw", {
    callback: (_error, msg) => {
      msg.respond(msg.data);
    },
  });
  const raw = () => nc.request("bench.raw", payload, { timeout: 5000 });
  const call = () => actor.get();
  const write = () => actor.increment(1);

  // Warm up both paths (JIT, connection buffers).
  await latencies(raw, 2000);
  await latencies(call, 2000);

  const results = { raw: { lat: [] as number[], tput: [] as number[] }, actor: { lat: [] as number[], tput: [] as number[] }, write: { lat: [] as number[] } };
  for (let round = 0; round < rounds; round++) {
    results.raw.lat.push(...(await latencies(raw, sequentialCalls)));
    results.actor.lat.push(...(await latencies(call, sequentialCalls)));
    results.raw.tput.push(await throughput(raw, concurrentCalls));
    results.actor.tput.push(await throughput(call, concurrentCalls));
  }
  results.write.lat.push(...(await latencies(write, 2000)));

  const rawMedian = median(results.raw.lat);
  const actorMedian = median(results.actor.lat);
  const rawTput = median(results.raw.tput);
  const actorTput = median(results.actor.tput);
  const lines = [
    `raw NATS request/reply:      median ${rawMedian.toFixed(1)} us, p99 ${percentile(results.raw.lat, 0.99).toFixed(1)} us; ${Math.round(rawTput)} req/s with ${inFlight} in flight`,
    `actor call (shared handler): median ${actorMedian.toFixed(1)} us, p99 ${percentile(results.actor.lat, 0.99).toFixed(1)} us; ${Math.round(actorTput)} calls/s with ${inFlight} in flight`,
    `actor write (exclusive handler + JetStream CAS write): median ${median(results.write.lat).toFixed(1)} us`,
    `latency ratio (actor / raw, median):        ${(actorMedian / rawMedian).toFixed(2)}x  (target <= 1.5x)`,
    `throughput ratio (actor / raw, 64 in flight): ${(actorTput / rawTput).toFixed(2)}x  (target >= 0.6x)`,
  ];
  process.stdout.write(`${lines.join("\n")}\n`);
  reportFigure({
    figure: "actor call latency vs raw NATS request/reply (median)",
    measured: `${actorMedian.toFixed(1)} us`,
    baseline: `${rawMedian.toFixed(1)} us`,
    ratio: actorMedian / rawMedian,
    target: "<= 1.5x",
    met: actorMedian / rawMedian <= 1.5,
  });
  reportFigure({
    figure: `actor call throughput vs raw NATS (${inFlight} in flight)`,
    measured: `${Math.round(actorTput)} calls/s`,
    baseline: `${Math.round(rawTput)} req/s`,
    ratio: actorTput / rawTput,
    target: ">= 0.6x",
    met: actorTput / rawTput >= 0.6,
  });

  await runtime.stop();
  await nc.close();
  await nats.stop();
}

main().catch((error: unknown) => {
  process.stderr.write(`bench failed: ${(error as Error).stack ?? String(error)}\n`);
  process.exit(1);
});
