/** An identifier in a request (user, purpose, terms, mapping group...): any text without control characters. */
export const idSchema = { type: "string", minLength: 1, maxLength: 200, pattern: "^[^\\u0000-\\u001f]+$" } as const;
