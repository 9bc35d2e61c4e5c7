import { randomUUID } from "node:crypto";
import { compiledFor } from "../decision/compile-cache";
import { decide, flowOf, purposeName } from "../decision/engine";
import {
  nestsDeeperThan,
  noUserSummary,
  planRecords,
  recordLimits,
  RecordShapeError,
  summaryAdvice as advice,
  userIdOf,
  type RecordPlan,
} from "../decision/record-redaction";
import { recordOutcome } from "../decision/record-outcome";
import type { Decision, DecisionRequest, Reason } from "../decision/types";
import type { MappingGroup } from "../policy/model";
import { policy, type PolicyState } from "../actors/policy/policy-actor";
import { policyRevision } from "../actors/policy/revision-actor";
import type { CompiledPolicy } from "../decision/compiled-policy";
import type { ActorRuntime } from "../actors/runtime/runtime";
import type { StateCache } from "../actors/runtime/state-cache";
import { HandlerError } from "../actors/runtime/errors";
import { user, type UserRecord } from "../actors/user/user-actor";
import { countDecision, countedDecision } from "../metrics/decision-counts";
import type { Caller, DecisionAnswer, DecisionPort, DecisionQuery, RecordRedaction, RedactPort, RedactRequest } from "../api/types";

/** The user id of a record (userIdOf), a record it refuses being refused with 400 ERR_REDACT_RECORD_INVALID. */
function recordUserId(record: Record<string, unknown>, plan: RecordPlan): string | undefined {
  try {
    return userIdOf(record, plan);
  } catch (error) {
    if (error instanceof RecordShapeError) throw new HandlerError("REDACT_RECORD_INVALID", error.message);
    throw error;
  }
}

/** Which record fields of a mapping group a decision lets through (policy-semantics 4). */
export function allowedFields(group: MappingGroup, decision: Decision, fieldCategory: (fieldId: string) => string | undefined): Record<string, boolean> {
  // fromEntries defines own properties: a record field named __proto__ is kept like any other.
  return Object.fromEntries(
    group.fieldMappings.map((mapping) => {
      const category = mapping.categoryId ?? (mapping.fieldId === undefined ? undefined : fieldCategory(mapping.fieldId));
      return [mapping.recordField, decision.allowed && category !== undefined && decision.categoryIds.includes(category)];
    }),
  );
}

/**
 * The decision door near the caller: compiled policy and user state come from caches kept
 * current by JetStream watches, so a warm door makes no network call per decision. Every
 * decision is written to the trace (`warden.trace.<door>.<flow>`), without record values, and
 * answered only once JetStream has stored that record.
 */
export class DecisionService implements DecisionPort, RedactPort {
  private readonly plans = new Map<string, RecordPlan>();

  private constructor(
    private readonly runtime: ActorRuntime,
    private readonly policies: StateCache<PolicyState>,
    private readonly users: StateCache<UserRecord | null>,
  ) {}

  static async start(runtime: ActorRuntime): Promise<DecisionService> {
    return new DecisionService(runtime, await runtime.cache(policy), await runtime.cache(user));
  }

