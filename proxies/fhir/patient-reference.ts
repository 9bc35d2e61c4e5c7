import type { TypePlan } from "./fhir-mapping";

/** FHIR's id syntax (http://hl7.org/fhir/R4/datatypes.html#id). */
export const fhirId = /^[A-Za-z0-9\-.]{1,64}$/;
const patientReference = /^Patient\/([A-Za-z0-9\-.]{1,64})(?:\/_history\/[A-Za-z0-9\-.]{1,64})?$/;

/** The patient id a Reference names (`Patient/<id>`, relative or under the backend's base); undefined for anything else. */
function patientOf(value: unknown, backendBase: string): string | undefined {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return undefined;
  const reference = (value as { reference?: unknown }).reference;
  if (typeof reference !== "string") return undefined;
  return patientReference.exec(reference.startsWith(backendBase) ? reference.slice(backendBase.length) : reference)?.[1];
}

/**
 * The user a resource belongs to: the first non-empty resource-context element, in policy order.
 * `Patient.id` is the user id; a reference element names `Patient/<id>`; a list of references
 * names a user only when every one names the same patient. Anything else (no such element, a
 * Group, two patients) names nobody and the resource is dropped (fail closed).
 */
export function subjectOf(resource: Record<string, unknown>, plan: TypePlan, backendBase: string): string | undefined {
  for (const element of plan.context) {
    const value = resource[element];
    if (value === undefined || value === null || (Array.isArray(value) && value.length === 0)) continue;
    if (element === "id" && resource.resourceType === "Patient") return typeof value === "string" && fhirId.test(value) ? value : undefined;
    if (!Array.isArray(value)) return patientOf(value, backendBase);
    const ids = new Set(value.map((each) => patientOf(each, backendBase)));
    return ids.size === 1 ? [...ids][0] : undefined;
  }
  return undefined;
}
