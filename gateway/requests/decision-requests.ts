import { purposeTypes } from "../../decision/types";
import { idSchema as id } from "../schemas";

/** Requests of /decision (gateway/decision-routes.ts). */

/** One decision query: PUT /decision's body, and each item of PUT /decision/batch. */
export const decisionQuery = {
  type: "object",
  additionalProperties: false,
  properties: { userId: id, type: { type: "string", enum: [...purposeTypes] }, purposeId: id, thirdPartyId: id, termsId: id, mappingGroup: id },
  required: ["userId", "type", "purposeId"],
} as const;
export const decisionBatchBody = {
  type: "object",
  additionalProperties: false,
  properties: { queries: { type: "array", minItems: 1, maxItems: 1000, items: decisionQuery } },
  required: ["queries"],
} as const;
