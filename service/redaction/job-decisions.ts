import { randomUUID } from "node:crypto";
import type { CompiledPolicy } from "../../actors/decision/compiled-policy";
import { decide } from "../../actors/decision/engine";
import { VerdictInterner } from "../../actors/decision/verdicts";
import type { DecisionSource, RedactionRequest, RowDecision } from "../../actors/redaction/types";
import type { EventLog } from "../../actors/runtime/event-log";
import type { UserRecord } from "../../actors/user/user-actor";
import { decisionTrace } from "../decision-service";

/** Users looked up at once; the cache answers most of them from memory. */
const lookupConcurrency = 64;
/** Decisions remembered per job; past this the memo starts over (users are decided, and traced, again). */
const maxRemembered = 500_000;

export interface JobDecisionContext {
  jobName: string;
  attempt: number;
  nodeId: string;
  compiled: CompiledPolicy;
  request: RedactionRequest;
  userState: (userId: string) => Promise<UserRecord | null>;
  events: EventLog;
}

/**
 * The decisions of one job: each distinct user is decided once (with the job's configuration
 * revision and the user's committed state) and traced once, with the job's name; rows then
 * reuse the decision. Users with the same outcome share one RowDecision object, which the
 * redactors use as a key.
 */
export class JobDecisions implements DecisionSource {
  private readonly memo = new Map<string, RowDecision>();
  private readonly verdicts = new VerdictInterner();
  readonly users = { seen: 0, allowed: 0, denied: 0 };

  constructor(private readonly context: JobDecisionContext) {}

  async prepare(userIds: readonly string[]): Promise<void> {
    if (this.memo.size > maxRemembered) this.memo.clear();
    const missing = [...new Set(userIds)].filter((id) => !this.memo.has(id));
    for (let i = 0; i < missing.length; i += lookupConcurrency) {
      const batch = missing.slice(i, i + lookupConcurrency);
      const states = await Promise.all(batch.map((id) => this.context.userState(id)));
      batch.forEach((id, index) => this.memo.set(id, this.decideFor(id, states[index])));
    }
  }

  of(userId: string): RowDecision {
    const decision = this.memo.get(userId);
    if (!decision) throw new Error(`no decision prepared for a user of job ${this.context.jobName}`);
    return decision;
  }

  private decideFor(userId: string, state: UserRecord | null): RowDecision {
    const { compiled, request, events, jobName } = this.context;
    const now = new Date();
    const decision = decide(compiled, state ?? undefined, request, now);
    this.users.seen++;
    if (decision.allowed) this.users.allowed++;
    else this.users.denied++;
    events.trace("redact", decision.flow, {
      ...decisionTrace({ traceId: randomUUID(), time: now.toISOString(), door: "redact", nodeId: this.context.nodeId, userId }, request, decision),
      kind: "document.user",
      jobName,
      attempt: this.context.attempt,
    });
    return this.verdicts.of(decision);
  }
}
