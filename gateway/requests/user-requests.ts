import { idSchema as id } from "../schemas";

/** Requests of /user (gateway/user-routes.ts, gateway/rights-routes.ts): bodies, queries and path parameters. */

const attributes = { type: "object", maxProperties: 50, additionalProperties: { type: "string", maxLength: 500 } } as const;
const relationship = { type: "object", additionalProperties: false, properties: { purposeId: id, termsId: id }, required: ["purposeId", "termsId"] } as const;
const consentEntry = {
  type: "object",
  additionalProperties: false,
  properties: { purposeId: id, termsId: id, categoryIds: { type: "array", maxItems: 1000, uniqueItems: true, items: id } },
  required: ["purposeId"],
} as const;

export const userParams = { type: "object", properties: { userId: id }, required: ["userId"] } as const;

export const createUserBody = {
  type: "object",
  additionalProperties: false,
  properties: { userId: id, attributes, contractualRelationship: relationship },
  required: ["userId"],
} as const;
export const termsQueryBody = { type: "object", additionalProperties: false, properties: { attributes, contractualRelationship: relationship } } as const;
export const acceptTermsQuery = {
  type: "object",
  additionalProperties: false,
  properties: {
    userId: id,
    acceptorId: id,
    // The hash of the personalized terms the user was shown (GET /user/{id}/terms, /user/terms/query): accepted only if they are still current.
    termsHash: { type: "string", pattern: "^[0-9a-f]{64}$" },
  },
  required: ["userId"],
} as const;
export const consentBody = {
  type: "object",
  additionalProperties: false,
  properties: {
    userId: id,
    grantorId: id,
    consents: {
      type: "object",
      additionalProperties: false,
      properties: { affirmativeConsents: { type: "array", minItems: 1, maxItems: 100, items: consentEntry } },
      required: ["affirmativeConsents"],
    },
  },
  required: ["userId", "consents"],
} as const;
export const revokeBody = {
  type: "object",
  additionalProperties: false,
  properties: { userId: id, grantorId: id, purposeId: id, termsId: id },
  required: ["userId", "purposeId"],
} as const;
export const guardianBody = {
  type: "object",
  additionalProperties: false,
  // grantorId: a guardian the child already has, who adds this one (needed once the child has a guardian).
  properties: { childId: id, guardianId: id, grantorId: id },
  required: ["childId", "guardianId"],
} as const;
export const flowBody = {
  type: "object",
  additionalProperties: false,
  properties: { guardianId: id, purposeId: id, thirdPartyId: id, disabled: { type: "boolean" } },
  required: ["guardianId", "purposeId", "thirdPartyId", "disabled"],
} as const;
