import type { Decision } from "../decision/types";
import { CountTree } from "./count-tree";

/**
 * Decisions made in this process, by door, flow, allowed and first reason code: counted where
 * every traced decision is made (`decisionTrace`, and the record door's no-user answer). One
 * tree per process: a node is a process (tests that run several nodes in one process share it).
 */
export const decisionCounts = new CountTree();

export function countDecision(door: string, flow: string, allowed: boolean, reason: string): void {
  decisionCounts
    .child(door)
    .child(flow)
    .child(allowed ? "true" : "false")
    .child(reason).value++;
}

/** The first reason names why (the others add detail): the label, so the label set stays the engine's reason codes. */
export function countedDecision(door: string, decision: Decision): void {
  countDecision(door, decision.flow, decision.allowed, decision.reasons[0]?.code ?? "NONE");
}
