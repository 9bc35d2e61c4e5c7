/** Requests of /mapping (gateway/mapping-routes.ts); a mapping group body is policy/schema's mappingGroupSchema. */

/** The mapping group a read or a delete names. */
export const nameParams = { type: "object", properties: { name: { type: "string", minLength: 1, maxLength: 200 } }, required: ["name"] } as const;
