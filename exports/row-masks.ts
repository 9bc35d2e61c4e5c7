import type { RowVerdict } from "./row-decider";

/**
 * How the rows of one SQL result are decided, whatever the wire protocol: each value belongs to a
 * group (one table instance of the statement) whose resource-context columns name its user; a
 * value with no group, or whose column is not mapped, is always NULL; hidden columns (added by
 * the export) are left out of every row.
 */
export interface DecisionPlan {
  /** Per column: its category, or undefined when it is always NULL (unmapped, or its instance unknown). */
  categories: Array<string | undefined>;
  /** Per column: the group whose verdict decides it; -1 for none. */
  groupOf: number[];
  /** Per column: added by the export, never sent. */
  hidden: boolean[];
  /** Per group: the columns holding its user id, first non-empty wins. */
  groups: number[][];
  /** One group: per verdict, which columns are kept (computed once per distinct verdict). */
  masks: Map<RowVerdict, RowMask>;
  lastVerdict?: RowVerdict;
  lastMask?: RowMask;
}

export interface RowMask {
  /** Per column: 1 kept, 0 NULL, -1 left out. */
  keep: Int8Array;
  /** Whether the row goes as it came (nothing NULLed, nothing left out). */
  whole: boolean;
  nulled: number;
}

/** The columns a verdict keeps in a result of one group (computed once per distinct verdict). */
export function maskFor(plan: DecisionPlan, verdict: RowVerdict): RowMask {
  if (plan.lastVerdict === verdict) return plan.lastMask!;
  let mask = plan.masks.get(verdict);
  if (!mask) {
    mask = maskOf(plan, [verdict]);
    plan.masks.set(verdict, mask);
  }
  plan.lastVerdict = verdict;
  plan.lastMask = mask;
  return mask;
}

/** The columns kept for a row whose groups have these verdicts (undefined: the group names no one in this row). */
export function maskOf(plan: DecisionPlan, verdicts: ReadonlyArray<RowVerdict | undefined>): RowMask {
  const count = plan.categories.length;
  const keep = new Int8Array(count);
  let nulled = 0;
  let left = 0;
  for (let i = 0; i < count; i++) {
    if (plan.hidden[i]) {
      keep[i] = -1;
      left++;
      continue;
    }
    const category = plan.categories[i];
    const group = plan.groupOf[i]!;
    const verdict = group >= 0 ? verdicts[group] : undefined;
    const kept = category && verdict?.allowed && verdict.categories.has(category);
    keep[i] = kept ? 1 : 0;
    if (!kept) nulled++;
  }
  return { keep, whole: nulled === 0 && left === 0, nulled };
}

/** What a door reads of one row for `joinedRowMask`. */
export interface JoinedRow {
  /** The user the group's resource-context columns name in this row (first non-empty); undefined: none. */
  userOf(group: number): string | undefined;
  /** The user's verdict as loaded for this row; undefined: not decided. */
  verdictOf(userId: string): RowVerdict | undefined;
  /** Whether every value of the group is NULL in this row. */
  allNull(group: number): boolean;
}

/**
 * Several instances (a join): each value is decided by its own instance's user. The row goes
 * only if every instance that names a user may use it, and at least one does. An instance that
 * names no one is the missing side of an outer join when all its values are NULL (they stay
 * NULL); otherwise it is a row without a user, and the row is dropped (policy-semantics 4).
 * Undefined: the row is dropped.
 */
export function joinedRowMask(plan: DecisionPlan, row: JoinedRow): RowMask | undefined {
  const verdicts: Array<RowVerdict | undefined> = [];
  let allowed = false;
  for (let group = 0; group < plan.groups.length; group++) {
    const userId = row.userOf(group);
    const verdict = userId === undefined ? undefined : row.verdictOf(userId);
    if (userId !== undefined && !verdict?.allowed) return undefined;
    if (userId === undefined && !row.allNull(group)) return undefined;
    if (verdict) allowed = true;
    verdicts.push(verdict);
  }
  return allowed ? maskOf(plan, verdicts) : undefined;
}
