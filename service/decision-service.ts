import { randomUUID } from "node:crypto";
import { compiledFor } from "../actors/decision/compile-cache";
import { decide } from "../actors/decision/engine";
import type { Decision } from "../actors/decision/types";
import type { MappingGroup } from "../actors/policy/model";
import { policy, type PolicyState } from "../actors/policy/policy-actor";
import type { ActorRuntime } from "../actors/runtime/runtime";
import type { StateCache } from "../actors/runtime/state-cache";
import { HandlerError } from "../actors/runtime/errors";
import { user, type UserRecord } from "../actors/user/user-actor";
import type { DecisionAnswer, DecisionPort, DecisionQuery } from "../gateway/types";

/** Which record fields of a mapping group a decision lets through (policy-semantics 4). */
export function allowedFields(group: MappingGroup, decision: Decision, fieldCategory: (fieldId: string) => string | undefined): Record<string, boolean> {
  const fields: Record<string, boolean> = {};
  for (const mapping of group.fieldMappings) {
    const category = mapping.categoryId ?? (mapping.fieldId === undefined ? undefined : fieldCategory(mapping.fieldId));
    fields[mapping.recordField] = decision.allowed && category !== undefined && decision.categoryIds.includes(category);
  }
  return fields;
}

/**
 * The decision door near the caller: compiled policy and user state come from caches kept
 * current by JetStream watches, so a warm door makes no network call per decision. Every
 * decision is written to the trace (`warden.trace.<door>.<flow>`), without record values.
 */
export class DecisionService implements DecisionPort {
  private constructor(
    private readonly runtime: ActorRuntime,
    private readonly policies: StateCache<PolicyState>,
    private readonly users: StateCache<UserRecord | null>,
  ) {}

  static async start(runtime: ActorRuntime): Promise<DecisionService> {
    return new DecisionService(runtime, await runtime.cache(policy), await runtime.cache(user));
  }

  async decide(query: DecisionQuery, door: string): Promise<DecisionAnswer> {
    const { state: policyState } = await this.policies.get("default");
    const compiled = compiledFor(policyState.config, policyState.revision);
    const group = query.mappingGroup === undefined ? undefined : compiled.config.mappingGroups.find((g) => g.name === query.mappingGroup);
    if (query.mappingGroup !== undefined && !group) throw new HandlerError("NOT_FOUND", `no mapping group '${query.mappingGroup}'`);
    const { state: stored } = await this.users.get(query.userId);
    const now = new Date();
    const decision = decide(compiled, stored ?? undefined, { type: query.type, purposeId: query.purposeId, thirdPartyId: query.thirdPartyId, termsId: query.termsId }, now);
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
    this.runtime.events.trace(door, decision.flow, {
      traceId,
      time: answer.decidedAt,
      door,
      nodeId: this.runtime.membership.nodeId,
      userId: query.userId,
      type: query.type,
      purposeId: query.purposeId,
      ...(query.thirdPartyId ? { thirdPartyId: query.thirdPartyId } : {}),
      ...(query.termsId ? { termsId: query.termsId } : {}),
      flow: decision.flow,
      allowed: decision.allowed,
      categoryIds: decision.categoryIds,
      reasons: decision.reasons.map((r) => r.code),
      summary,
      revision: decision.revision,
    });
    return answer;
  }
}
