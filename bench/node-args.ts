/** Extra node flags for a bench's node process (BENCH_NODE_ARGS, space-separated), e.g. the deployed `--max-semi-space-size=24` or `--cpu-prof`. */
export function benchNodeArgs(): string[] {
  return process.env.BENCH_NODE_ARGS?.split(" ").filter(Boolean) ?? [];
}
