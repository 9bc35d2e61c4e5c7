import { createReadStream, statSync } from "node:fs";
import { benchNodeArgs } from "./node-args";
import { reportFigure } from "./report";
import { join } from "node:path";
import { Readable } from "node:stream";
import { performance } from "node:perf_hooks";
import { setTimeout as sleep } from "node:timers/promises";
import { Objm } from "@nats-io/obj";
import { connectTo, startNats } from "../testkit/nats";
import { peakRss } from "../testkit/memory";
import { NodeProcess } from "../testkit/node-process";
import { tempDir } from "../testkit/temp";
import { setUpBenchPolicy, writeBenchCsv } from "./csv-fixture";

/**
 * A redaction job end to end through a node (upload, run, download), against a raw JetStream
 * Object Store put plus get of the same bytes on the same nats-server, in the same run. The
 * node is a separate process (as operators run it), so its peak RSS is its own. BENCH_MB sets
 * the document size (default 200; 1024 for the 1 GB figure); the node runs with the deployed flags, BENCH_NODE_ARGS adds more. Target: at least 0.7x.
 */
const megabytes = Number(process.env.BENCH_MB ?? 200);
const users = 2000;

async function main(): Promise<void> {
  const dir = tempDir("bench-job");
  const input = join(dir, "input.csv");
  const generated = await writeBenchCsv(input, megabytes, users);
  const bytes = statSync(input).size;
  process.stdout.write(`${generated.rows} rows, ${(bytes / 2 ** 20).toFixed(0)} MiB\n`);

  const nats = await startNats();
  const node = await NodeProcess.start({ nodeId: "bench-job", natsUrl: nats.url, env: { LOG_LEVEL: "warn" }, execArgv: benchNodeArgs() });
  try {
    await setUpBenchPolicy(node.url, users);

    // Baseline: the same bytes into an Object Store and back, on the same server.
    const nc = await connectTo(nats.url);
    const store = await new Objm(nc).create("bench");
    const baselineStart = performance.now();
    await store.put({ name: "document" }, Readable.toWeb(createReadStream(input, { highWaterMark: 1 << 20 })) as ReadableStream<Uint8Array>);
    const putMs = performance.now() - baselineStart;
    const stored = await store.get("document");
    let baselineBytes = 0;
    for await (const chunk of stored!.data as unknown as AsyncIterable<Uint8Array>) baselineBytes += chunk.length;
    const baselineMs = performance.now() - baselineStart;
    if (baselineBytes !== bytes) throw new Error(`the object store gave back ${baselineBytes} of ${bytes} bytes`);
    await store.destroy();
    await nc.close();

    const started = performance.now();
    const uploaded = await fetch(`${node.url}/redact/document?purposeId=service&type=platformUse&mappingGroup=bench`, {
      method: "PUT",
      headers: { "content-type": "text/csv" },
      body: Readable.toWeb(createReadStream(input, { highWaterMark: 1 << 20 })),
      duplex: "half",
    } as RequestInit);
    const { jobName } = (await uploaded.json()) as { jobName: string };
    const uploadMs = performance.now() - started;
    for (;;) {
      const progress = (await (await fetch(`${node.url}/redact/progress?jobName=${jobName}`)).json()) as { status: string };
      if (progress.status !== "running") break;
      await sleep(50);
    }
    const ranMs = performance.now() - started;
    const stats = (await (await fetch(`${node.url}/redact/stats?jobName=${jobName}`)).json()) as {
      status: string;
      rows: { kept: number };
      timings: { runMs: number };
    };
    if (stats.status !== "complete" || stats.rows.kept !== generated.kept) throw new Error(`unexpected job result ${JSON.stringify(stats)}`);
    const download = await fetch(`${node.url}/redact/document?jobName=${jobName}`);
    let outBytes = 0;
    for await (const chunk of download.body as unknown as AsyncIterable<Uint8Array>) outBytes += chunk.length;
    const totalMs = performance.now() - started;
    const rss = peakRss(node.child.pid!);

    const rate = (ms: number) => `${(bytes / 2 ** 20 / (ms / 1000)).toFixed(1)} MiB/s`;
    process.stdout.write(
      `${[
        `object store put + get:          ${(baselineMs / 1000).toFixed(1)} s (${rate(baselineMs)}; put ${(putMs / 1000).toFixed(1)} s, get ${((baselineMs - putMs) / 1000).toFixed(1)} s)`,
        `job: upload ${(uploadMs / 1000).toFixed(1)} s, run ${(stats.timings.runMs / 1000).toFixed(1)} s (done after ${(ranMs / 1000).toFixed(1)} s), download ${(outBytes / 2 ** 20).toFixed(0)} MiB; total ${(totalMs / 1000).toFixed(1)} s (${rate(totalMs)})`,
        `ratio job / object store: ${(baselineMs / totalMs).toFixed(2)}x (target >= 0.7x)`,
        `node peak RSS: ${(rss / 2 ** 20).toFixed(0)} MiB (target < 300 MiB)`,
      ].join("\n")}\n`,
    );
    reportFigure({
      figure: `document job end to end vs Object Store put + get (${megabytes} MiB CSV)`,
      measured: `${(totalMs / 1000).toFixed(1)} s`,
      baseline: `${(baselineMs / 1000).toFixed(1)} s`,
      ratio: baselineMs / totalMs,
      target: ">= 0.7x",
      met: baselineMs / totalMs >= 0.7,
    });
    reportFigure({
      figure: "document job: node peak RSS",
      measured: `${(rss / 2 ** 20).toFixed(0)} MiB`,
      baseline: "-",
      ratio: rss / (300 * 2 ** 20),
      target: "< 300 MiB",
      met: rss < 300 * 2 ** 20,
    });
  } finally {
    await node.stop();
    await nats.stop();
  }
}

main().catch((error: unknown) => {
  process.stderr.write(`bench failed: ${(error as Error).stack ?? String(error)}\n`);
  process.exit(1);
});
