import { createReadStream, rmSync, statSync, writeFileSync } from "node:fs";
import { benchNodeArgs } from "./node-args";
import { request as httpRequest } from "node:http";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { startNats } from "../testkit/nats";
import { currentRss, peakRss } from "../testkit/memory";
import { processCpuSeconds } from "../testkit/process-cpu";
import { ThreadCpuSampler } from "../testkit/thread-cpu";
import { NodeProcess } from "../testkit/node-process";
import { freePort } from "../testkit/ports";
import { S3Store } from "../testkit/s3";
import { tempDir } from "../testkit/temp";
import { reportFigure } from "./report";
import { ReadingClient } from "./reading-client";
import { setUpBenchPolicy, writeBenchCsv } from "./csv-fixture";

/**
 * GetObject of a CSV through an objectstore export (redacted as it streams, with the redaction
 * engine's worker threads) against GetObject of the same object directly from the same store
 * (s3rver), interleaved rounds, medians. The node is its own process, so its peak RSS is its
 * own. BENCH_MB sets the object's size (default 200; 1024 for the 1 GiB figure), BENCH_ROUNDS
 * the rounds (default 3). Target: at least 0.7x of direct, node RSS under 300 MiB.
 * CPU seconds are counted too (this process: s3rver on its event loop and libuv's pool, the reading
 * client on a thread of its own; the node: its event loop, the redaction workers, V8's helper threads): on a shared machine they vary less than the wall clock, and
 * they say what each path costs the two cores. The node runs with --trace-gc: each round says how
 * many full mark-compacts its event loop made (BENCH_GC_LOG=<file> keeps the node's log), and the node's RSS before
 * the rounds and its peak after each. The node runs with the deployed flags; BENCH_NODE_ARGS adds node flags (e.g. --cpu-prof).
 * Every GET is followed by a pause (`settleMs`, BENCH_SETTLE_MS), and rounds alternate which path is read
 * first, so neither always follows the other. The node's CPU of a round is read after the pause that
 * follows its document: what follows it (its workers ending, the next document's spare workers
 * starting) is the document's cost, not the next GET's. Each round also gives, per kind of thread,
 * how long threads ready to run waited for a core (the kernel's run queue): on two shared cores,
 * where the time goes that no thread's CPU shows. The
 * node inherits this process's environment: REDACTION_PIPELINE_WAITS=1 prints where each document waited.
 * Round 1 is the warm-up (the workers' first start, the pools filling): the medians count it as any
 * round, and a line gives the medians of rounds 2 and on as well, next to round 1's figure.
 * The export reads the store as an export does by default (one GET); BENCH_VARIANTS, a JSON
 * list of `rangedReads` settings (e.g. `[{"parallel":1}]`), adds one export per setting on the same
 * node, each read once per round after the default one: their medians and ratios against the same
 * direct reads are printed after the main figures (an A/B within one run).
 */
const megabytes = Number(process.env.BENCH_MB ?? 200);
const rounds = Number(process.env.BENCH_ROUNDS ?? 3);
const users = 2000;
/** After each GET through the export, before the node's CPU is read and the next round starts. */
const settleMs = Number(process.env.BENCH_SETTLE_MS ?? 250);
/** Further exports of the same node, each with its own `rangedReads` (BENCH_VARIANTS). */
const variants = JSON.parse(process.env.BENCH_VARIANTS ?? "[]") as Array<Record<string, number>>;

/** Stores the file in the store as it is read (no SDK buffering a large body). */
function upload(port: number, path: string, file: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const outgoing = httpRequest(
      { host: "127.0.0.1", port, path, method: "PUT", headers: { "content-type": "text/csv", "content-length": String(statSync(file).size) } },
      (response) => {
        response.resume();
        response.on("end", () => (response.statusCode === 200 ? resolve() : reject(new Error(`upload: ${response.statusCode}`))));
      },
    );
    outgoing.on("error", reject);
    createReadStream(file, { highWaterMark: 1 << 20 }).pipe(outgoing);
  });
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

