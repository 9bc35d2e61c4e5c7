import { createHash } from "node:crypto";
import type { Category } from "../policy/model";
import { termsKey, type CompiledPolicy } from "./compiled-policy";
import { excludingOverride, overrideMatches, type OverrideMatch } from "./overrides";
import { own, type Grants } from "./types";

/** A category as shown in terms: names and texts, with its fields. */
export interface TermsCategory {
  stableId: string;
  name: string;
  summary?: string;
  fullDetails?: string;
  fields: Array<{ stableId: string; name: string; summary?: string }>;
}

/**
 * The personalized terms for a context (spec 4.5): the same format for every context, readable
 * by people (names, summaries, full details, categories with their fields, third parties) and
 * identified by `hash`, the SHA-256 of their content. `grants` is what accepting them grants.
 */
export interface PersonalizedTerms {
  hash: string;
  revision: number;
  platformUse: Array<{ stableId: string; name: string; summary?: string; fullDetails?: string; optIn: boolean; categories: TermsCategory[] }>;
  platformSharing: Array<{
    stableId: string;
    name: string;
    summary?: string;
    fullDetails?: string;
    platformUsePurposeId?: string;
    categories: TermsCategory[];
    thirdParties: Array<{ stableId: string; name: string; summary?: string; serviceProvider: boolean; categoryIds: string[] }>;
  }>;
  /** The contract the user is onboarded under, with the categories the contract party may access. */
  contract: {
    purposeId: string;
    purposeName: string;
    termsId: string;
    termsName: string;
    summary?: string;
    fullDetails?: string;
    categories: TermsCategory[];
    platformUsePurposeIds: string[];
    platformSharingPurposeIds: string[];
  } | null;
  consentedSharing: Array<{
    stableId: string;
    name: string;
    summary?: string;
    terms: Array<{ stableId: string; name: string; summary?: string; categories: TermsCategory[] }>;
  }>;
  /** Purposes left out for this context, and why (overrides, contract). */
  omitted: Array<{ purposeId: string; reason: string }>;
  grants: Grants;
}

export interface TermsContext {
  attributes?: Record<string, string>;
  contractualRelationship?: { purposeId: string; termsId: string };
}

function describe<T extends { summary?: string; fullDetails?: string }>(item: T): Pick<T, "summary" | "fullDetails"> {
  return { ...(item.summary === undefined ? {} : { summary: item.summary }), ...(item.fullDetails === undefined ? {} : { fullDetails: item.fullDetails }) };
}

function categoryDetails(policy: CompiledPolicy, ids: readonly string[]): TermsCategory[] {
  return ids.flatMap((id) => {
    const category: Category | undefined = policy.categories.get(id);
    if (!category) return [];
    return [
      {
        stableId: id,
        name: category.name,
        ...describe(category),
        fields: category.fields.map((f) => ({ stableId: f.stableId, name: f.name, ...(f.summary === undefined ? {} : { summary: f.summary }) })),
      },
    ];
  });
}

function overrideReason(match: OverrideMatch): string {
  return match.missingProperty
    ? `override '${match.override.name}' applies because ${match.missingProperty} is unknown`
    : `override '${match.override.name}' applies`;
}

/**
 * Terms for a context. With no context at all (`{}`), the terms that apply to all users by
 * default: no override is applied. With a context, every override whose property is missing
 * applies (fail closed), so the terms never grant what decisions would refuse.
 */
