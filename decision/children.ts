import type { CompiledPolicy } from "./compiled-policy";
import { ageOn } from "./overrides";

/** A child is a user whose dob gives an age below the guardian threshold (policy-semantics 5). Without a dob, not known to be one. */
export function isChild(compiled: CompiledPolicy, user: { attributes: Record<string, string> }, now: Date): boolean {
  if (compiled.guardian === null) return false;
  const age = ageOn(user.attributes.dob, now);
  return age !== undefined && age < compiled.guardian.thresholdAge;
}

/**
 * Whether a user may act as a guardian: known to be an adult, a dob giving an age at or above the
 * guardian threshold. A user without a dob is not known to be a child, but not known to be an
 * adult either: a guardian must be (fail closed).
 */
export function isKnownAdult(compiled: CompiledPolicy, user: { attributes: Record<string, string> }, now: Date): boolean {
  const age = ageOn(user.attributes.dob, now);
  return compiled.guardian !== null && age !== undefined && age >= compiled.guardian.thresholdAge;
}

/**
 * Why `guardianId` may not act for `child` now, or undefined when they may: the link must hold on both sides (a link
 * half-removed by an erasure confers nothing) and the guardian must still be a known adult (policy-semantics 5: a
 * guardian is not a child; one the policy now counts as a child, the threshold raised, acts no more). `guardian` is the
 * guardian's record, undefined when there is none.
 */
export function guardianProblem(
  compiled: CompiledPolicy,
  child: { userId: string; guardians: readonly string[] },
  guardianId: string,
  guardian: { children: readonly string[]; attributes: Record<string, string> } | undefined,
  now: Date,
): string | undefined {
  if (!child.guardians.includes(guardianId) || !guardian?.children.includes(child.userId)) return `${guardianId} is not a guardian of ${child.userId}`;
  if (!isKnownAdult(compiled, guardian, now))
    return `${guardianId} is no longer known to be an adult (a dob at or above the guardian threshold): a guardian must be one to act for ${child.userId}`;
  return undefined;
}
