import "reflect-metadata";
import { Session } from "node:inspector/promises";
import { constants, PerformanceObserver } from "node:perf_hooks";
import { benchDecisionQuery, benchRecord, benchRedactPath, benchSeconds, load, startBenchNode, underNodeFlags } from "./http-load";

/**
 * Bytes the node allocates per request on one route (the no-op route for comparison), and
 * where: V8's sampling heap profiler, counting objects a scavenge or a mark-compact collected
 * too, so the figure is allocation, not what stays live. Usage:
 * `BENCH_ROUTE=redact|decision BENCH_SECONDS=5 node dist/bench/allocation-profile.js`;
 * `BENCH_TOP` sets how many allocating functions are printed (default 25). Each route is first loaded
 * unprofiled, counting garbage collections (scavenges per request: what the semi-space size trades).
 */
const routes = {
  decision: { path: "/decision", body: benchDecisionQuery },
  redact: { path: benchRedactPath, body: benchRecord },
} as const;

interface ProfileNode {
  callFrame: { functionName: string; url: string; lineNumber: number };
  selfSize: number;
  children: ProfileNode[];
}

async function profiled(session: Session, url: string, body: string): Promise<{ requests: number; bytes: number; top: Map<string, number> }> {
  // A sample every 4 KiB on average: enough for the total within a few percent at these rates.
  await session.post("HeapProfiler.startSampling", { samplingInterval: 4096, includeObjectsCollectedByMajorGC: true, includeObjectsCollectedByMinorGC: true });
  const result = await load(url, body);
  const { profile } = (await session.post("HeapProfiler.stopSampling")) as unknown as { profile: { head: ProfileNode } };
  const top = new Map<string, number>();
  let bytes = 0;
  const walk = (node: ProfileNode): void => {
    bytes += node.selfSize;
    if (node.selfSize > 0) {
      const file = node.callFrame.url.replace(/^.*\/(node_modules\/|dist\/)/, "$1");
      const key = `${node.callFrame.functionName || "(anonymous)"} ${file}:${node.callFrame.lineNumber + 1}`;
      top.set(key, (top.get(key) ?? 0) + node.selfSize);
    }
    for (const child of node.children) walk(child);
  };
  walk(profile.head);
  return { requests: result.requests * benchSeconds, bytes, top };
}

/** Garbage collections during one unprofiled load: how often the young generation filled, and what the pauses added up to. */
async function collected(url: string, body: string): Promise<string> {
  const counts = { minor: 0, major: 0, pauseMs: 0, maxPauseMs: 0 };
  const observer = new PerformanceObserver((list) => {
    for (const entry of list.getEntries()) {
      const kind = (entry as unknown as { detail?: { kind?: number } }).detail?.kind;
      if (kind === constants.NODE_PERFORMANCE_GC_MINOR) counts.minor++;
      else if (kind === constants.NODE_PERFORMANCE_GC_MAJOR) counts.major++;
      counts.pauseMs += entry.duration;
      counts.maxPauseMs = Math.max(counts.maxPauseMs, entry.duration);
    }
  });
  observer.observe({ entryTypes: ["gc"] });
  const result = await load(url, body);
  observer.disconnect();
  const requests = result.requests * benchSeconds;
  return `${Math.round(result.requests)} req/s, p99 ${result.p99} ms; ${counts.minor} scavenges (one per ${Math.round(requests / Math.max(1, counts.minor))} requests), ${counts.major} mark-compacts, GC ${counts.pauseMs.toFixed(0)} ms in all (${((counts.pauseMs * 1000) / requests).toFixed(1)} us/req), longest ${counts.maxPauseMs.toFixed(1)} ms`;
}

async function main(): Promise<void> {
  underNodeFlags();
  const route = routes[(process.env.BENCH_ROUTE ?? "redact") as keyof typeof routes];
  if (!route) throw new Error("BENCH_ROUTE is decision or redact");
  const { node, base } = await startBenchNode();
  const body = JSON.stringify(route.body);
  await load(`${base}${route.path}`, body); // warm up: compiled code, caches
  const session = new Session();
  session.connect();
  const topCount = Number(process.env.BENCH_TOP ?? 25);
  for (const [name, url] of [
    ["no-op", `${base}/noop`],
    [route.path.split("?")[0]!, `${base}${route.path}`],
  ] as const) {
    process.stdout.write(`${name} unprofiled: ${await collected(url, body)}\n`);
    const { requests, bytes, top } = await profiled(session, url, body);
    process.stdout.write(`${name}: ${Math.round(requests)} requests, ${(bytes / requests).toFixed(0)} bytes allocated per request (sampled)\n`);
    for (const [where, size] of [...top].sort((a, b) => b[1] - a[1]).slice(0, topCount))
      process.stdout.write(`  ${(size / requests).toFixed(0).padStart(6)} B/req  ${where}\n`);
  }
  session.disconnect();
  await node.stop();
}

main().catch((error: unknown) => {
  process.stderr.write(`bench failed: ${(error as Error).stack ?? String(error)}\n`);
  process.exit(1);
});
