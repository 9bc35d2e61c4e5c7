import { performance } from "node:perf_hooks";
import type { Decision } from "../decision/types";
import { countedDecision } from "../metrics/decision-counts";

/**
 * What counting a decision (warden_decisions_total) costs the decision path: countedDecision
 * in a loop over a few realistic label sets, against the same loop without it. Prints ns per
 * decision and the heap used before and after (a per-call allocation would grow it by
 * tens of MB over 10M calls between collections).
 */
const calls = Number(process.env.BENCH_CALLS ?? 10_000_000);
const decisions: Decision[] = [
  { allowed: true, flow: "platform", categoryIds: ["usage"], reasons: [{ code: "ALLOWED_BY_TERMS", text: "" }], summary: "", revision: 1 },
  { allowed: false, flow: "platform", categoryIds: [], reasons: [{ code: "NO_TERMS_ACCEPTED", text: "" }], summary: "", revision: 1 },
  { allowed: false, flow: "consent", categoryIds: [], reasons: [{ code: "UNKNOWN_USER", text: "" }], summary: "", revision: 1 },
  { allowed: true, flow: "contractual", categoryIds: ["contact"], reasons: [{ code: "ALLOWED_BY_CONTRACT", text: "" }], summary: "", revision: 1 },
] as Decision[];
const doors = ["decision", "redact", "export", "decision"];

function loop(count: boolean): number {
  let sink = 0;
  const started = performance.now();
  for (let i = 0; i < calls; i++) {
    const k = i & 3;
    if (count) countedDecision(doors[k]!, decisions[k]!);
    else sink += decisions[k]!.reasons.length + doors[k]!.length;
  }
  const ms = performance.now() - started;
  if (sink < 0) process.stdout.write("");
  return ms;
}

loop(true); // warm: every label set bound once
loop(false);
global.gc?.();
const heapBefore = process.memoryUsage().heapUsed;
const withCounting = loop(true);
const heapAfter = process.memoryUsage().heapUsed;
const without = loop(false);
process.stdout.write(
  `countedDecision: ${((withCounting * 1e6) / calls).toFixed(1)} ns per decision; the loop without it: ${((without * 1e6) / calls).toFixed(1)} ns (${calls.toLocaleString("en")} calls)\n`,
);
process.stdout.write(`heap used across the counted loop: ${((heapAfter - heapBefore) / 1024).toFixed(0)} KiB\n`);
