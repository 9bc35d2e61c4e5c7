import { randomUUID } from "node:crypto";
import type { CompiledPolicy } from "../decision/compiled-policy";
import { decide } from "../decision/engine";
import type { Decision, DecisionRequest } from "../decision/types";
import type { EventLog } from "../actors/runtime/event-log";
import type { UserRecord } from "../actors/user/user-actor";
import { decisionTrace } from "./decision-service";

/** Users looked up at once; the cache answers most of them from memory. */
const lookupConcurrency = 64;

/** Each user's committed state, looked up `lookupConcurrency` at a time, handed to `use` in the order given. */
export async function withUserStates(
  userIds: readonly string[],
  userState: (userId: string) => Promise<UserRecord | null>,
  use: (userId: string, state: UserRecord | null) => void,
): Promise<void> {
  for (let i = 0; i < userIds.length; i += lookupConcurrency) {
    const batch = userIds.slice(i, i + lookupConcurrency);
    const states = await Promise.all(batch.map((userId) => userState(userId)));
    batch.forEach((userId, index) => use(userId, states[index]!));
  }
}

/**
 * One user's decision for a door that decides many users at once (document jobs, exports),
 * traced on `warden.trace.<door>.<flow>` with `details` (the job, the export) added; never
 * record values. `stored` settles once JetStream has the record: the decision may not be
 * used before (see `EventLog.trace`).
 */
export function decideTraced(
  events: EventLog,
  at: { door: string; nodeId: string },
  compiled: CompiledPolicy,
  userId: string,
  state: UserRecord | null,
  request: DecisionRequest,
  details: Record<string, unknown>,
): { decision: Decision; stored: Promise<void> } {
  const now = new Date();
  const decision = decide(compiled, state ?? undefined, request, now);
  const stored = events.trace(
    at.door,
    decision.flow,
    decisionTrace({ traceId: randomUUID(), time: now.toISOString(), door: at.door, nodeId: at.nodeId, userId }, request, decision, details),
  );
  return { decision, stored };
}

/** Waits until every one of these trace records is stored (records of one batch share one promise). */
export async function allStored(stored: Iterable<Promise<void>>): Promise<void> {
  await Promise.all(new Set(stored));
}
