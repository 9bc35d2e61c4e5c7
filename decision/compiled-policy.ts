import type {
  Category,
  ConsentTerms,
  ContractTerms,
  ContractualPurpose,
  GuardianRights,
  Override,
  PlatformSharingPurpose,
  PlatformUsePurpose,
  PolicyConfig,
  ThirdParty,
} from "../policy/model";

/** A configuration revision indexed for decisions: built once per revision, read by every decision. */
export interface CompiledPolicy {
  revision: number;
  config: PolicyConfig;
  categories: Map<string, Category>;
  /** field stableId -> its category's stableId */
  fieldCategory: Map<string, string>;
  platformUse: Map<string, PlatformUsePurpose>;
  sharing: Map<string, { purpose: PlatformSharingPurpose; thirdParties: Map<string, ThirdParty> }>;
  contractualPurposes: Map<string, ContractualPurpose>;
  /** key `<purposeId>/<termsId>` */
  contracts: Map<string, { purpose: ContractualPurpose; terms: ContractTerms }>;
  /** key `<purposeId>/<termsId>` */
  consentTerms: Map<string, ConsentTerms>;
  useOverrides: Override[];
  sharingOverrides: Override[];
  /**
   * The overrides a sharing purpose is decided under: the sharing overrides and the platform-use
   * ones, whose allowedPurposeIds drop every other purpose from the allowed set, sharing purposes
   * too (spec 2.4, policy-semantics 3). A sharing purpose stays allowed under a platform-use
   * override only when the override lists it.
   */
  sharingDecidedUnder: Override[];
  guardian: GuardianRights | null;
}

export const termsKey = (purposeId: string, termsId: string) => `${purposeId}/${termsId}`;

export function compilePolicy(config: PolicyConfig, revision: number): CompiledPolicy {
  const contracts = new Map<string, { purpose: ContractualPurpose; terms: ContractTerms }>();
  for (const purpose of config.contractualExchange.purposes)
    for (const terms of purpose.terms) contracts.set(termsKey(purpose.stableId, terms.stableId), { purpose, terms });
  const consentTerms = new Map<string, ConsentTerms>();
  for (const purpose of config.consentedSharing.purposes)
    for (const terms of purpose.terms) consentTerms.set(termsKey(purpose.stableId, terms.stableId), terms);
  return {
    revision,
    config,
    categories: new Map(config.categories.map((c) => [c.stableId, c])),
    fieldCategory: new Map(config.categories.flatMap((c) => c.fields.map((f) => [f.stableId, c.stableId] as const))),
    platformUse: new Map(config.platformUse.purposes.map((p) => [p.stableId, p])),
    sharing: new Map(
      config.platformSharing.purposes.map((p) => [p.stableId, { purpose: p, thirdParties: new Map(p.thirdParties.map((t) => [t.stableId, t])) }]),
    ),
    contractualPurposes: new Map(config.contractualExchange.purposes.map((p) => [p.stableId, p])),
    contracts,
    consentTerms,
    useOverrides: config.platformUse.overrides,
    sharingOverrides: config.platformSharing.overrides,
    sharingDecidedUnder: [...config.platformSharing.overrides, ...config.platformUse.overrides],
    guardian: config.guardian,
  };
}