export function personalizedTerms(policy: CompiledPolicy, context: TermsContext, now: Date): PersonalizedTerms {
  const defaultContext = context.attributes === undefined && context.contractualRelationship === undefined;
  const attributes = context.attributes ?? {};
  const matches = (overrides: typeof policy.useOverrides) => (defaultContext ? [] : overrides.flatMap((o) => overrideMatches(o, attributes, now) ?? []));
  const useMatches = matches(policy.useOverrides);
  const sharingMatches = matches(policy.sharingDecidedUnder);
  const relation = context.contractualRelationship;
  const contract = relation ? policy.contracts.get(termsKey(relation.purposeId, relation.termsId)) : undefined;
  const omitted: PersonalizedTerms["omitted"] = [];
  const grants: Grants = { platformUse: {}, platformSharing: {} };

  const platformUse = policy.config.platformUse.purposes.flatMap((purpose) => {
    const excluded = excludingOverride(useMatches, purpose.stableId);
    if (excluded) return omitted.push({ purposeId: purpose.stableId, reason: overrideReason(excluded) }), [];
    if (contract && !contract.terms.platformUsePurposeIds.includes(purpose.stableId))
      return omitted.push({ purposeId: purpose.stableId, reason: `not allowed by contract terms '${contract.terms.stableId}'` }), [];
    grants.platformUse[purpose.stableId] = { categoryIds: [...purpose.categoryIds], optIn: purpose.optIn === true };
    return [
      {
        stableId: purpose.stableId,
        name: purpose.name,
        ...describe(purpose),
        optIn: purpose.optIn === true,
        categories: categoryDetails(policy, purpose.categoryIds),
      },
    ];
  });

  const platformSharing = policy.config.platformSharing.purposes.flatMap((purpose) => {
    const excluded = excludingOverride(sharingMatches, purpose.stableId);
    if (excluded) return omitted.push({ purposeId: purpose.stableId, reason: overrideReason(excluded) }), [];
    if (contract && !contract.terms.platformSharingPurposeIds.includes(purpose.stableId))
      return omitted.push({ purposeId: purpose.stableId, reason: `not allowed by contract terms '${contract.terms.stableId}'` }), [];
    grants.platformSharing[purpose.stableId] = {
      categoryIds: [...purpose.categoryCeilingIds],
      thirdParties: Object.fromEntries(purpose.thirdParties.map((t) => [t.stableId, t.categoryIds ?? [...purpose.categoryCeilingIds]])),
      ...(purpose.platformUsePurposeId === undefined ? {} : { platformUsePurposeId: purpose.platformUsePurposeId }),
    };
    return [
      {
        stableId: purpose.stableId,
        name: purpose.name,
        ...describe(purpose),
        ...(purpose.platformUsePurposeId === undefined ? {} : { platformUsePurposeId: purpose.platformUsePurposeId }),
        categories: categoryDetails(policy, purpose.categoryCeilingIds),
        thirdParties: purpose.thirdParties.map((t) => ({
          stableId: t.stableId,
          name: t.name,
          ...(t.summary === undefined ? {} : { summary: t.summary }),
          serviceProvider: t.serviceProvider,
          categoryIds: t.categoryIds ?? [...purpose.categoryCeilingIds],
        })),
      },
    ];
  });

  const terms: Omit<PersonalizedTerms, "hash"> = {
    revision: policy.revision,
    platformUse,
    platformSharing,
    contract: contract
      ? {
          purposeId: contract.purpose.stableId,
          purposeName: contract.purpose.name,
          termsId: contract.terms.stableId,
          termsName: contract.terms.name,
          ...describe(contract.terms),
          categories: categoryDetails(policy, contract.terms.contractAccessCategoryIds),
          platformUsePurposeIds: [...contract.terms.platformUsePurposeIds],
          platformSharingPurposeIds: [...contract.terms.platformSharingPurposeIds],
        }
      : null,
    consentedSharing: policy.config.consentedSharing.purposes.map((p) => ({
      stableId: p.stableId,
      name: p.name,
      ...(p.summary === undefined ? {} : { summary: p.summary }),
      terms: p.terms.map((t) => ({
        stableId: t.stableId,
        name: t.name,
        ...(t.summary === undefined ? {} : { summary: t.summary }),
        categories: categoryDetails(policy, t.requestedCategoryIds),
      })),
    })),
    omitted,
    grants,
  };
  // The revision is left out of the hash: a revision that changes nothing a user sees keeps the same terms version.
  const { revision: _revision, ...content } = terms;
  return { hash: createHash("sha256").update(JSON.stringify(content)).digest("hex"), ...terms };
}

const widens = (current: readonly string[], before: readonly string[]) => current.some((id) => !before.includes(id));

/**
 * True exactly when `current` grants what `accepted` did not: a purpose, a category, a third
 * party or a category for a third party, or a purpose that was opt-in and is now core.
 */
export function grantsExceed(current: Grants, accepted: Grants): boolean {
  for (const [purposeId, grant] of Object.entries(current.platformUse)) {
    const before = own(accepted.platformUse, purposeId);
    if (!before || widens(grant.categoryIds, before.categoryIds) || (before.optIn && !grant.optIn)) return true;
  }
  for (const [purposeId, grant] of Object.entries(current.platformSharing)) {
    const before = own(accepted.platformSharing, purposeId);
    if (!before || widens(grant.categoryIds, before.categoryIds)) return true;
    // A link removed or moved lifts (or changes) the limit the accepted sharing had: the user accepts again.
    if (before.platformUsePurposeId !== undefined && grant.platformUsePurposeId !== before.platformUsePurposeId) return true;
    for (const [thirdPartyId, categories] of Object.entries(grant.thirdParties)) {
      const beforeParty = own(before.thirdParties, thirdPartyId);
      if (!beforeParty || widens(categories, beforeParty)) return true;
    }
  }
  return false;
}
