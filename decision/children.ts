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
