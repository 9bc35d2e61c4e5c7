import "reflect-metadata";
import { compareWithNoop, startBenchNode, underNodeFlags } from "./http-load";

/**
 * PUT /redact/record requests per second (one record of the users-table group, an accepted
 * user, so the record is kept and redacted field by field) against a no-op route on the same
 * gateway in the same run; 50 connections, autocannon in a separate process. Target: 0.7x, p99 under 10 ms.
 */
async function main(): Promise<void> {
  underNodeFlags();
  const { node, base } = await startBenchNode();
  const record = {
    "users.id": "bench-user",
    "users.email": "bench@example.com",
    "users.login": "bench",
    "users.name": "Bench User",
    "users.clicks": 7,
    "users.secret": "s3cret",
  };
  await compareWithNoop("/redact/record", `${base}/redact/record?purposeId=service&type=platformUse&mappingGroup=users-table`, JSON.stringify(record));
  await node.stop();
}

main().catch((error: unknown) => {
  process.stderr.write(`bench failed: ${(error as Error).stack ?? String(error)}\n`);
  process.exit(1);
});
