import type { MappingGroup } from "../policy/model";
import type { CompiledPolicy } from "./compiled-policy";
import type { Decision } from "./types";
import { canNameUser } from "./user-id-shape";

/** How one mapping group applies to records, for one configuration revision. */
export interface RecordPlan {
  group: string;
  /** Record fields holding the user id, in mapping order (policy-semantics 4). */
  resourceFields: string[];
  /** Record field -> the category it belongs to (undefined: mapped to no category). */
  categoryOf: Map<string, string | undefined>;
  /** Dotted paths that lead to a mapped field (`users` for `users.email`): objects there are walked into. */
  walkable: Set<string>;
}

export function planRecords(policy: CompiledPolicy, group: MappingGroup): RecordPlan {
  const categoryOf = new Map<string, string | undefined>();
  for (const mapping of group.fieldMappings) {
    // A field id names the field exactly; the validator guarantees it belongs to the category when both are given.
    categoryOf.set(mapping.recordField, mapping.fieldId !== undefined ? policy.fieldCategory.get(mapping.fieldId) : mapping.categoryId);
  }
  const walkable = new Set<string>();
  for (const field of categoryOf.keys()) for (let dot = field.indexOf("."); dot !== -1; dot = field.indexOf(".", dot + 1)) walkable.add(field.slice(0, dot));
  return { group: group.name, resourceFields: group.fieldMappings.filter((m) => m.resourceContext).map((m) => m.recordField), categoryOf, walkable };
}

/** Limits of what a record may be, so a hostile one fails cleanly instead of exhausting the node. */
export const recordLimits = { depth: 32 } as const;

export class RecordShapeError extends Error {}

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

/** A JSON object (not null, not an array). */
export function isObject(value: unknown): value is { [key: string]: Json } {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/**
 * Reads a record field: a key that is the whole name (`users.id`, spec 4.4), else a dotted path
 * through nested objects (`address.city`, policy-semantics 4). Own properties only.
 */
export function valueAt(record: unknown, path: string): unknown {
  if (isObject(record) && Object.hasOwn(record, path)) return record[path];
  let current: unknown = record;
  for (const key of path.split(".")) {
    if (!isObject(current) || !Object.hasOwn(current, key)) return undefined;
    current = current[key];
  }
  return current;
}

/**
 * The user id of a record: the first non-empty resource-context value, in mapping order. A number
 * names a user only when exact: a rounded one could name someone else. Parsed JSON has lost how a
 * number was written (`1.0000000000000001` parses to 1), so a caller holding the record's text
 * says with `writtenAsInteger` whether the field's number was written as an integer.
 */
export function userIdOf(record: unknown, plan: RecordPlan, writtenAsInteger?: (field: string) => boolean): string | undefined {
  for (const field of plan.resourceFields) {
    const value = valueAt(record, field);
    if (typeof value === "string" && value !== "") return canNameUser(value) ? value : undefined;
    if (Number.isSafeInteger(value) && (writtenAsInteger?.(field) ?? true)) return String(value);
  }
  return undefined;
}

/** The summary of a record dropped because none of its resource-context fields names a user. */
export function noUserSummary(group: string): string {
  return `Dropped: the record names no user (mapping group '${group}').`;
}

/** Whether a value nests objects and arrays deeper than `maxDepth` (checked without recursion). */
export function nestsDeeperThan(value: unknown, maxDepth: number): boolean {
  const stack: Array<[unknown, number]> = [[value, 0]];
  while (stack.length > 0) {
    const [current, depth] = stack.pop()!;
    if (typeof current !== "object" || current === null) continue;
    if (depth >= maxDepth) return true;
    for (const member of Object.values(current)) if (typeof member === "object" && member !== null) stack.push([member, depth + 1]);
  }
  return false;
}

export interface FieldOutcome {
  kept: boolean;
  why: string;
}

/** Whether a record field is kept for a decision that allows these categories, and why (policy-semantics 4). */
export function fieldOutcome(plan: RecordPlan, allowed: ReadonlySet<string>, path: string): FieldOutcome {
  if (!plan.categoryOf.has(path)) return { kept: false, why: "not in the mapping group" };
  const category = plan.categoryOf.get(path);
  if (category === undefined) return { kept: false, why: "mapped to no category" };
  if (!allowed.has(category)) return { kept: false, why: `category '${category}' is not allowed for this purpose` };
  return { kept: true, why: `category '${category}' is allowed` };
}

/**
 * Whether a record field is walked into rather than kept or emptied whole: an object the
 * mapping does not name, with members, on the way to a mapped field. Any other object is
 * emptied whole, keys and all (a mapping on an object keeps or empties all of it).
 */
export function walksInto(plan: RecordPlan, path: string, isNonEmptyObject: boolean): boolean {
  return isNonEmptyObject && !plan.categoryOf.has(path) && plan.walkable.has(path);
}

/** Sets a key as an own data property: a key named `__proto__` stays a key (the only inherited setter of a plain object; defineProperty for every key showed in profiles). */
function setOwn(target: { [key: string]: Json }, key: string, value: Json): void {
  if (key === "__proto__") Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true });
  else target[key] = value;
}

