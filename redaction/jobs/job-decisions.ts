import type { CompiledPolicy } from "../../decision/compiled-policy";
import { VerdictInterner } from "../../decision/verdicts";
import { VerdictMemo } from "../../decision/verdict-memo";
import { documentLimits, type DecisionSource, type RedactionRequest, type RowDecision } from "../types";
import type { EventLog } from "../../actors/runtime/event-log";
import type { UserRecord } from "../../actors/user/user-actor";
import { allStored, decideTraced, withUserStates } from "../../ports/traced-decisions";

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
 * reuse the decision, once its trace record is stored. Users with the same outcome share one RowDecision object, which the
 * redactors use as a key.
 */
export class JobDecisions implements DecisionSource {
  /** A job decides under one configuration revision, to its end: its verdicts never expire. */
  private readonly memo = new VerdictMemo<{ decision: RowDecision; madeUnder: number; expiresAt: number }>(documentLimits.maxRememberedUsers);
  private readonly verdicts = new VerdictInterner();
  readonly users = { seen: 0, allowed: 0, denied: 0 };

  constructor(private readonly context: JobDecisionContext) {}

  async prepare(userIds: readonly string[]): Promise<void> {
    const missing = [...new Set(userIds)].filter((id) => !this.memo.has(id));
    const decided: Array<[string, RowDecision]> = [];
    const stored: Array<Promise<void>> = [];
    await withUserStates(missing, this.context.userState, (id, state) => {
      const { decision, stored: traced } = this.decideFor(id, state);
      decided.push([id, decision]);
      stored.push(traced);
    });
    // No row is redacted by a decision before its trace is stored; a failure ends the attempt (it is run again).
    await allStored(stored);
    for (const [id, decision] of decided) this.memo.set(id, { decision, madeUnder: this.context.compiled.revision, expiresAt: Infinity });
  }

  of(userId: string): RowDecision {
    const decision = this.memo.get(userId, this.context.compiled.revision)?.decision;
    if (!decision) throw new Error(`no decision prepared for a user of job ${this.context.jobName}`);
    return decision;
  }

  private decideFor(userId: string, state: UserRecord | null): { decision: RowDecision; stored: Promise<void> } {
    const { compiled, request, events, jobName, nodeId, attempt } = this.context;
    const { decision, stored } = decideTraced(events, { door: "redact", nodeId }, compiled, userId, state, request, {
      kind: "document.user",
      jobName,
      attempt,
    });
    this.users.seen++;
    if (decision.allowed) this.users.allowed++;
    else this.users.denied++;
    return { decision: this.verdicts.of(decision), stored };
  }
}
