import { stableIdPattern } from "../../policy/schema";

/** Requests of /config (gateway/config-routes.ts): headers, bodies, queries and path parameters; section bodies are policy/schema's. */

/** A revision number in a query or a path: digits, no leading zero. */
const revision = { type: "string", pattern: "^[1-9][0-9]{0,14}$" } as const;

export const ifMatchHeader = {
  type: "object",
  properties: { "if-match": { type: "string", description: "Optimistic concurrency: the revision this write is based on (the ETag of a read), or *" } },
} as const;
export const stableIdParams = { type: "object", properties: { id: { type: "string", pattern: stableIdPattern, maxLength: 200 } }, required: ["id"] } as const;

/** The body of PUT /config/<list section>: `{ <bodyKey>: [item, ...] }`. */
export function listSectionBody(bodyKey: string, itemSchema: object) {
  return {
    type: "object",
    additionalProperties: false,
    properties: { [bodyKey]: { type: "array", maxItems: 10_000, items: itemSchema } },
    required: [bodyKey],
  } as const;
}

// Query values are strings (bodies are never coerced, so neither are these): digits, parsed by the route.
export const historyQuery = {
  type: "object",
  additionalProperties: false,
  properties: {
    before: revision,
    limit: { type: "string", pattern: "^([1-9]|[1-9][0-9]|1[0-9][0-9]|200)$" },
  },
} as const;
export const revisionParams = { type: "object", properties: { revision }, required: ["revision"] } as const;
