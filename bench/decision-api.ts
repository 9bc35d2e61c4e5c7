import "reflect-metadata";
import { benchDecisionQuery, compareWithNoop, startBenchNode, underNodeFlags } from "./http-load";

/**
 * /decision requests per second against a no-op route on the same gateway in the same run, 50
 * connections, autocannon in a separate process (the server keeps its own core). Prints both
 * rates, the ratio (target: at least 0.7x) and p99 latencies (target under 10 ms).
 */
async function main(): Promise<void> {
  underNodeFlags();
  const { node, base } = await startBenchNode();
  await compareWithNoop("/decision", `${base}/decision`, JSON.stringify(benchDecisionQuery));
  await node.stop();
}

main().catch((error: unknown) => {
  process.stderr.write(`bench failed: ${(error as Error).stack ?? String(error)}\n`);
  process.exit(1);
});
