import { isResourceType, searchParameterElements } from "../../protocols/fhir/r4-paths";
import { FhirError } from "./fhir-error";
import type { FhirMappingPlan } from "./fhir-mapping";

/**
 * What a search's parameters read, as a condition on each resource of its answer: a filter or a
 * sort on an element tells which resources match even when the element itself is removed, so a
 * resource is released only when its patient's decision allows every category the search read.
 */
export interface SearchRequirement {
  categories: ReadonlySet<string>;
}

/**
 * Parameters that say how to answer, not what to match. Paging cursors of stored searches
 * (HAPI's `_getpages`, `_pageId`, `_cursor`...) are not among them: a cursor carries a search the
 * export checked once, and a page asked for by its cursor alone would be released without that
 * search's requirement (refused as unknown parameters below). Offset paging repeats the search.
 */
const controls = new Set(["_count", "_offset", "_skip", "_elements", "_summary", "_format", "_pretty", "_total", "_type"]);
/** Modifiers that match within the element the parameter reads (a resource type modifier too). `:identifier` and `:text` read Reference.identifier and display, which are not released. */
const servedModifiers = new Set(["missing", "exact", "contains", "not", "above", "below", "in", "not-in", "of-type", "iterate"]);
/** Parameters that read only the structural elements (id, meta), which every released resource shows. */
const structural = new Set(["_id", "_lastUpdated", "_tag", "_profile", "_security", "_source"]);
const structuralElements = new Set(["id", "meta"]);

/**
 * The categories a search reads, from its parameters (query and form body). Refused, each named
 * (400): chained parameters and `_has` (they read other resources), `_text`, `_content`,
 * `_filter`, `_query` and other parameters whose elements are not known, wildcard includes, and
 * parameters that read an element the mapping group releases to nobody (unmapped or mapped to no
 * category). `types` are the searched types (undefined: a system search without `_type`).
 */
export function searchRequirement(params: URLSearchParams, searchedTypes: readonly string[] | undefined, plan: FhirMappingPlan): SearchRequirement {
  const types =
    searchedTypes ??
    params
      .getAll("_type")
      .flatMap((value) => value.split(","))
      .filter(Boolean);
  const categories = new Set<string>();
  const refused: Array<{ expression: string; diagnostics: string }> = [];
  const read = (name: string, type: string, code: string): void => {
    if (structural.has(code)) return;
    const elements = searchParameterElements(type, code);
    if (!elements) {
      refused.push({ expression: name, diagnostics: `'${code}' is no search parameter of ${type} this export can decide` });
      return;
    }
    const typePlan = plan.types.get(type);
    for (const element of elements) {
      if (structuralElements.has(element) || typePlan?.context.includes(element)) continue;
      const category = typePlan?.categories.get(element);
      if (category === undefined) refused.push({ expression: name, diagnostics: `it reads ${type}.${element}, which this export releases to nobody` });
      else categories.add(category);
    }
  };
  for (const [name, value] of params) {
    const code = name.split(":")[0]!;
    // A chain can follow a type modifier (`subject:Patient.identifier`): the whole name is looked at.
    if (name.includes(".") || code === "_has") {
      refused.push({ expression: name, diagnostics: "chained and _has parameters read other resources: not served" });
      continue;
    }
    const modifier = name.includes(":") ? name.slice(code.length + 1) : undefined;
    if (modifier !== undefined && !servedModifiers.has(modifier) && !isResourceType(modifier)) {
      refused.push({ expression: name, diagnostics: `the modifier :${modifier} is not served: what it reads cannot be decided` });
      continue;
    }
    if (controls.has(code) || structural.has(code)) continue;
    if (code === "_include" || code === "_revinclude") {
      const [type, parameter] = value.split(":");
      if (!type || !parameter || value.includes("*"))
        refused.push({ expression: `${name}=${value}`, diagnostics: "an include names Type:parameter, no wildcard" });
      else read(`${name}=${value}`, type, parameter);
      continue;
    }
    if (code === "_sort") {
      for (const key of value.split(",").filter(Boolean))
        for (const type of types.length > 0 ? types : [""]) read(`${name}=${key}`, type, key.replace(/^-/, ""));
      continue;
    }
    if (code.startsWith("_")) {
      refused.push({ expression: name, diagnostics: `${code} is not served: what it reads cannot be decided` });
      continue;
    }
    if (types.length === 0) refused.push({ expression: name, diagnostics: "a system search names its types (_type) to filter" });
    for (const type of types) read(name, type, code);
  }
  if (refused.length > 0) throw new FhirError(400, "not-supported", "search parameters this export cannot decide", refused);
  return { categories };
}
