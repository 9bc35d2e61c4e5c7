/**
 * The policy configuration (spec 2.1-2.9): what operators configure and every door enforces.
 * Pure data: no I/O. `PolicyConfig` is also the body of the bulk GET/PUT of /config.
 */

/** Optional texts shown to users in their personalized terms. */
export interface Described {
  summary?: string;
  fullDetails?: string;
}

export interface Field extends Described {
  stableId: string;
  name: string;
}

export interface Category extends Described {
  stableId: string;
  name: string;
  fields: Field[];
}

export interface PlatformUsePurpose extends Described {
  stableId: string;
  name: string;
  categoryIds: string[];
  /** true: usable only after the user opted in; absent or false: core. */
  optIn?: boolean;
}

export type OverrideProperty = "age" | "location";

export interface Override extends Described {
  /** Optional (the spec gives overrides none); when given, the override can be read and deleted by it. */
  stableId?: string;
  name: string;
  propertyName: OverrideProperty;
  /** age: one whole number, the threshold (users under it match); location: region codes. */
  values: string[];
  /** Purposes that stay allowed for matching users; every other purpose is dropped. */
  allowedPurposeIds: string[];
}

export interface ThirdParty extends Described {
  stableId: string;
  name: string;
  serviceProvider: boolean;
  /**
   * The narrower category set this party may receive (spec 2.5 leaves its form open): a subset
   * of the purpose's `categoryCeilingIds`. Absent: the whole ceiling.
   */
  categoryIds?: string[];
}

export interface PlatformSharingPurpose extends Described {
  stableId: string;
  name: string;
  platformUsePurposeId?: string;
  categoryCeilingIds: string[];
  thirdParties: ThirdParty[];
  /**
   * Issue 26 item 2: sharing for this purpose is allowed only when the caller asking holds one
   * of these assertions (`group:<ldap group>`, `scope:<oauth scope>`, `claim:<name>=<value>`).
   * A decision without a caller (an export's verdicts) is denied. Absent: any caller.
   */
  callerAssertions?: string[];
}

export interface GuardianFlow {
  purposeId: string;
  thirdPartyIds: string[];
}

export interface GuardianRights {
  thresholdAge: number;
  allowedToDisable: GuardianFlow[];
  categoryIds: string[];
}

export interface ContractTerms extends Described {
  stableId: string;
  name: string;
  contractAccessCategoryIds: string[];
  platformUsePurposeIds: string[];
  platformSharingPurposeIds: string[];
}

export interface ContractualPurpose extends Described {
  stableId: string;
  name: string;
  terms: ContractTerms[];
}

export interface ConsentTerms extends Described {
  stableId: string;
  name: string;
  requestedCategoryIds: string[];
}

export interface ConsentedPurpose extends Described {
  stableId: string;
  name: string;
  terms: ConsentTerms[];
}

export interface FieldMapping {
  recordField: string;
  categoryId?: string;
  fieldId?: string;
  resourceContext?: boolean;
}

export interface MappingGroup {
  name: string;
  fieldMappings: FieldMapping[];
}

/** The complete configuration: the bulk document of GET/PUT /config. */
export interface PolicyConfig {
  categories: Category[];
  platformUse: { purposes: PlatformUsePurpose[]; overrides: Override[] };
  platformSharing: { purposes: PlatformSharingPurpose[]; overrides: Override[] };
  userAccess: { categoryIds: string[] };
  /** null until guardian rights are configured. */
  guardian: GuardianRights | null;
  contractualExchange: { purposes: ContractualPurpose[] };
  consentedSharing: { purposes: ConsentedPurpose[] };
  mappingGroups: MappingGroup[];
}

export function emptyPolicyConfig(): PolicyConfig {
  return {
    categories: [],
    platformUse: { purposes: [], overrides: [] },
    platformSharing: { purposes: [], overrides: [] },
    userAccess: { categoryIds: [] },
    guardian: null,
    contractualExchange: { purposes: [] },
    consentedSharing: { purposes: [] },
    mappingGroups: [],
  };
}

/** One thing wrong with a configuration write: where (a JSON pointer into the body) and what. */
export interface Problem {
  path: string;
  problem: string;
}
