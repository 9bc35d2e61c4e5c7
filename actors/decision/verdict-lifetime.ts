/** Verdicts an export remembers (per process); past this the memo starts over. */
export const maxRememberedVerdicts = 200_000;
/** A verdict is decided again after this long even if nothing changed: age-based overrides follow the clock. */
export const verdictTtlMs = 60_000;
