import type { Override } from "../policy/model";
import { regionCode } from "../policy/region-code";

/** Age in whole years on `now` (UTC) from a `YYYY-MM-DD` date of birth; undefined when absent or not a real date. */
export function ageOn(dob: string | undefined, now: Date): number | undefined {
  const match = dob === undefined ? null : /^(\d{4})-(\d{2})-(\d{2})$/.exec(dob);
  if (!match) return undefined;
  const [year, month, day] = [Number(match[1]), Number(match[2]), Number(match[3])];
  const birth = new Date(Date.UTC(year, month - 1, day));
  if (birth.getUTCFullYear() !== year || birth.getUTCMonth() !== month - 1 || birth.getUTCDate() !== day) return undefined;
  let age = now.getUTCFullYear() - year;
  const beforeBirthday = now.getUTCMonth() < month - 1 || (now.getUTCMonth() === month - 1 && now.getUTCDate() < day);
  if (beforeBirthday) age--;
  return age;
}

export interface OverrideMatch {
  override: Override;
  /** Set when the user lacks the tested property: the override matches to fail closed. */
  missingProperty?: "dob" | "location";
}

/**
 * Whether an override applies to a user (policy-semantics 3): under the age threshold, or in a
 * listed region (equal, or a sub-region `US-CA` of `US`; case-insensitive). A user without the
 * property matches: fail closed.
 */
export function overrideMatches(override: Override, attributes: Record<string, string>, now: Date): OverrideMatch | undefined {
  if (override.propertyName === "age") {
    const age = ageOn(attributes.dob, now);
    if (age === undefined) return { override, missingProperty: "dob" };
    return age < Number(override.values[0]) ? { override } : undefined;
  }
  const location = attributes.location?.trim().toUpperCase();
  if (!location || !regionCode.test(location)) return { override, missingProperty: "location" };
  return override.values.some((value) => {
    const region = value.toUpperCase();
    return location === region || location.startsWith(`${region}-`);
  })
    ? { override }
    : undefined;
}

/** The first matching override that drops the purpose (matching overrides intersect their allowed lists), if any. */
export function excludingOverride(matches: readonly OverrideMatch[], purposeId: string): OverrideMatch | undefined {
  return matches.find((match) => !match.override.allowedPurposeIds.includes(purposeId));
}