  /**
   * Redacts one record for a purpose (spec 4.4): the user comes from the record's
   * resource-context fields; the record is dropped (no values returned) or comes back with
   * every field the decision does not allow emptied. Refused before any work when the type,
   * purpose or mapping group is unknown.
   */
  async redactRecord(request: RedactRequest, record: Record<string, unknown>, caller?: Caller): Promise<RecordRedaction> {
    const current = this.currentPolicy();
    const { compiled, group, plan } = current ? this.planOf(current, request) : await this.redactionPlan(request);
    // Refused before anything is decided (or traced), as the pipeline doors refuse it: a mapped object is kept whole,
    // and thousands of levels under one would fail only when the answer is written, after the decision.
    if (nestsDeeperThan(record, recordLimits.depth))
      throw new HandlerError("REDACT_RECORD_INVALID", `the record nests deeper than ${recordLimits.depth} levels`);
    // A field reached two ways is refused here too, before anything is decided or traced: userIdOf reads the record as the redaction walks it.
    const userId = recordUserId(record, plan);
    if (userId === undefined) {
      countDecision("redact", flowOf(request.type), false, "UNKNOWN_USER");
      const reasons: Reason[] = [{ code: "UNKNOWN_USER", text: "the record has no user id in its resource-context fields" }];
      const summary = noUserSummary(group.name);
      const traceId = randomUUID();
      await this.runtime.events.trace("redact", flowOf(request.type), {
        traceId,
        time: new Date().toISOString(),
        door: "redact",
        nodeId: this.runtime.membership.nodeId,
        userId: null,
        type: request.type,
        purposeId: request.purposeId,
        allowed: false,
        reasons: ["UNKNOWN_USER"],
        summary,
        revision: compiled.revision,
        ...(caller ? { caller } : {}),
      });
      return { dropped: true, traceId, reasons, advice: [advice(summary)], revision: compiled.revision };
    }
    const decision = await this.decide(
      { userId, type: request.type, purposeId: request.purposeId, thirdPartyId: request.thirdPartyId, termsId: request.termsId },
      "redact",
      caller,
    );
    const common = { traceId: decision.traceId, reasons: decision.reasons, revision: decision.revision };
    const outcome = recordOutcome(record as never, plan, decision);
    if (outcome.kind === "invalid") throw new HandlerError("REDACT_RECORD_INVALID", outcome.message);
    if (outcome.kind === "dropped") return { dropped: true, advice: [advice(outcome.summary)], ...common };
    return { dropped: false, record: outcome.record, fields: outcome.fields, advice: [advice(outcome.summary)], ...common };
  }

  /**
   * What redacting for a request needs: the configuration (the current one, or the revision a
   * job was accepted with), the mapping group and its record plan. Refused with REDACT_INVALID
   * when the purpose or the mapping group is unknown, before any work.
   */
  async redactionPlan(request: RedactRequest, revision?: number): Promise<{ compiled: CompiledPolicy; group: MappingGroup; plan: RecordPlan }> {
    const current = this.currentPolicy() ?? (await this.policy());
    if (revision === undefined || revision === current.revision) return this.planOf(current, request);
    const recorded = await this.runtime.client.ref(policyRevision, `default.${revision}`).get();
    if (!recorded) throw new HandlerError("REDACT_INVALID", `configuration revision ${revision} is not recorded`);
    return this.planOf(compiledFor(recorded.config, recorded.revision), request);
  }

  private planOf(compiled: CompiledPolicy, request: RedactRequest): { compiled: CompiledPolicy; group: MappingGroup; plan: RecordPlan } {
    const group = compiled.config.mappingGroups.find((g) => g.name === request.mappingGroup);
    if (!group) throw new HandlerError("REDACT_INVALID", `no mapping group '${request.mappingGroup}'`);
    if (purposeName(compiled, request) === undefined)
      throw new HandlerError(
        "REDACT_INVALID",
        `no ${request.type} purpose '${request.purposeId}'${request.type === "consentedSharing" ? ` with terms '${request.termsId ?? ""}'` : ""}`,
      );
    const planKey = `${compiled.revision}/${group.name}`;
    let plan = this.plans.get(planKey);
    if (!plan) {
      plan = planRecords(compiled, group);
      this.plans.set(planKey, plan);
      if (this.plans.size > 64) this.plans.delete(this.plans.keys().next().value as string);
    }
    return { compiled, group, plan };
  }

  /** The current configuration from this node's cache, without I/O (undefined when not cached). */
  currentPolicy(): CompiledPolicy | undefined {
    const cached = this.policies.peek("default");
    return cached && compiledFor(cached.state.config, cached.state.revision);
  }

  /** The current configuration (read through to JetStream when not cached). */
  async policy(): Promise<CompiledPolicy> {
    const { state } = await this.policies.get("default");
    return compiledFor(state.config, state.revision);
  }

  /** Calls `listener` whenever this node learns of a new configuration revision; returns the unsubscribe. */
  onPolicyChange(listener: () => void): () => void {
    const changed = (): void => listener();
    this.policies.on("change", changed);
    return () => this.policies.off("change", changed);
  }

