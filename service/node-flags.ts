/**
 * The V8 flags a node is launched with (deploy/Dockerfile, deploy/warden.service,
 * deploy/local-cluster.sh, `npm start`; the HTTP benches run under them too). A 64 MiB
 * semi-space: at ~15k requests/s the default 16 MiB young generation was scavenged every
 * ~25 ms (1.7-2.2 ms each) and promoted ~40 MB/s of short-lived request objects into the old
 * generation (a mark-compact every ~3 s, incremental steps up to 5.7 ms): pauses that land in
 * the p99 of every request in flight. At 64 MiB: a scavenge every ~120 ms (1.1-1.3 ms), no
 * promotion, no mark-compact under load (docs/operations.md, "Node.js flags").
 */
export const nodeFlags: readonly string[] = ["--max-semi-space-size=64"];