async function main(): Promise<void> {
  const dir = tempDir("bench-objectstore");
  const input = join(dir, "input.csv");
  const generated = await writeBenchCsv(input, megabytes, users);
  const bytes = statSync(input).size;
  process.stdout.write(`${generated.rows} rows, ${(bytes / 2 ** 20).toFixed(0)} MiB\n`);
  const store = await S3Store.start(["bench"]);
  await upload(store.port, "/bench/input.csv", input);
  rmSync(dir, { recursive: true, force: true });

  const nats = await startNats();
  const exportPort = await freePort();
  // --trace-gc: every round also says how many full mark-compacts the node's event loop made (one log line each).
  const node = await NodeProcess.start({
    nodeId: "bench-objectstore",
    natsUrl: nats.url,
    env: { LOG_LEVEL: "warn" },
    execArgv: ["--trace-gc", ...benchNodeArgs()],
  });
  // The event loop's isolate is the one of the first collection logged (at start-up); workers' isolates have other addresses.
  const isolateOf = (line: string) => /^\[\d+:(0x[0-9a-f]+)\]/.exec(line)?.[1];
  const markCompacts = () => {
    const main = isolateOf(node.lines.find((line) => isolateOf(line) !== undefined) ?? "");
    return node.lines.filter((line) => line.includes("Mark-Compact") && isolateOf(line) === main).length;
  };
  const mib = (value: number) => `${(value / 2 ** 20).toFixed(0)} MiB`;
  // Where the node's memory comes from: started, with the bench's policy, with the export, then the peak after each round.
  const rssSteps = [`started ${mib(currentRss(node.child.pid!))}`];
  try {
    await setUpBenchPolicy(node.url, users);
    rssSteps.push(`policy ${mib(currentRss(node.child.pid!))}`);
    /** Creates an objectstore export of the bench's store on `port` (`extra`: further fields) and waits until it listens. */
    const createExport = async (port: number, extra: Record<string, unknown> = {}) => {
      const created = await fetch(`${node.url}/export`, {
        method: "PUT",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({
          type: "objectstore",
          endpoint: store.endpoint,
          resolverGroup: "bench",
          metadata: { type: "platformUse", purposeId: "service" },
          port,
          ...extra,
        }),
      });
      if (created.status !== 200) throw new Error(`export not created: ${await created.text()}`);
      for (let tries = 0; tries < 100; tries++) {
        if ((await fetch(`http://127.0.0.1:${port}/`).catch(() => undefined)) !== undefined) break;
        await sleep(100);
      }
    };
    await createExport(exportPort);
    const variantPorts: number[] = [];
    for (const rangedReads of variants) {
      variantPorts.push(await freePort());
      await createExport(variantPorts.at(-1)!, { rangedReads });
    }
    rssSteps.push(`export ${mib(currentRss(node.child.pid!))}`);
    // What the node holds before any document (so what a round adds to it can be told apart).
    process.stdout.write(`node RSS: ${rssSteps.join(", ")} (peak so far ${mib(peakRss(node.child.pid!))})\n`);
    const directMs: number[] = [];
    const exportMs: number[] = [];
    const directCpu: number[] = [];
    const exportCpu: number[] = [];
    const nodeCpu: number[] = [];
    const variantMs: number[][] = variants.map(() => []);
    /** Per round: whether the export was read first. */
    const orders: boolean[] = [];
    const benchCpu = () => {
      const { user, system } = process.cpuUsage();
      return (user + system) / 1e6;
    };
    let outBytes = 0;
    const client = await ReadingClient.start();
    const benchNames = new Map(client.threadIds.map((tid) => [tid, "reading client"]));
    /** This process's CPU by thread during a GET: s3rver (event loop, libuv's pool for its file reads) and the client. */
    const benchThreads = (byThread: Map<string, number>) =>
      [...byThread]
        .filter(([, seconds]) => seconds > 0)
        .map(
          ([kind, seconds]) =>
            `${kind === "event loop" ? "s3rver (event loop)" : kind.startsWith("helper") ? "s3rver's fs pool and GC" : kind} ${seconds.toFixed(2)} s`,
        )
        .join(", ");
    /** Run-queue waits by kind of thread: how long threads ready to run waited for one of the two cores. */
    const queuedText = (byKind: Map<string, { waitedSeconds: number; slices: number }>) =>
      [...byKind]
        .filter(([, { slices }]) => slices > 0)
        .map(([kind, { waitedSeconds, slices }]) => `${kind} ${waitedSeconds.toFixed(2)} s / ${slices}`)
        .join(", ");
    /** GetObject directly from the store, then the pause every read is followed by. */
    const readDirect = async () => {
      const before = benchCpu();
      const own = new ThreadCpuSampler(process.pid, 50, benchNames);
      const read = await client.get(store.port, "/bench/input.csv");
      const threads = benchThreads(own.stop());
      if (read.bytes !== bytes) throw new Error(`the store gave ${read.bytes} of ${bytes} bytes`);
      const cpu = benchCpu() - before;
      await sleep(settleMs);
      return { read, cpu, threads, queued: own.queued() };
    };
    /** GetObject through the export; the node's CPU counted until the pause after it ends (its workers ending, the next document's spares starting). */
    const readExport = async () => {
      const before = benchCpu();
      const nodeBefore = processCpuSeconds(node.child.pid!);
      const compactsBefore = markCompacts();
      const linesBefore = node.lines.length;
      const own = new ThreadCpuSampler(process.pid, 50, benchNames);
      const nodeThreads = new ThreadCpuSampler(node.child.pid!);
      const read = await client.get(exportPort, "/bench/input.csv");
      const threads = benchThreads(own.stop());
      const benchSpent = benchCpu() - before;
      await sleep(settleMs);
      const nodeByThread = [...nodeThreads.stop()].filter(([, seconds]) => seconds > 0).sort((a, b) => b[1] - a[1]);
      const nodeSpent = processCpuSeconds(node.child.pid!) - nodeBefore;
      return {
        read,
        cpu: benchSpent + nodeSpent,
        nodeCpu: nodeSpent,
        threads,
        queued: own.queued(),
        nodeByThread,
        nodeQueued: nodeThreads.queued(),
        markCompacts: markCompacts() - compactsBefore,
        lines: node.lines.slice(linesBefore),
      };
    };
    for (let round = 0; round < rounds; round++) {
      // Odd rounds read through the export first: each path comes after the other as often, so what a read leaves
      // behind (on these two cores, in s3rver's and the client's heaps) weighs on both alike.
      const exportFirst = round % 2 === 1;
      const first = exportFirst ? await readExport() : undefined;
      const { read: direct, cpu: directSpent, threads: directThreads, queued: directQueued } = await readDirect();
      const {
        read: redacted,
        cpu: exportSpent,
        nodeCpu: nodeSpent,
        threads: exportThreads,
        queued: exportQueued,
        nodeByThread: byThread,
        nodeQueued,
        markCompacts: compacts,
        lines,
      } = first ?? (await readExport());
      directMs.push(direct.ms);
      orders.push(exportFirst);
      directCpu.push(directSpent);
      outBytes = redacted.bytes;
      exportMs.push(redacted.ms);
      nodeCpu.push(nodeSpent);
      exportCpu.push(exportSpent);
      process.stdout.write(
        `round ${round + 1}${exportFirst ? " (export first)" : ""}: direct ${(direct.ms / 1000).toFixed(2)} s (${directCpu[round]!.toFixed(2)} CPU s), through the export ${(redacted.ms / 1000).toFixed(2)} s (${exportCpu[round]!.toFixed(2)} CPU s, the node ${nodeCpu[round]!.toFixed(2)}; ${(redacted.bytes / 2 ** 20).toFixed(0)} MiB out)\n` +
          `  node CPU by thread: ${byThread.map(([name, seconds]) => `${name} ${seconds.toFixed(2)} s`).join(", ")}; ${compacts} mark-compacts of the event loop's heap; node peak RSS so far ${mib(peakRss(node.child.pid!))}\n` +
          `  bench process by thread: direct ${directThreads}; through the export ${exportThreads}\n` +
          `  waiting for a core (run queue, s / slices): direct ${queuedText(directQueued)}; through the export ${queuedText(exportQueued)}; the node ${queuedText(nodeQueued)}\n`,
      );
      // REDACTION_PIPELINE_WAITS=1 (passed on to the node): where the document's pipeline waited.
      for (const line of lines.filter((line) => line.includes("pipeline waits"))) process.stdout.write(`  ${line}\n`);
      for (const [index, port] of variantPorts.entries()) {
        const read = await client.get(port, "/bench/input.csv");
        if (read.bytes !== outBytes) throw new Error(`variant ${JSON.stringify(variants[index])} gave ${read.bytes} bytes, the default export ${outBytes}`);
        variantMs[index]!.push(read.ms);
        process.stdout.write(`  variant ${JSON.stringify(variants[index])}: ${(read.ms / 1000).toFixed(2)} s\n`);
        await sleep(settleMs);
      }
    }
    await client.stop();
    const rss = peakRss(node.child.pid!);
    // What stays once the documents are done (with spare CSV workers: those waiting for the next document).
    process.stdout.write(`node RSS after the rounds, idle: ${mib(currentRss(node.child.pid!))}\n`);
    const view = (await (await fetch(`${node.url}/export`)).json()) as { exports: Array<{ serving: { rows: { in: number; kept: number } } }> };
    for (const { serving } of view.exports) {
      if (serving.rows.kept !== generated.kept * rounds) throw new Error(`kept ${serving.rows.kept} rows, expected ${generated.kept * rounds}`);
    }
    const direct = median(directMs);
    const through = median(exportMs);
    /** The median of the steady rounds (2 and on) read with the export first (`exportFirst`) or not. */
    const byOrder = (values: number[], exportFirst: boolean) =>
      (median(values.filter((_, round) => round > 0 && orders[round] === exportFirst)) / 1000).toFixed(2);
    const rate = (ms: number) => `${(bytes / 2 ** 20 / (ms / 1000)).toFixed(1)} MiB/s`;
    process.stdout.write(
      `${[
        `direct GetObject median:       ${(direct / 1000).toFixed(2)} s (${rate(direct)})`,
        `through the export median:     ${(through / 1000).toFixed(2)} s (${rate(through)}; ${(outBytes / 2 ** 20).toFixed(0)} MiB redacted out)`,
        `ratio export / direct: ${(direct / through).toFixed(2)}x (target >= 0.7x)`,
        ...(rounds > 1
          ? [
              `steady rounds 2-${rounds} medians: direct ${(median(directMs.slice(1)) / 1000).toFixed(2)} s, through the export ${(median(exportMs.slice(1)) / 1000).toFixed(2)} s: ${(median(directMs.slice(1)) / median(exportMs.slice(1))).toFixed(2)}x (round 1, the warm-up: ${(exportMs[0]! / 1000).toFixed(2)} s against ${(directMs[0]! / 1000).toFixed(2)} s)`,
            ]
          : []),
        ...(rounds > 2
          ? [
              `by order, steady rounds: read first, direct ${byOrder(directMs, false)} s, through the export ${byOrder(exportMs, true)} s; read second, direct ${byOrder(directMs, true)} s, through the export ${byOrder(exportMs, false)} s`,
            ]
          : []),
        `CPU per round, medians: direct ${median(directCpu).toFixed(2)} s, through the export ${median(exportCpu).toFixed(2)} s (the node ${median(nodeCpu).toFixed(2)} s, ${(bytes / 2 ** 20 / median(nodeCpu)).toFixed(0)} MiB per node CPU second)`,
        `node peak RSS: ${(rss / 2 ** 20).toFixed(0)} MiB (target < 300 MiB)`,
        ...variants.map(
          (rangedReads, index) =>
            `variant ${JSON.stringify(rangedReads)}: median ${(median(variantMs[index]!) / 1000).toFixed(2)} s, ${(direct / median(variantMs[index]!)).toFixed(2)}x of direct (steady rounds ${(median(directMs.slice(1)) / median(variantMs[index]!.slice(1))).toFixed(2)}x)`,
        ),
      ].join("\n")}\n`,
    );
    reportFigure({
      figure: `objectstore GetObject through the export vs direct (${megabytes} MiB CSV)`,
      measured: `${(through / 1000).toFixed(2)} s`,
      baseline: `${(direct / 1000).toFixed(2)} s`,
      ratio: direct / through,
      target: ">= 0.7x",
      met: direct / through >= 0.7,
    });
    reportFigure({
      figure: `objectstore GetObject (${megabytes} MiB): node peak RSS`,
      measured: `${(rss / 2 ** 20).toFixed(0)} MiB`,
      baseline: "-",
      ratio: rss / (300 * 2 ** 20),
      target: "< 300 MiB",
      met: rss < 300 * 2 ** 20,
    });
  } finally {
    // BENCH_GC_LOG=<file>: the node's output (its --trace-gc lines) for a closer look at its collections.
    if (process.env.BENCH_GC_LOG) writeFileSync(process.env.BENCH_GC_LOG, `${node.lines.join("\n")}\n`);
    await node.stop();
    await nats.stop();
    await store.stop();
  }
}

main().catch((error: unknown) => {
  process.stderr.write(`bench failed: ${(error as Error).stack ?? String(error)}\n`);
  process.exit(1);
});
