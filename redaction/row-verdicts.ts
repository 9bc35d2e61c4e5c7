import type { CsvVerdict } from "./types";

/** A user's verdict as the writer of a CSV block holds it; undefined while it has none. */
export type VerdictOf = (userId: string) => CsvVerdict | undefined;

/** Adds to `users` those of the rows' ids (undefined: the row names no one) that have no verdict yet, in row order: the ones to ask for. */
export function addUsersWithoutVerdict(userIds: ReadonlyArray<string | undefined>, verdictOf: VerdictOf, users: Set<string>): Set<string> {
  for (const id of userIds) if (id !== undefined && !verdictOf(id)) users.add(id);
  return users;
}

/** Each row's verdict (undefined: the row names no one). Fail closed: a user without one throws, so no row is written without its user's verdict. */
export function rowVerdicts(userIds: ReadonlyArray<string | undefined>, verdictOf: VerdictOf): Array<CsvVerdict | undefined> {
  return userIds.map((id) => {
    if (id === undefined) return undefined;
    const verdict = verdictOf(id);
    if (!verdict) throw new Error("a CSV row without its user's verdict");
    return verdict;
  });
}
