import { r4Elements } from "./r4-elements";

interface TypeElements {
  elements: ReadonlySet<string>;
  references: ReadonlySet<string>;
  /** Search parameter code -> the top-level elements it reads. */
  search: ReadonlyMap<string, readonly string[]>;
}

let index: Map<string, TypeElements> | undefined;

/** The generated index as sets, made on first use (a node that serves no FHIR export never builds it). */
function types(): Map<string, TypeElements> {
  if (!index) {
    index = new Map();
    for (const [type, { elements, references, search }] of Object.entries(r4Elements)) {
      const parameters = new Map(
        search
          .split(" ")
          .filter(Boolean)
          .map((entry) => {
            const [code, names] = entry.split("=") as [string, string];
            return [code, names.split(",")] as const;
          }),
      );
      index.set(type, { elements: new Set(elements.split(" ")), references: new Set(references.split(" ").filter(Boolean)), search: parameters });
    }
  }
  return index;
}

/** Whether `type` is a FHIR R4 resource type (case-sensitive, as FHIR URLs are). */
export function isResourceType(type: string): boolean {
  return types().has(type);
}

/** Whether `element` is a top-level element of the resource type (`_birthDate`, a primitive's extensions, counts as `birthDate`). */
export function isElementOf(type: string, element: string): boolean {
  return types().get(type)?.elements.has(element) === true;
}

/** Whether the element is a Reference (may hold `Patient/<id>`). */
export function isReferenceElement(type: string, element: string): boolean {
  return types().get(type)?.references.has(element) === true;
}

/** The top-level elements a search parameter of the type reads; undefined when R4 has no such parameter (or its expression is not one the index could read). */
export function searchParameterElements(type: string, code: string): readonly string[] | undefined {
  return types().get(type)?.search.get(code);
}

/** A mapping path `ResourceType.element`, split; undefined when it has not that shape. */
export function splitPath(path: string): { type: string; element: string } | undefined {
  const match = /^([A-Z][A-Za-z]*)\.([a-z][A-Za-z0-9]*)$/.exec(path);
  return match ? { type: match[1]!, element: match[2]! } : undefined;
}

/**
 * Why a mapping's record field is no FHIR R4 path this export can use; undefined when it is one.
 * Resource-context fields must be `Patient.id` or a Reference element.
 */
export function pathProblem(path: string, resourceContext: boolean): string | undefined {
  const parts = splitPath(path);
  if (!parts) {
    const nested = /^([A-Z][A-Za-z]*)\.[a-z][A-Za-z0-9]*\./.exec(path);
    if (nested && isResourceType(nested[1]!)) return "nested paths are not taken: map the top-level element";
    return "not a FHIR path ResourceType.element";
  }
  if (!isResourceType(parts.type)) return `'${parts.type}' is no FHIR R4 resource type`;
  if (!isElementOf(parts.type, parts.element)) return `'${parts.element}' is no element of ${parts.type} in FHIR R4`;
  if (resourceContext && !(parts.type === "Patient" && parts.element === "id") && !isReferenceElement(parts.type, parts.element))
    return "a resource-context element is Patient.id or a Reference element";
  return undefined;
}
