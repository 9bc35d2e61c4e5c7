import { setFlagsFromString } from "node:v8";

/**
 * The V8 flags a node is launched with (deploy/Dockerfile, deploy/warden.service,
 * deploy/local-cluster.sh, `npm start`; the HTTP benches run under them too). A 24 MiB
 * semi-space: at ~15k requests/s the default 16 MiB young generation was scavenged every
 * ~25 ms and promoted short-lived request objects into the old generation (mark-compacts,
 * pauses up to 5.7 ms in the p99). 64 MiB removed that but let a node streaming a large
 * document hold up to 128 MiB of young garbage: peak RSS 324 MiB for a 200 MiB redaction job
 * and 349-370 MiB for an objectstore GetObject, over the 300 MiB bound. At 24 MiB: p99 7-8 ms
 * under the /decision and /redact/record benches; the streams peaked at 277-309 MiB (job) and
 * 299-307 MiB (GetObject), later 311-316 MiB on a loaded machine: at or over the bound. Without the flag: 264-283 MiB, but
 * a /redact/record p99 of 10 ms
 * (docs/operations.md, "Node.js flags"; bench/RESULTS.md).
 * V8 rounds the value up to a power of two (measured, branch objmem3): 24 gives 32 MiB
 * semi-spaces, a young generation of 64 MiB committed once grown, as the "32" rows measured.
 * No value lies between V8's default (16) and that: 17 to 32 all give 32.
 */
export const nodeFlags: readonly string[] = ["--max-semi-space-size=24"];

/**
 * The environment a node is launched with, beside its flags (the same places set it). Two glibc
 * malloc arenas instead of up to eight per core: a CSV worker's outputs are allocated on its
 * thread and freed on the event loop at its next collection, so each thread's arena grew and kept
 * its holes (59 MiB of arenas at the peak of a 1 GiB GetObject). Measured at 1 GiB: peak RSS
 * 295 and 299 MiB against 313-316 MiB without it (bench/RESULTS.md, branch objmem3).
 */
export const nodeEnvironment: Readonly<Record<string, string>> = { MALLOC_ARENA_MAX: "2" };

/**
 * Lets a worker thread's `resourceLimits` apply while it starts. V8 flags are process-wide and
 * override a worker's limits (measured: a worker asked for an 8 MiB young generation got 64 MiB
 * under the semi-space flag), so the decision indexer's young generation grew like the event
 * loop's, to ~47 MB committed while a large document was redacted, and the node's peak RSS went
 * over 300 MiB (bench/RESULTS.md, branch objmem). V8 reads the flag when it sets up an isolate's
 * heap: cleared until the worker is online, then restored as launched. Cleared for good, it made
 * the event loop's heap run a mark-compact every few hundred milliseconds (measured), hence the
 * window. Returns the function that restores it.
 */
export function withoutSemiSpaceFlag(): () => void {
  // As launched: in NODE_OPTIONS or on the command line, which wins (docs/operations.md allows both).
  const given = [...(process.env.NODE_OPTIONS?.split(/\s+/) ?? []), ...process.execArgv];
  const launched = given.filter((arg) => arg.startsWith("--max-semi-space-size=")).pop();
  if (!launched) return () => undefined;
  setFlagsFromString("--max-semi-space-size=0");
  return () => setFlagsFromString(launched);
}
