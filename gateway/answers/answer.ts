/**
 * Building blocks of the routes' answer schemas (gateway/answers/*: one module per route group).
 * Fastify serializes an answer with its schema, and drops what the schema does not name: every
 * object here takes more properties than it names (written as they are), so that a schema that
 * lags behind a route types less for clients but never loses a field.
 */

export const text = { type: "string" } as const;
export const nullableText = { type: ["string", "null"] } as const;
export const count = { type: "integer" } as const;
export const flag = { type: "boolean" } as const;
export const texts = { type: "array", items: text } as const;

/** An object whose named properties are typed and whose other properties pass unchanged. */
export function openObject<P extends Record<string, object>>(description: string, properties: P, required: ReadonlyArray<keyof P & string> = []) {
  return { type: "object", description, additionalProperties: true, properties, ...(required.length > 0 ? { required } : {}) } as const;
}

/** Any JSON object, written as it is (records, attribute maps, grants). */
export function anyObject(description: string) {
  return { type: "object", description, additionalProperties: true } as const;
}

/** A list of open objects. */
export function listOf(items: object, description?: string) {
  return { type: "array", items, ...(description ? { description } : {}) } as const;
}
