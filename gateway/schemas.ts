import { purposeTypes } from "../decision/types";

/** An identifier in a request (user, purpose, terms, mapping group...): any text without control characters. */
export const idSchema = { type: "string", minLength: 1, maxLength: 200, pattern: "^[^\\u0000-\\u001f]+$" } as const;

/** What a record or a document is redacted for (spec 4.4 query): PUT /redact/record and PUT /redact/document take the same. */
export const redactionQuery = {
  type: "object",
  additionalProperties: false,
  properties: { purposeId: idSchema, type: { type: "string", enum: [...purposeTypes] }, mappingGroup: idSchema, thirdPartyId: idSchema, termsId: idSchema },
  required: ["purposeId", "type", "mappingGroup"],
} as const;
