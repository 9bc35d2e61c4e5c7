/** Types of the decision engine: pure data shared by every door (API, redaction, exports). */

export type PurposeType = "platformUse" | "platformSharing" | "contractualExchange" | "consentedSharing";
export const purposeTypes: readonly PurposeType[] = ["platformUse", "platformSharing", "contractualExchange", "consentedSharing"];

/** Which kind of flow a decision governed (spec 6: contractual and consent flows are told apart in the trace). */
export type Flow = "platform" | "contractual" | "consent";

/**
 * What was granted: each platform use purpose with its categories and whether it was opt-in;
 * each sharing purpose with its ceiling and every third party with the categories it receives.
 * Anything a later configuration grants beyond this needs the user to accept again.
 */
export interface Grants {
  platformUse: Record<string, { categoryIds: string[]; optIn: boolean }>;
  /** `platformUsePurposeId`: the platform use purpose the sharing was linked to when accepted (absent: none, or accepted before links were recorded). */
  platformSharing: Record<string, { categoryIds: string[]; thirdParties: Record<string, string[]>; platformUsePurposeId?: string }>;
}

/** A record's own entry: ids never reach an object's prototype (`constructor`, `toString`...). */
export function own<T>(record: Record<string, T>, key: string): T | undefined {
  return Object.hasOwn(record, key) ? record[key] : undefined;
}

/** The user state decisions read; kept by the user actor (issue 4) and cached near each door. */
export interface UserPolicyState {
  userId: string;
  attributes: Record<string, string>;
  contractualRelationship?: { purposeId: string; termsId: string };
  /** What the user (or a guardian for a child) accepted: the grants of the personalized terms then. */
  acceptance?: { termsHash: string; grants: Grants; acceptedAt: string; acceptorId?: string };
  /**
   * Opt-in platform use purposes the user opted into, each optionally narrowed to some categories; `grantorId` is the
   * guardian who gave it for a child (absent: the user themself).
   */
  optIns: Record<string, { categoryIds?: string[]; grantorId?: string }>;
  /** Consented sharing, by `<purposeId>/<termsId>`: the categories granted, and the guardian who granted them (absent: the user). */
  consents: Record<string, { categoryIds: string[]; grantorId?: string }>;
  /** Sharing flows a guardian turned off for this (child) user. */
  disabledFlows: Array<{ purposeId: string; thirdPartyId: string }>;
}

/** Who asks for a decision, as the decision sees it: the assertions of the verified caller (none when not authenticated). */
export interface DecisionCaller {
  assertions: readonly string[];
}

export interface DecisionRequest {
  type: PurposeType;
  purposeId: string;
  /** platformSharing: the receiving third party, when known. */
  thirdPartyId?: string;
  /** consentedSharing: the terms entry consented to. */
  termsId?: string;
}

export type ReasonCode =
  | "UNKNOWN_PURPOSE"
  | "UNKNOWN_THIRD_PARTY"
  | "UNKNOWN_USER"
  | "NO_TERMS_ACCEPTED"
  | "CHILD_ACCEPTED_WITHOUT_GUARDIAN"
  | "CHILD_CONSENTED_WITHOUT_GUARDIAN"
  | "NOT_IN_ACCEPTED_TERMS"
  | "NOT_OPTED_IN"
  | "OVERRIDDEN"
  | "OVERRIDE_PROPERTY_MISSING"
  | "CONTRACT_UNKNOWN"
  | "CONTRACT_EXCLUDES"
  | "NO_CONTRACT"
  | "NO_CONSENT"
  | "GUARDIAN_DISABLED"
  | "LINKED_PURPOSE_DENIED"
  | "NO_CATEGORIES"
  | "CALLER_ASSERTION_MISSING"
  | "ALLOWED_BY_TERMS"
  | "ALLOWED_BY_CONTRACT"
  | "ALLOWED_BY_CONSENT"
  | "NARROWED_BY_ACCEPTANCE"
  | "NARROWED_BY_CONTRACT"
  | "NARROWED_BY_OPT_IN"
  | "NARROWED_BY_THIRD_PARTY";

export interface Reason {
  code: ReasonCode;
  /** One human sentence. */
  text: string;
}

export interface Decision {
  allowed: boolean;
  flow: Flow;
  /** Categories whose fields may be used (empty when not allowed). */
  categoryIds: string[];
  reasons: Reason[];
  /** The `urn:service:attribute:message:summary` advice: one sentence saying what and why. */
  summary: string;
  /** The configuration revision the decision used. */
  revision: number;
}
