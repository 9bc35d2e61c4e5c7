import { nodeFlags } from "../service/node-flags";

/**
 * The flags a bench's node runs with: the deployed ones (service/node-flags.ts), so that what a
 * bench measures is the node as operators run it, then BENCH_NODE_ARGS (space-separated; a later
 * V8 flag wins, e.g. another --max-semi-space-size, or --cpu-prof). `BENCH_DEPLOYED_FLAGS=off`
 * leaves the deployed ones out: the node under V8's defaults, to measure what a flag buys.
 */
export function benchNodeArgs(): string[] {
  const deployed = process.env.BENCH_DEPLOYED_FLAGS === "off" ? [] : nodeFlags;
  return [...deployed, ...(process.env.BENCH_NODE_ARGS?.split(" ").filter(Boolean) ?? [])];
}
