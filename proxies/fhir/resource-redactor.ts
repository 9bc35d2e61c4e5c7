import type { Decision } from "../../decision/types";
import type { ExportDecider } from "../../exports/export-decider";
import { FhirError } from "./fhir-error";
import { planOf, type FhirMappingPlan, type TypePlan } from "./fhir-mapping";
import { subjectOf } from "./patient-reference";
import type { SearchRequirement } from "./search-requirement";

/** Resources in and out, and elements removed from kept ones: what GET /export shows. */
export interface ResourceCounts {
  in: number;
  kept: number;
  dropped: number;
  valuesNulled: number;
}

type Resource = Record<string, unknown>;

/** Elements every kept resource keeps: what makes it a resource at all. */
const structural = new Set(["resourceType", "id", "meta"]);

/** The security label of a resource with elements removed (http://terminology.hl7.org/CodeSystem/v3-ObservationValue). */
export const redactedLabel = { system: "http://terminology.hl7.org/CodeSystem/v3-ObservationValue", code: "REDACTED", display: "redacted" } as const;

const isResource = (value: unknown): value is Resource =>
  typeof value === "object" && value !== null && !Array.isArray(value) && typeof (value as Resource).resourceType === "string";

/** Whether a resource-context value holds more than what names the patient (a Reference's `reference` and `type`, each of a list). */
function holdsMoreThanReference(value: unknown): boolean {
  if (Array.isArray(value)) return value.some(holdsMoreThanReference);
  if (typeof value !== "object" || value === null) return false;
  for (const [key, part] of Object.entries(value)) if (!((key === "reference" || key === "type") && typeof part === "string")) return true;
  return false;
}

/** A resource-context value cut down to what names the patient: a Reference's `reference` and `type` (each of a list); an id as it is. */
function referenceOnly(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(referenceOnly);
  if (typeof value !== "object" || value === null) return value;
  const { reference, type } = value as { reference?: unknown; type?: unknown };
  return { ...(typeof reference === "string" ? { reference } : {}), ...(typeof type === "string" ? { type } : {}) };
}

/**
 * One FHIR export's per-resource decisions (policy-semantics 4 applied to resources): each
 * resource's patient from its resource-context elements, the export's purpose decided once per
 * patient (traced by the decider before anything of that patient leaves), and in kept resources
 * every element removed whose category the decision does not allow or that the mapping does not
 * name, except the structural ones. No patient, a patient not allowed, no mapping group: dropped.
 */
export class ResourceRedactor {
  readonly counts: ResourceCounts = { in: 0, kept: 0, dropped: 0, valuesNulled: 0 };
  private cached?: FhirMappingPlan;

  constructor(
    private readonly decider: ExportDecider,
    private readonly backendBase: string,
  ) {}

  /** The mapping group as FHIR paths; a group that names paths FHIR R4 does not have serves nothing (400, each path listed). */
  async plan(): Promise<FhirMappingPlan> {
    if (!this.decider.hasPolicy()) await this.decider.warm().catch(() => undefined);
    if (!this.decider.hasPolicy()) throw new FhirError(503, "transient", "the configuration is not in memory yet; try again");
    const mapping = this.decider.mapping();
    if (this.cached?.key !== mapping.key) this.cached = planOf(mapping);
    if (this.cached.problems.length > 0)
      throw new FhirError(400, "invalid", "the export's mapping group names paths that are no FHIR R4 elements", this.cached.problems);
    return this.cached;
  }

  /**
   * Each value decided: the redacted resource, or undefined when it is dropped (also when a
   * search read a category its patient does not allow). Throws (the request fails closed) when a
   * decision cannot be made or traced.
   */
  async decideAll(values: readonly unknown[], plan: FhirMappingPlan, requirement?: SearchRequirement): Promise<Array<Resource | undefined>> {
    const subjects = values.map((value) => {
      if (!isResource(value)) return undefined;
      const typePlan = plan.types.get(value.resourceType as string);
      return typePlan && { typePlan, userId: subjectOf(value, typePlan, this.backendBase) };
    });
    const decided = new Map<string, Decision>();
    const unknown = new Set<string>();
    for (const subject of subjects) {
      if (subject?.userId === undefined || decided.has(subject.userId)) continue;
      const known = this.decider.decision(subject.userId);
      if (known) decided.set(subject.userId, known);
      else unknown.add(subject.userId);
    }
    // The decisions made now are used as made (traced before this returns): the memo may be cleared meanwhile.
    if (unknown.size > 0) for (const [userId, decision] of await this.decider.load([...unknown])) decided.set(userId, decision);
    return values.map((value, index) => {
      this.counts.in++;
      const subject = subjects[index];
      const decision = subject?.userId === undefined ? undefined : decided.get(subject.userId);
      // A search that read a category the patient does not allow would tell of the patient by matching: dropped.
      const readable = requirement === undefined || [...requirement.categories].every((category) => decision?.categoryIds.includes(category));
      const kept = decision?.allowed && readable ? this.redact(value as Resource, subject!.typePlan, decision) : undefined;
      if (kept) this.counts.kept++;
      else this.counts.dropped++;
      return kept;
    });
  }

  private redact(resource: Resource, plan: TypePlan, decision: Decision): Resource {
    const out: Resource = {};
    let removed = 0;
    for (const [key, value] of Object.entries(resource)) {
      // A primitive's id and extensions (`_birthDate`) go with the primitive.
      const element = key.startsWith("_") ? key.slice(1) : key;
      const category = plan.categories.get(element);
      const allowed = category !== undefined && decision.categoryIds.includes(category);
      if (structural.has(element) || allowed) out[key] = value;
      else if (plan.context.includes(element) && !key.startsWith("_")) {
        // The patient's reference stays (it says whose the resource is); what else the Reference holds
        // (display, identifier, extension) is data about the patient, released only with the element's category.
        if (holdsMoreThanReference(value)) {
          out[key] = referenceOnly(value);
          removed++;
        } else out[key] = value;
      } else removed++;
    }
    if (removed > 0) {
      this.counts.valuesNulled += removed;
      const meta = typeof out.meta === "object" && out.meta !== null && !Array.isArray(out.meta) ? (out.meta as Resource) : {};
      const security = Array.isArray(meta.security) ? meta.security : [];
      out.meta = { ...meta, security: [...security, redactedLabel] };
    }
    return out;
  }
}
