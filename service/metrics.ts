import { Counter, Gauge, type Registry } from "prom-client";
import type { Decision } from "../actors/decision/types";

/**
 * Counts under a fixed sequence of label values, one tree level per label. A hot path walks
 * `child(value)` once per label: after the first time a combination is seen, counting is a few
 * Map lookups and an increment, with nothing allocated. prom-client sees the counts only at
 * scrape time (a collected counter reads `leaves()`).
 */
export class CountTree {
  value = 0;
  private readonly children = new Map<string, CountTree>();

  child(value: string): CountTree {
    let found = this.children.get(value);
    if (!found) this.children.set(value, (found = new CountTree()));
    return found;
  }

  /** Every leaf `depth` levels down, with the label values on its path. */
  *leaves(depth: number, path: string[] = []): Generator<[string[], number]> {
    if (depth === 0) {
      yield [path, this.value];
      return;
    }
    for (const [value, child] of this.children) yield* child.leaves(depth - 1, [...path, value]);
  }
}

/**
 * Decisions made in this process, by door, flow, allowed and first reason code: counted where
 * every traced decision is made (`decisionTrace`, and the record door's no-user answer). One
 * tree per process: a node is a process (tests that run several nodes in one process share it).
 */
export const decisionCounts = new CountTree();

export function countDecision(door: string, flow: string, allowed: boolean, reason: string): void {
  decisionCounts.child(door).child(flow).child(allowed ? "true" : "false").child(reason).value++;
}

/** The first reason names why (the others add detail): the label, so the label set stays the engine's reason codes. */
export function countedDecision(door: string, decision: Decision): void {
  countDecision(door, decision.flow, decision.allowed, decision.reasons[0]?.code ?? "NONE");
}

type Reader<L extends string> = (set: (labels: Record<L, string>, value: number) => void) => void;

/** A metric whose values are read at scrape time from a tally the counting code keeps: a counter (the tally only grows) or a gauge. */
function collected<L extends string>(kind: "counter" | "gauge", registry: Registry, name: string, help: string, labelNames: readonly L[], read: Reader<L>): void {
  const config = { name, help, labelNames, registers: [registry] };
  if (kind === "counter") {
    new Counter<L>({ ...config, collect() { this.reset(); read((labels, value) => this.inc(labels, value)); } });
  } else {
    new Gauge<L>({ ...config, collect() { this.reset(); read((labels, value) => this.set(labels, value)); } });
  }
}

export const collectedCounter = <L extends string>(registry: Registry, name: string, help: string, labelNames: readonly L[], read: Reader<L>): void => collected("counter", registry, name, help, labelNames, read);
export const collectedGauge = <L extends string>(registry: Registry, name: string, help: string, labelNames: readonly L[], read: Reader<L>): void => collected("gauge", registry, name, help, labelNames, read);