/**
 * Redacts one JSON record for a decision (policy-semantics 4): a field is kept only if its
 * mapping names a category the decision allows; every other field, unknown ones included, is
 * emptied to null. A mapping on an object keeps or empties all of it; unmapped objects are
 * walked. Returns the record and, for every field, whether it was kept and why.
 */
export function redactRecord(
  record: { [key: string]: Json },
  plan: RecordPlan,
  decision: Decision,
): { record: { [key: string]: Json }; fields: Record<string, FieldOutcome> } {
  const allowed = new Set(decision.categoryIds);
  const fields: Record<string, FieldOutcome> = {};
  const outcome = (path: string) => fieldOutcome(plan, allowed, path);
  const seen = new Set<string>();
  const walk = (source: { [key: string]: Json }, prefix: string, depth: number): { [key: string]: Json } => {
    if (depth > recordLimits.depth) throw new RecordShapeError(`the record nests deeper than ${recordLimits.depth} levels`);
    const out: { [key: string]: Json } = {};
    for (const key of Object.keys(source)) {
      const path = prefix ? `${prefix}.${key}` : key;
      // `{"users.id": …, "users": {"id": …}}`: one field twice, the user decided by one and the other's values riding along (as in documents: JSON_DUPLICATE_KEY).
      if (seen.has(path)) throw new RecordShapeError(`the record has the field '${path}' twice (as a dotted key and as a nested path)`);
      seen.add(path);
      const value = source[key];
      if (isObject(value) && walksInto(plan, path, Object.keys(value).length > 0)) {
        setOwn(out, key, walk(value, path, depth + 1));
        continue;
      }
      const result = outcome(path);
      fields[path] = result;
      setOwn(out, key, result.kept ? value : null);
    }
    return out;
  };
  return { record: walk(record, "", 0), fields };
}

/** The advice every redaction answer carries (spec 4.4 rule 5): the reason text, nothing else. */
export const summaryAdviceId = "urn:service:attribute:message:summary";
export interface SummaryAdvice {
  id: typeof summaryAdviceId;
  value: string;
}

export function summaryAdvice(value: string): SummaryAdvice {
  return { id: summaryAdviceId, value };
}

/** Emptied fields a summary names one by one; the rest are counted. */
const namedInSummary = 8;

/**
 * The one sentence a kept record's advice says: the decision's summary and, when fields were
 * emptied, which and why. Field names only, never values.
 */
export function keptSummary(decisionSummary: string, fields: Record<string, FieldOutcome>): string {
  // One pass, no entry arrays: this runs for every kept record.
  let named = "";
  let emptied = 0;
  for (const path of Object.keys(fields)) {
    const outcome = fields[path]!;
    if (outcome.kept) continue;
    if (emptied < namedInSummary) named += `${emptied === 0 ? "" : ", "}${path} (${outcome.why})`;
    emptied++;
  }
  if (emptied === 0) return decisionSummary;
  const more = emptied > namedInSummary ? ` and ${emptied - namedInSummary} more` : "";
  const sentence = decisionSummary.endsWith(".") ? decisionSummary.slice(0, -1) : decisionSummary;
  return `${sentence}; emptied ${named}${more}.`;
}
