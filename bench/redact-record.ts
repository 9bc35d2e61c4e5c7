import "reflect-metadata";
import { benchRecord, benchRedactPath, compareWithNoop, startBenchNode, underNodeFlags } from "./http-load";

/**
 * PUT /redact/record requests per second (one record of the users-table group, an accepted
 * user, so the record is kept and redacted field by field) against a no-op route on the same
 * gateway in the same run; 50 connections, autocannon in a separate process. Target: 0.7x, p99 under 10 ms.
 */
async function main(): Promise<void> {
  underNodeFlags();
  const { node, base } = await startBenchNode();
  await compareWithNoop("/redact/record", `${base}${benchRedactPath}`, JSON.stringify(benchRecord));
  await node.stop();
}

main().catch((error: unknown) => {
  process.stderr.write(`bench failed: ${(error as Error).stack ?? String(error)}\n`);
  process.exit(1);
});
