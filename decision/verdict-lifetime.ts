/** Verdicts an export remembers (per process); past this the memo starts over. */
export const maxRememberedVerdicts = 200_000;

const dayMs = 86_400_000;
/**
 * The longest a remembered verdict is used without being decided again. Changes of users and of
 * the configuration void verdicts as they happen (and a lost watch voids them all): this only
 * bounds what a change nobody was told of could cost. Spread over a tenth more, so verdicts
 * made together are not all decided again at the same moment.
 */
export const verdictBackstopMs = 10 * 60_000;

/**
 * Until when a verdict made at `madeAt` (epoch ms) holds when nothing changes: decisions read the
 * clock only through the UTC day (age overrides), so never past the end of that day.
 * `spread` in [0, 1) picks the point within the backstop's spread.
 */
export function verdictExpiry(madeAt: number, spread = Math.random()): number {
  const endOfDay = (Math.floor(madeAt / dayMs) + 1) * dayMs;
  return Math.min(endOfDay, madeAt + verdictBackstopMs + Math.floor(spread * (verdictBackstopMs / 10)));
}
