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

/**
 * A record that reaches one field two ways: a dotted key and a nested path (`{"a.b": …, "a": {"b": …}}`).
 * Which one names the user, and whose the other values are, is ambiguous: every door refuses the record
 * before deciding anything (documents: JSON_DUPLICATE_KEY).
 */
export class FieldReachedTwice extends RecordShapeError {
  /** What is wrong, after the record's name: `has the field 'a.b' twice (…)`. */
  readonly problem: string;

  constructor(readonly path: string) {
    const problem = `has the field '${path}' twice (as a dotted key and as a nested path)`;
    super(`the record ${problem}`);
    this.problem = problem;
  }
}

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
type JsonObject = { [key: string]: Json };

/** A JSON object (not null, not an array). */
export function isObject(value: unknown): value is { [key: string]: Json } {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** What the walk of a record tells: each field it does not go into, and each object it goes into and leaves. */
interface RecordVisitor {
  field(key: string, path: string, value: Json): void;
  enter(key: string): void;
  leave(): void;
}

/**
 * The one walk through a record (policy-semantics 4), as every door reads it: each key of the record, and
 * each key of an object walked into (walksInto), is a field at its dotted path: key `a.b` then `id`, key `a`
 * then `b.id`, and `a`, `b`, `id` all reach `a.b.id`. Finding the user, refusing a record and redacting it
 * all read it this way, so no door decides a record under a value the redaction reads elsewhere. A field
 * reached two ways: FieldReachedTwice; walked objects nested past the limit: RecordShapeError.
 */
function walkRecord(record: JsonObject, plan: RecordPlan, visitor: RecordVisitor): void {
  const seen = new Set<string>();
  const walk = (source: JsonObject, prefix: string, depth: number): void => {
    if (depth > recordLimits.depth) throw new RecordShapeError(`the record nests deeper than ${recordLimits.depth} levels`);
    for (const key of Object.keys(source)) {
      const path = prefix ? `${prefix}.${key}` : key;
      if (seen.has(path)) throw new FieldReachedTwice(path);
      seen.add(path);
      const value = source[key]!;
      if (isObject(value) && walksInto(plan, path, Object.keys(value).length > 0)) {
        visitor.enter(key);
        walk(value, path, depth + 1);
        visitor.leave();
      } else {
        visitor.field(key, path, value);
      }
    }
  };
  walk(record, "", 0);
}

/** A resource-context field as the walk reaches it: its value and the keys that lead to it (`["a.b", "id"]`). */
interface Reached {
  value: Json;
  keys: string[];
}

/** The record's resource-context fields the walk reaches (each at most once: a field reached twice is refused). */
function resourceValues(record: JsonObject, plan: RecordPlan): Map<string, Reached> {
  const reached = new Map<string, Reached>();
  // A flat record (no object value the walk could go into) reaches each field by its own key only, once: the walk
  // would find exactly these, without a path string or a seen-set per field (the common shape, and /redact/record's hot path).
  let flat = true;
  for (const key in record) {
    if (isObject(record[key])) {
      flat = false;
      break;
    }
  }
  if (flat) {
    for (const field of plan.resourceFields) if (Object.hasOwn(record, field)) reached.set(field, { value: record[field]!, keys: [field] });
    return reached;
  }
  const keys: string[] = [];
  walkRecord(record, plan, {
    field: (key, path, value) => {
      if (plan.resourceFields.includes(path)) reached.set(path, { value, keys: [...keys, key] });
    },
    enter: (key) => void keys.push(key),
    leave: () => void keys.pop(),
  });
  return reached;
}

/**
 * The user id of a record (policy-semantics 4): the first resource-context value, in mapping order, that
 * is there and neither null nor "". That value decides: if it cannot name a user (a string no user id can
 * be, a number that is not an exact integer, true, an object, an array), the record names no one and is
 * dropped; the next field is not consulted (it could name another user, whose decision would release
 * this one's values). A number names a user only when exact: a rounded one could name someone else.
 * Parsed JSON has lost how a number was written (`1.0000000000000001` parses to 1), so a caller holding
 * the record's text says with `writtenAsInteger` whether the number, at the keys that reach it, was
 * written as an integer. Fields are found as the redaction walks the record (walkRecord): a record with
 * a field reached two ways is refused (FieldReachedTwice), before anything is decided.
 */
export function userIdOf(record: unknown, plan: RecordPlan, writtenAsInteger?: (keys: readonly string[]) => boolean): string | undefined {
  if (!isObject(record)) return undefined;
  const reached = resourceValues(record, plan);
  for (const field of plan.resourceFields) {
    const found = reached.get(field);
    if (found === undefined || found.value === null || found.value === "") continue;
    const { value, keys } = found;
    if (typeof value === "string") return canNameUser(value) ? value : undefined;
    if (Number.isSafeInteger(value) && (writtenAsInteger?.(keys) ?? true)) return String(value);
    return undefined;
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
  const out: JsonObject = {};
  const objects: JsonObject[] = [out];
  walkRecord(record, plan, {
    field: (key, path, value) => {
      const result = fieldOutcome(plan, allowed, path);
      fields[path] = result;
      setOwn(objects[objects.length - 1]!, key, result.kept ? value : null);
    },
    enter: (key) => {
      const inner: JsonObject = {};
      setOwn(objects[objects.length - 1]!, key, inner);
      objects.push(inner);
    },
    leave: () => void objects.pop(),
  });
  return { record: out, fields };
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
