import { pathProblem, splitPath } from "../../protocols/fhir/r4-paths";
import type { MappingView } from "../../exports/row-decider";

/** What the mapping group says of one resource type. */
export interface TypePlan {
  /** Resource-context elements in policy order (the first non-empty one names the patient). */
  context: readonly string[];
  /** Mapped elements and their category (undefined: mapped to none, always removed). */
  categories: ReadonlyMap<string, string | undefined>;
}

/** A mapping group read as FHIR paths: per resource type, its context and categorised elements, and the paths that are none. */
export interface FhirMappingPlan {
  key: string;
  types: ReadonlyMap<string, TypePlan>;
  problems: ReadonlyArray<{ expression: string; diagnostics: string }>;
}

/** Each record field that is not a FHIR R4 path this export can use, with why (the 400 lists every one). */
export function mappingProblems(fields: Iterable<{ recordField: string; resourceContext: boolean }>): Array<{ expression: string; diagnostics: string }> {
  const problems: Array<{ expression: string; diagnostics: string }> = [];
  for (const field of fields) {
    const problem = pathProblem(field.recordField, field.resourceContext);
    if (problem) problems.push({ expression: field.recordField, diagnostics: problem });
  }
  return problems;
}

/** The mapping view (the export decider's) as a per-type plan. */
export function planOf(mapping: MappingView): FhirMappingPlan {
  const fields = [...mapping.fields.values()];
  const problems = mappingProblems(fields.map((field) => ({ recordField: field.recordField, resourceContext: field.resourceOrder >= 0 })));
  const context = new Map<string, Array<{ element: string; order: number }>>();
  const categories = new Map<string, Map<string, string | undefined>>();
  for (const field of fields) {
    const path = splitPath(field.recordField);
    if (!path) continue;
    if (field.resourceOrder >= 0) {
      const list = context.get(path.type) ?? [];
      list.push({ element: path.element, order: field.resourceOrder });
      context.set(path.type, list);
    } else {
      const map = categories.get(path.type) ?? new Map<string, string | undefined>();
      map.set(path.element, field.category);
      categories.set(path.type, map);
    }
  }
  const types = new Map<string, TypePlan>();
  for (const type of new Set([...context.keys(), ...categories.keys()])) {
    types.set(type, {
      context: (context.get(type) ?? []).sort((a, b) => a.order - b.order).map((entry) => entry.element),
      categories: categories.get(type) ?? new Map(),
    });
  }
  return { key: mapping.key, types, problems };
}
