import { isResourceType } from "../../protocols/fhir/r4-paths";
import { FhirError, notFound } from "./fhir-error";
import { fhirId } from "./patient-reference";

/** What a client asks of the export, from its method and path (relative to the export's base). */
export type FhirInteraction =
  | { kind: "read"; type: string }
  /** types: the searched types (undefined: a system search, its types from `_type`). */
  | { kind: "search"; types?: string[] }
  | { kind: "capabilities" }
  /** create, update, patch, delete, transaction and batch: only with allowWrites. */
  | { kind: "write" };

const refusedOperation = (what: string) =>
  new FhirError(400, "not-supported", `${what} is not served by this export: its answer cannot be decided resource by resource`);

/**
 * Reads what a request is, or throws the refusal: history and operations (`$everything`,
 * `$export`...) are refused, an unknown resource type is refused before the backend is asked,
 * an id that is no FHIR id is not found.
 */
export function interactionOf(method: string, segments: readonly string[]): FhirInteraction {
  // `.` and `..` (sent encoded, so URL parsing kept them) would move the backend request out of its path.
  if (segments.some((segment) => /^\.+$/.test(segment))) throw notFound();
  const operation = segments.find((segment) => segment.startsWith("$"));
  if (operation) throw refusedOperation(`the operation ${operation}`);
  if (segments.includes("_history") && !(segments.length === 4 && segments[2] === "_history" && (method === "GET" || method === "HEAD")))
    throw refusedOperation("history");
  const [type, id, third, fourth] = segments;
  if (type === undefined) {
    if (method === "GET" || method === "HEAD") return { kind: "search" };
    if (method === "POST") return { kind: "write" };
    throw methodRefused(method);
  }
  if (type === "metadata" && segments.length === 1 && (method === "GET" || method === "HEAD")) return { kind: "capabilities" };
  if (type === "_search" && segments.length === 1 && method === "POST") return { kind: "search" };
  if (!isResourceType(type)) throw new FhirError(400, "not-supported", `'${type}' is no FHIR R4 resource type`);
  if (id !== undefined && !(id === "_search" && segments.length === 2) && !fhirId.test(id)) throw notFound();
  switch (method) {
    case "GET":
    case "HEAD":
      if (segments.length === 1) return { kind: "search", types: [type] };
      if (segments.length === 2) return id === "_search" ? { kind: "search", types: [type] } : { kind: "read", type };
      if (segments.length === 4 && third === "_history" && fhirId.test(fourth!)) return { kind: "read", type };
      // A compartment search (Patient/1/Observation, Practitioner/x/Observation) filters by the compartment's
      // definition, which reads elements such as Observation.performer that the export may release to nobody,
      // and none of which the query shows: refused, as a filter on them would be (search the type with subject or patient).
      if (segments.length === 3 && isResourceType(third!)) throw refusedOperation("a compartment search");
      throw notFound();
    case "POST":
      if (segments.length === 2 && id === "_search") return { kind: "search", types: [type] };
      if (segments.length === 1) return { kind: "write" };
      throw methodRefused(method);
    case "PUT":
    case "PATCH":
    case "DELETE":
      if (segments.length <= 2) return { kind: "write" };
      throw methodRefused(method);
    default:
      throw methodRefused(method);
  }
}

function methodRefused(method: string): FhirError {
  return new FhirError(405, "not-supported", `${method} is not served on this path`);
}