  /** Calls `listener` with the id of every user whose state changes; returns the unsubscribe. */
  onUserChange(listener: (userId: string) => void): () => void {
    this.users.on("change", listener);
    return () => this.users.off("change", listener);
  }

  /** Calls `listener` when this node may have missed user changes (its watch of user states was lost and started again); returns the unsubscribe. */
  onUsersReset(listener: () => void): () => void {
    this.users.on("reset", listener);
    return () => this.users.off("reset", listener);
  }

  /** A user's committed state, from this node's cache (null: no such user). */
  async userState(userId: string): Promise<UserRecord | null> {
    return (await this.users.get(userId)).state;
  }

  /** After a write through this node, its next decisions read the user's committed state afresh. */
  forgetUser(userId: string): void {
    this.users.forget(userId);
    // Listeners (export verdicts, pushdown tables) hear of this node's own write now, not when the watch delivers it.
    this.users.emit("change", userId, -1);
  }

  async decide(query: DecisionQuery, door: string, caller?: Caller): Promise<DecisionAnswer> {
    // From memory without awaiting when cached (the warm path): each await is a turn of the microtask queue per request.
    const compiled = this.currentPolicy() ?? (await this.policy());
    const group = query.mappingGroup === undefined ? undefined : compiled.config.mappingGroups.find((g) => g.name === query.mappingGroup);
    if (query.mappingGroup !== undefined && !group) throw new HandlerError("NOT_FOUND", `no mapping group '${query.mappingGroup}'`);
    const cachedUser = this.users.peek(query.userId);
    const stored = cachedUser ? cachedUser.state : await this.userState(query.userId);
    const now = new Date();
    const decision = decide(
      compiled,
      stored ?? undefined,
      { type: query.type, purposeId: query.purposeId, thirdPartyId: query.thirdPartyId, termsId: query.termsId },
      now,
      // The caller's assertions are an input of the decision (spec 5.1); the trace records them with the caller.
      { assertions: caller?.assertions ?? [] },
    );
    const traceId = randomUUID();
    const summary = decision.summary;
    const answer: DecisionAnswer = {
      allowed: decision.allowed,
      flow: decision.flow,
      categoryIds: decision.categoryIds,
      reasons: decision.reasons,
      summary,
      revision: decision.revision,
      traceId,
      userId: query.userId,
      decidedAt: now.toISOString(),
      ...(group ? { fields: allowedFields(group, decision, (fieldId) => compiled.fieldCategory.get(fieldId)) } : {}),
    };
    // Rule 8: the answer leaves only once its trace record is stored (TRACE_UNAVAILABLE otherwise).
    await this.runtime.events.trace(
      door,
      decision.flow,
      decisionTrace(
        { traceId, time: answer.decidedAt, door, nodeId: this.runtime.membership.nodeId, userId: query.userId },
        query,
        decision,
        caller && { caller },
      ),
    );
    return answer;
  }
}

/**
 * The trace record of one decision (spec 6): who, for what, the outcome and why; never record
 * values. `extra` (the caller, the job, the export) is added last. Built field by field, not by
 * spreading: it is made for every decision. Every traced decision is made once, so it is counted here.
 */
export function decisionTrace(
  at: { traceId: string; time: string; door: string; nodeId: string; userId: string },
  request: DecisionRequest,
  decision: Decision,
  extra?: Record<string, unknown>,
): Record<string, unknown> {
  countedDecision(at.door, decision);
  const record: Record<string, unknown> = {
    traceId: at.traceId,
    time: at.time,
    door: at.door,
    nodeId: at.nodeId,
    userId: at.userId,
    type: request.type,
    purposeId: request.purposeId,
  };
  if (request.thirdPartyId) record.thirdPartyId = request.thirdPartyId;
  if (request.termsId) record.termsId = request.termsId;
  record.flow = decision.flow;
  record.allowed = decision.allowed;
  record.categoryIds = decision.categoryIds;
  const reasons = decision.reasons;
  record.reasons = reasons.length === 1 ? [reasons[0]!.code] : reasons.map((r) => r.code);
  record.summary = decision.summary;
  record.revision = decision.revision;
  if (extra) Object.assign(record, extra);
  return record;
}
