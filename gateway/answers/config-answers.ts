import { guardianSchema, mappingGroupSchema, policyConfigSchema, userAccessSchema } from "../../policy/schema";
import { count, listOf, openObject, text } from "./answer";

/**
 * Answers of /config and /mapping. Reads answer with the same schemas writes are checked with:
 * what is stored passed them, so nothing stored is left out, and a client types reads and writes
 * alike.
 */

/** A configuration write's outcome: the revision now, and whether anything changed. */
export const writeResultSchema = {
  type: "object",
  properties: { revision: { type: "integer" }, changed: { type: "boolean" } },
  required: ["revision", "changed"],
} as const;

export const configAnswer = policyConfigSchema;
export const userAccessAnswer = userAccessSchema;
export const guardianAnswer = guardianSchema;
export const mappingGroupAnswer = mappingGroupSchema;
export const mappingGroupsAnswer = openObject("every mapping group", { groups: listOf(mappingGroupSchema) }, ["groups"]);

/** A list section: its items under the section's body key (`categories`, `purposes`, `overrides`). */
export function sectionAnswer(bodyKey: string, itemSchema: object) {
  return openObject(`the section's ${bodyKey}`, { [bodyKey]: listOf(itemSchema) }, [bodyKey]);
}

const revisionEntry = {
  revision: count,
  at: { ...text, description: "when it was written (ISO 8601)" },
  by: { ...text, description: "who wrote it" },
  change: { ...text, description: "what the write was" },
};

export const historyAnswer = openObject(
  "revisions, newest first",
  { revisions: listOf(openObject("one revision, without its configuration", revisionEntry)) },
  ["revisions"],
);
export const revisionAnswer = openObject("one revision with the complete configuration it wrote", { ...revisionEntry, config: policyConfigSchema }, [
  "revision",
  "config",
]);
