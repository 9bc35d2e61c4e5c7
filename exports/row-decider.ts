import type { Verdict } from "../decision/verdicts";

/** What one user's decision lets through a row: shared by every user with the same outcome (used as a key). */
export type RowVerdict = Verdict;

/** One record field of the export's mapping group as the proxy needs it. */
export interface MappedField {
  recordField: string;
  /** The category the field belongs to; undefined: mapped to no category (always NULL). */
  category: string | undefined;
  /** Position among the resource-context fields (policy-semantics 4: first non-empty wins); -1 if not one. */
  resourceOrder: number;
}

/** The mapping group as it stands; `key` changes whenever the group or the configuration revision does. */
export interface MappingView {
  key: string;
  fields: ReadonlyMap<string, MappedField>;
}

/**
 * Decisions for one export (one purpose, one mapping group), near the proxy: verdicts come
 * from memory once a user has been decided; `load` decides (and traces) the missing ones.
 */
export interface RowDecider {
  mapping(): MappingView;
  verdict(userId: string): RowVerdict | undefined;
  /** Until when the user's verdict holds if nothing changes (epoch ms); undefined when none is in memory. */
  expiresAt(userId: string): number | undefined;
  /** Decides these users (the answer, if any, is for callers that want the decisions themselves). */
  load(userIds: readonly string[]): Promise<unknown>;
}
