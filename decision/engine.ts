import { termsKey, type CompiledPolicy } from "./compiled-policy";
import { isChild } from "./children";
import { excludingOverride, overrideMatches, type OverrideMatch } from "./overrides";
import { own, type Decision, type DecisionCaller, type DecisionRequest, type Flow, type Reason, type ReasonCode, type UserPolicyState } from "./types";

const reason = (code: ReasonCode, text: string): Reason => ({ code, text });

/**
 * A decision whose summary sentence is written only when read (hot paths rarely read it);
 * JSON serialization includes it.
 */
class EngineDecision implements Decision {
  constructor(
    readonly allowed: boolean,
    readonly flow: Flow,
    readonly categoryIds: string[],
    readonly reasons: Reason[],
    readonly revision: number,
    private readonly purposeName: string,
  ) {}

  get summary(): string {
    const main = this.reasons[this.reasons.length - 1];
    return this.allowed
      ? `Kept for ${this.purposeName}: ${this.categoryIds.join(", ")} may be used (${main.text}).`
      : `Dropped for ${this.purposeName}: ${main.text}.`;
  }

  toJSON(): Decision {
    return { allowed: this.allowed, flow: this.flow, categoryIds: this.categoryIds, reasons: this.reasons, summary: this.summary, revision: this.revision };
  }
}

interface UserContext {
  policy: CompiledPolicy;
  day: number;
  useMatches: OverrideMatch[];
  sharingMatches: OverrideMatch[];
  /** A child under the policy's guardian rights (policy-semantics 5). */
  child: boolean;
}

/** Override matches depend only on the user's attributes, the configuration and the day: kept per user state object. */
const contexts = new WeakMap<UserPolicyState, UserContext>();

function userContext(policy: CompiledPolicy, user: UserPolicyState, now: Date): UserContext {
  const day = Math.floor(now.getTime() / 86_400_000);
  let context = contexts.get(user);
  if (!context || context.policy !== policy || context.day !== day) {
    context = {
      policy,
      day,
      useMatches: policy.useOverrides.flatMap((o) => overrideMatches(o, user.attributes, now) ?? []),
      sharingMatches: policy.sharingDecidedUnder.flatMap((o) => overrideMatches(o, user.attributes, now) ?? []),
      child: isChild(policy, user, now),
    };
    contexts.set(user, context);
  }
  return context;
}

/**
 * An opt-in or consent as it counts: a child's needs a guardian as grantor (policy-semantics 5, as the acceptance does);
 * one the user gave themself, before they were a child under the policy, counts for nothing.
 */
function countedForChild<T extends { grantorId?: string }>(entry: T | undefined, child: boolean, reasons: Reason[]): T | undefined {
  if (!entry || !child || entry.grantorId !== undefined) return entry;
  reasons.push(reason("CHILD_CONSENTED_WITHOUT_GUARDIAN", "the user is a child and gave this opt-in or consent themself: only a guardian's counts"));
  return undefined;
}

/** The configured name of the purpose a request asks about; undefined when no such purpose is configured. */
export function purposeName(policy: CompiledPolicy, request: DecisionRequest): string | undefined {
  switch (request.type) {
    case "platformUse":
      return policy.platformUse.get(request.purposeId)?.name;
    case "platformSharing":
      return policy.sharing.get(request.purposeId)?.purpose.name;
    case "contractualExchange":
      return policy.contractualPurposes.get(request.purposeId)?.name;
    case "consentedSharing":
      return request.termsId === undefined
        ? undefined
        : policy.consentTerms.has(termsKey(request.purposeId, request.termsId))
          ? (policy.config.consentedSharing.purposes.find((p) => p.stableId === request.purposeId)?.name ?? request.purposeId)
          : undefined;
  }
}

/** The flow a request governs before anything is known of the user (a third-party user's platform flows become contractual). */
export function flowOf(type: DecisionRequest["type"]): Flow {
  return type === "consentedSharing" ? "consent" : type === "contractualExchange" ? "contractual" : "platform";
}

const intersect = (values: readonly string[], allowed: readonly string[]) => values.filter((v) => allowed.includes(v));

