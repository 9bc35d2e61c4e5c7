import { idSchema as id } from "../schemas";

/** Requests of the data-subject rights routes (gateway/rights-routes.ts); their path parameters are user-requests' userParams. */

const time = { type: "string", minLength: 10, maxLength: 40 } as const;

// Query values are strings: offset and limit are digits, parsed by the route.
export const reportQuery = {
  type: "object",
  additionalProperties: false,
  properties: {
    from: time,
    to: time,
    offset: { type: "string", pattern: "^[0-9]{1,3}$" },
    limit: { type: "string", pattern: "^[0-9]{1,3}$" },
    actorId: id,
    format: { type: "string", enum: ["json", "csv"] },
  },
} as const;
export const restrictionBody = {
  type: "object",
  additionalProperties: false,
  properties: { actorId: id, purposeIds: { type: "array", minItems: 1, maxItems: 100, uniqueItems: true, items: id } },
} as const;
