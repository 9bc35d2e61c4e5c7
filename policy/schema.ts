/**
 * JSON schemas of the policy configuration: the one description of its shape, used by the
 * gateway's routes (and so the OpenAPI document) and by the policy actor itself. Unknown keys
 * are refused: a misspelt key must not silently configure nothing.
 */
export const stableIdPattern = "^[A-Za-z0-9._-]+$";

const text = (maxLength: number) => ({ type: "string", maxLength }) as const;
const name = { type: "string", minLength: 1, maxLength: 200 } as const;
const stableId = { type: "string", minLength: 1, maxLength: 200, pattern: stableIdPattern } as const;
const reference = { type: "string", minLength: 1, maxLength: 200 } as const;
const references = { type: "array", maxItems: 10_000, items: reference } as const;
const described = { summary: text(2_000), fullDetails: text(100_000) } as const;

function object(properties: Record<string, unknown>, required: string[]) {
  return { type: "object", additionalProperties: false, properties, required } as const;
}

const list = (items: unknown) => ({ type: "array", maxItems: 10_000, items }) as const;

export const fieldSchema = object({ stableId, name, ...described }, ["stableId", "name"]);
export const categorySchema = object({ stableId, name, ...described, fields: list(fieldSchema) }, ["stableId", "name", "fields"]);
export const platformUsePurposeSchema = object({ stableId, name, ...described, categoryIds: references, optIn: { type: "boolean" } }, [
  "stableId",
  "name",
  "categoryIds",
]);
export const overrideSchema = object(
  {
    stableId,
    name,
    ...described,
    propertyName: { type: "string", enum: ["age", "location"] },
    values: { type: "array", minItems: 1, maxItems: 1_000, items: { type: "string", minLength: 1, maxLength: 100 } },
    allowedPurposeIds: references,
  },
  ["name", "propertyName", "values", "allowedPurposeIds"],
);
export const thirdPartySchema = object({ stableId, name, ...described, serviceProvider: { type: "boolean" }, categoryIds: references }, [
  "stableId",
  "name",
  "serviceProvider",
]);
export const platformSharingPurposeSchema = object(
  {
    stableId,
    name,
    ...described,
    platformUsePurposeId: reference,
    categoryCeilingIds: references,
    thirdParties: list(thirdPartySchema),
    callerAssertions: { type: "array", minItems: 1, maxItems: 100, items: { type: "string", maxLength: 300, pattern: "^(group|scope):.+$|^claim:[^=]+=.+$" } },
  },
  ["stableId", "name", "categoryCeilingIds", "thirdParties"],
);
export const guardianSchema = object(
  {
    thresholdAge: { type: "integer", minimum: 0, maximum: 150 },
    allowedToDisable: list(object({ purposeId: reference, thirdPartyIds: references }, ["purposeId", "thirdPartyIds"])),
    categoryIds: references,
  },
  ["thresholdAge", "allowedToDisable", "categoryIds"],
);
export const contractTermsSchema = object(
  { stableId, name, ...described, contractAccessCategoryIds: references, platformUsePurposeIds: references, platformSharingPurposeIds: references },
  ["stableId", "name", "contractAccessCategoryIds", "platformUsePurposeIds", "platformSharingPurposeIds"],
);
export const contractualPurposeSchema = object({ stableId, name, ...described, terms: list(contractTermsSchema) }, ["stableId", "name", "terms"]);
export const consentTermsSchema = object({ stableId, name, ...described, requestedCategoryIds: references }, ["stableId", "name", "requestedCategoryIds"]);
export const consentedPurposeSchema = object({ stableId, name, ...described, terms: list(consentTermsSchema) }, ["stableId", "name", "terms"]);
export const fieldMappingSchema = object(
  { recordField: { type: "string", minLength: 1, maxLength: 500 }, categoryId: reference, fieldId: reference, resourceContext: { type: "boolean" } },
  ["recordField"],
);
export const mappingGroupSchema = object({ name, fieldMappings: list(fieldMappingSchema) }, ["name", "fieldMappings"]);

export const userAccessSchema = object({ categoryIds: references }, ["categoryIds"]);

export const policyConfigSchema = object(
  {
    categories: list(categorySchema),
    platformUse: object({ purposes: list(platformUsePurposeSchema), overrides: list(overrideSchema) }, ["purposes", "overrides"]),
    platformSharing: object({ purposes: list(platformSharingPurposeSchema), overrides: list(overrideSchema) }, ["purposes", "overrides"]),
    userAccess: userAccessSchema,
    guardian: { anyOf: [{ type: "null" }, guardianSchema] },
    contractualExchange: object({ purposes: list(contractualPurposeSchema) }, ["purposes"]),
    consentedSharing: object({ purposes: list(consentedPurposeSchema) }, ["purposes"]),
    mappingGroups: list(mappingGroupSchema),
  },
  ["categories", "platformUse", "platformSharing", "userAccess", "guardian", "contractualExchange", "consentedSharing", "mappingGroups"],
);