/**
 * The one decision behind every door (policy-semantics.md): pure, no I/O. Given a compiled
 * configuration revision, the user's state (undefined: unknown user), what is asked and when,
 * it says whether the user's data may be used, which categories, and why. Every doubt denies.
 */
export function decide(policy: CompiledPolicy, user: UserPolicyState | undefined, request: DecisionRequest, now: Date, caller?: DecisionCaller): Decision {
  const name = purposeName(policy, request) ?? request.purposeId;
  const reasons: Reason[] = [];
  const finish = (flow: Flow, allowed: boolean, categoryIds: string[]): Decision =>
    new EngineDecision(allowed, flow, allowed ? categoryIds : [], reasons, policy.revision, name);
  const deny = (flow: Flow, code: ReasonCode, text: string) => {
    reasons.push(reason(code, text));
    return finish(flow, false, []);
  };
  const allow = (flow: Flow, categoryIds: string[], code: ReasonCode, text: string) => {
    if (categoryIds.length === 0) return deny(flow, "NO_CATEGORIES", "no category remains usable");
    reasons.push(reason(code, text));
    return finish(flow, true, categoryIds);
  };
  const overridden = (flow: Flow, match: OverrideMatch) => {
    if (match.missingProperty)
      reasons.push(reason("OVERRIDE_PROPERTY_MISSING", `the user has no ${match.missingProperty}, so override '${match.override.name}' applies`));
    return deny(flow, "OVERRIDDEN", `override '${match.override.name}' does not allow this purpose for this user`);
  };

  const requestFlow = flowOf(request.type);
  if (purposeName(policy, request) === undefined)
    return deny(
      requestFlow,
      "UNKNOWN_PURPOSE",
      `no ${request.type} purpose '${request.purposeId}'${request.type === "consentedSharing" ? ` with terms '${request.termsId ?? ""}'` : ""} is configured`,
    );
  if (!user) return deny(requestFlow, "UNKNOWN_USER", "the user is unknown");
  // Overrides and age, looked up once per decision (kept per user state and day).
  const context = userContext(policy, user, now);

  // A child's acceptance counts only when a guardian gave it (policy-semantics 5): one the user gave before they were a
  // child under the policy (guardian rights configured later, the threshold raised) is no acceptance.
  const ownAcceptanceOfAChild = user.acceptance !== undefined && user.acceptance.acceptorId === undefined && policy.guardian !== null && context.child;
  if (ownAcceptanceOfAChild)
    reasons.push(reason("CHILD_ACCEPTED_WITHOUT_GUARDIAN", "the user is a child and accepted the terms themself: only a guardian's acceptance counts"));
  const accepted = ownAcceptanceOfAChild ? undefined : user.acceptance;

  const relation = user.contractualRelationship;
  const contract = relation ? policy.contracts.get(termsKey(relation.purposeId, relation.termsId)) : undefined;
  const thirdPartyUser = relation !== undefined && !accepted;
  if (relation && !contract && request.type !== "consentedSharing") {
    return deny(
      thirdPartyUser ? "contractual" : requestFlow,
      "CONTRACT_UNKNOWN",
      `the user's contract terms '${relation.purposeId}/${relation.termsId}' are not configured`,
    );
  }

  if (request.type === "consentedSharing") {
    if (!accepted && !thirdPartyUser) return deny("consent", "NO_TERMS_ACCEPTED", "the user has accepted no terms and has no contract");
    const terms = policy.consentTerms.get(termsKey(request.purposeId, request.termsId!))!;
    const consent = countedForChild(own(user.consents, termsKey(request.purposeId, request.termsId!)), context.child, reasons);
    if (!consent) return deny("consent", "NO_CONSENT", "the user has not consented to these terms");
    return allow("consent", intersect(terms.requestedCategoryIds, consent.categoryIds), "ALLOWED_BY_CONSENT", "the user consented");
  }

  const { useMatches, sharingMatches } = context;

  if (request.type === "contractualExchange") {
    if (!relation || !contract) return deny("contractual", "NO_CONTRACT", "the user has no contract");
    if (relation.purposeId !== request.purposeId || (request.termsId !== undefined && request.termsId !== relation.termsId)) {
      return deny("contractual", "NO_CONTRACT", `the user's contract is '${relation.purposeId}/${relation.termsId}'`);
    }
    const excluded = excludingOverride(useMatches, request.purposeId);
    if (excluded) return overridden("contractual", excluded);
    return allow("contractual", [...contract.terms.contractAccessCategoryIds], "ALLOWED_BY_CONTRACT", `contract terms '${relation.termsId}' allow it`);
  }

  /** Opt-in: needed while the purpose is opt-in, or was when the user accepted; narrows to the opted-in categories. */
  const optedInCategories = (
    purpose: { stableId: string; name: string; optIn?: boolean },
    acceptedAsOptIn: boolean,
    categories: string[],
  ): string[] | undefined => {
    if (!purpose.optIn && !acceptedAsOptIn) return categories;
    const optIn = countedForChild(own(user.optIns, purpose.stableId), context.child, reasons);
    if (!optIn) return undefined;
    if (!optIn.categoryIds) return categories;
    reasons.push(reason("NARROWED_BY_OPT_IN", "limited to the categories the user opted in with"));
    return intersect(categories, optIn.categoryIds);
  };

  if (request.type === "platformUse") {
    const purpose = policy.platformUse.get(request.purposeId)!;
    const flow: Flow = thirdPartyUser ? "contractual" : "platform";
    const excluded = excludingOverride(useMatches, purpose.stableId);
    if (excluded) return overridden(flow, excluded);
    if (contract && !contract.terms.platformUsePurposeIds.includes(purpose.stableId)) {
      return deny(flow, "CONTRACT_EXCLUDES", `contract terms '${contract.terms.stableId}' do not allow this purpose`);
    }
    if (thirdPartyUser) {
      const limited = intersect(purpose.categoryIds, contract!.terms.contractAccessCategoryIds);
      if (limited.length < purpose.categoryIds.length) reasons.push(reason("NARROWED_BY_CONTRACT", "limited to the categories the contract gives access to"));
      const categories = optedInCategories(purpose, false, limited);
      if (!categories) return deny(flow, "NOT_OPTED_IN", "the user has not opted in to this purpose");
      return allow("contractual", categories, "ALLOWED_BY_CONTRACT", `contract terms '${contract!.terms.stableId}' allow it`);
    }
    if (!accepted) return deny(flow, "NO_TERMS_ACCEPTED", "the user has accepted no terms and has no contract");
    const grant = own(accepted.grants.platformUse, purpose.stableId);
    if (!grant) return deny(flow, "NOT_IN_ACCEPTED_TERMS", "the purpose was not in the terms the user accepted");
    const acceptedCategories = intersect(purpose.categoryIds, grant.categoryIds);
    if (acceptedCategories.length < purpose.categoryIds.length)
      reasons.push(reason("NARROWED_BY_ACCEPTANCE", "categories added after the user accepted need the user to accept again"));
    const categories = optedInCategories(purpose, grant.optIn, acceptedCategories);
    if (!categories) return deny(flow, "NOT_OPTED_IN", "the user has not opted in to this purpose");
    return allow(flow, categories, "ALLOWED_BY_TERMS", "the user accepted terms that include it");
  }

  // platformSharing
  const sharing = policy.sharing.get(request.purposeId)!;
  const purpose = sharing.purpose;
  const flow: Flow = thirdPartyUser ? "contractual" : "platform";
  const thirdParty = request.thirdPartyId === undefined ? undefined : sharing.thirdParties.get(request.thirdPartyId);
  if (request.thirdPartyId !== undefined && !thirdParty)
    return deny(flow, "UNKNOWN_THIRD_PARTY", `'${request.thirdPartyId}' is not a third party of this purpose`);
  // A purpose that names caller assertions is shared only when the one asking holds one of them; no caller (an export's verdicts) holds none.
  if (purpose.callerAssertions && !purpose.callerAssertions.some((needed) => caller?.assertions.includes(needed)))
    return deny(flow, "CALLER_ASSERTION_MISSING", `sharing for this purpose needs a caller with one of: ${purpose.callerAssertions.join(", ")}`);
  const excluded = excludingOverride(sharingMatches, purpose.stableId);
  if (excluded) return overridden(flow, excluded);
  const disabled = user.disabledFlows.filter((f) => f.purposeId === purpose.stableId);
  if (thirdParty ? disabled.some((f) => f.thirdPartyId === thirdParty.stableId) : disabled.length > 0) {
    return deny(
      flow,
      "GUARDIAN_DISABLED",
      thirdParty ? `a guardian turned off sharing with ${thirdParty.name}` : "a guardian turned off some flows of this purpose; name the third party",
    );
  }
  // No third party named: any of the purpose's parties may be the one that receives, so only what every one of them may
  // receive, and only if the user accepted every one (a party added since acceptance is not usable until they accept again).
  const receivers = thirdParty ? [thirdParty] : [...sharing.thirdParties.values()];
  let categories = [...purpose.categoryCeilingIds];
  for (const party of receivers) {
    if (!party.categoryIds) continue;
    const narrowed = intersect(categories, party.categoryIds);
    if (narrowed.length < categories.length)
      reasons.push(
        reason(
          "NARROWED_BY_THIRD_PARTY",
          `${party.name} receives a narrower set of categories${thirdParty ? "" : " (no third party named: every party's limits apply)"}`,
        ),
      );
    categories = narrowed;
  }
  if (contract && !contract.terms.platformSharingPurposeIds.includes(purpose.stableId)) {
    return deny(flow, "CONTRACT_EXCLUDES", `contract terms '${contract.terms.stableId}' do not allow this purpose`);
  }
  if (thirdPartyUser) {
    const limited = intersect(categories, contract!.terms.contractAccessCategoryIds);
    if (limited.length < categories.length) reasons.push(reason("NARROWED_BY_CONTRACT", "limited to the categories the contract gives access to"));
    categories = limited;
  } else {
    if (!accepted) return deny(flow, "NO_TERMS_ACCEPTED", "the user has accepted no terms and has no contract");
    const grant = own(accepted.grants.platformSharing, purpose.stableId);
    if (!grant) return deny(flow, "NOT_IN_ACCEPTED_TERMS", "the purpose was not in the terms the user accepted");
    let acceptedCategories = intersect(categories, grant.categoryIds);
    for (const party of receivers) {
      const acceptedForParty = own(grant.thirdParties, party.stableId);
      if (!acceptedForParty)
        return deny(
          flow,
          "NOT_IN_ACCEPTED_TERMS",
          `${party.name} was not in the terms the user accepted${thirdParty ? "" : " (no third party named: any of the purpose's parties could receive)"}`,
        );
      acceptedCategories = intersect(acceptedCategories, acceptedForParty);
    }
    if (acceptedCategories.length < categories.length)
      reasons.push(reason("NARROWED_BY_ACCEPTANCE", "categories added after the user accepted need the user to accept again"));
    categories = acceptedCategories;
  }
  // Sharing never exceeds what its linked platform use purpose allows this user (spec 2.5); a link the user accepted under
  // still limits it when the configuration removed or moved it since, until the user accepts again (narrowing is at once, widening is not).
  const acceptedLink = thirdPartyUser || !accepted ? undefined : own(accepted.grants.platformSharing, purpose.stableId)?.platformUsePurposeId;
  for (const link of new Set([purpose.platformUsePurposeId, acceptedLink])) {
    if (link === undefined) continue;
    if (!policy.platformUse.has(link)) return deny(flow, "LINKED_PURPOSE_DENIED", `sharing depends on '${link}', which is no longer configured`);
    const linked = decide(policy, user, { type: "platformUse", purposeId: link }, now);
    if (!linked.allowed) {
      return deny(flow, "LINKED_PURPOSE_DENIED", `sharing depends on '${link}', which is not allowed for this user (${linked.reasons.at(-1)!.text})`);
    }
    categories = intersect(categories, linked.categoryIds);
  }
  return thirdPartyUser
    ? allow("contractual", categories, "ALLOWED_BY_CONTRACT", `contract terms '${contract!.terms.stableId}' allow it`)
    : allow(flow, categories, "ALLOWED_BY_TERMS", "the user accepted terms that include it");
}
