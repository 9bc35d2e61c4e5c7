import { nodeFlags } from "../service/node-flags";

/**
 * The flags a bench's node process runs with: the deployed ones (service/node-flags.ts), so that
 * what a bench measures is the node as operators run it, then BENCH_NODE_ARGS (space-separated;
 * a later V8 flag wins, e.g. another --max-semi-space-size, or --cpu-prof).
 */
export function benchNodeArgs(): string[] {
  return [...nodeFlags, ...(process.env.BENCH_NODE_ARGS?.split(" ").filter(Boolean) ?? [])];
}
