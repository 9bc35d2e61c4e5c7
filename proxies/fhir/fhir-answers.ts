import type { BackendAnswer } from "./fhir-backend";
import { FhirError, notFound } from "./fhir-error";
import type { FhirInteraction } from "./fhir-interaction";
import { exportUrl } from "./fhir-links";
import type { FhirMappingPlan } from "./fhir-mapping";
import type { ResourceRedactor } from "./resource-redactor";
import type { SearchRequirement } from "./search-requirement";

type Json = Record<string, unknown>;

/** What the client receives: a status, a body (undefined: none) and the headers that go with it. */
export interface FhirAnswer {
  status: number;
  body?: unknown;
  headers?: Record<string, string>;
}

const isObject = (value: unknown): value is Json => typeof value === "object" && value !== null && !Array.isArray(value);
const malformed = (what: string) => new FhirError(502, "exception", `the FHIR server's answer is malformed: ${what}`);

/** Where the answer is read from and written to. */
export interface AnswerContext {
  interaction: FhirInteraction;
  plan: FhirMappingPlan | undefined;
  /** A search's: the categories its parameters read. */
  requirement?: SearchRequirement;
  redactor: ResourceRedactor;
  backendBase: string;
  exportBase: string;
  /** A batch or transaction's: each entry's request method, in order (undefined when the request's Bundle could not be read). */
  entryMethods?: ReadonlyArray<string | undefined>;
}

/**
 * The backing server's answer made into the export's: errors as the export's own
 * OperationOutcome (never the backend's diagnostics, which may quote data), a read's resource
 * decided (dropped: the same 404 as an absent one), a Bundle's entries decided each by its own
 * patient, links moved to the export's base, the total left out.
 */
export async function answerOf(backend: BackendAnswer, context: AnswerContext): Promise<FhirAnswer> {
  const { status, json } = backend;
  if (status >= 400) throw refusalOf(status);
  if (status < 200 || status >= 300) throw malformed(`status ${status}`);
  const { interaction } = context;
  switch (interaction.kind) {
    case "capabilities": {
      if (!isObject(json) || json.resourceType !== "CapabilityStatement") throw malformed("metadata is no CapabilityStatement");
      // The backend's own address is not the export's to hand out.
      const { implementation: _implementation, ...statement } = json;
      return { status, body: statement };
    }
    case "read": {
      if (!isObject(json) || json.resourceType !== interaction.type || typeof json.id !== "string")
        throw malformed(`a read of ${interaction.type} answered no ${interaction.type}`);
      const [kept] = await context.redactor.decideAll([json], context.plan!);
      if (!kept) throw notFound();
      return { status, body: kept };
    }
    case "search": {
      if (!isObject(json) || json.resourceType !== "Bundle") throw malformed("a search answered no Bundle");
      return { status, body: await releaseBundle(json, context) };
    }
    case "write": {
      const location = locationOf(backend, context);
      if (json === undefined) return { status, headers: location };
      if (!isObject(json) || typeof json.resourceType !== "string") throw malformed("a write answered no resource");
      if (json.resourceType === "Bundle") return { status, body: await releaseBundle(json, context), headers: location };
      if (json.resourceType === "OperationOutcome")
        return {
          status,
          body: { resourceType: "OperationOutcome", issue: [{ severity: "information", code: "informational", diagnostics: "done" }] },
          headers: location,
        };
      const [kept] = await context.redactor.decideAll([json], context.plan!);
      return {
        status,
        body: kept ?? {
          resourceType: "OperationOutcome",
          issue: [{ severity: "information", code: "informational", diagnostics: "done; the resource is not shown through this export" }],
        },
        headers: location,
      };
    }
  }
}

/** The backend's refusal in the export's words: a missing resource is the export's one 404, others say only the status. */
function refusalOf(status: number): FhirError {
  if (status === 404 || status === 410) return notFound();
  if (status === 401 || status === 403)
    return new FhirError(status, status === 401 ? "login" : "forbidden", `the FHIR server refused the request's identity (status ${status})`);
  if (status < 500)
    return new FhirError(status, status === 400 || status === 422 ? "invalid" : "processing", `the FHIR server refused the request (status ${status})`);
  return new FhirError(502, "exception", `the FHIR server failed (status ${status})`);
}

/** A write's Location under the export's base (dropped if it points elsewhere). */
function locationOf(backend: BackendAnswer, context: AnswerContext): Record<string, string> | undefined {
  const location = exportUrl(backend.headers.location, context.backendBase, context.exportBase);
  return location === undefined ? undefined : { location };
}

/**
 * A Bundle as the client may see it: only the Bundle's own frame (type, id, timestamp, links
 * moved to the export's base), each entry's resource decided by its own patient (an entry whose
 * resource is dropped goes, unless it is a batch answer's status, which stays without the
 * resource), and no total: the backend's count includes what was dropped.
 */
async function releaseBundle(bundle: Json, context: AnswerContext): Promise<Json> {
  if (typeof bundle.type !== "string") throw malformed("a Bundle without a type");
  if (bundle.entry !== undefined && !Array.isArray(bundle.entry)) throw malformed("Bundle.entry is no list");
  if (bundle.link !== undefined && !Array.isArray(bundle.link)) throw malformed("Bundle.link is no list");
  const entries = (bundle.entry ?? []) as unknown[];
  const resources = entries.map((entry) => (isObject(entry) ? entry.resource : undefined));
  const decided = await context.redactor.decideAll(resources, context.plan!, context.requirement);
  const out: Json = { resourceType: "Bundle" };
  if (typeof bundle.id === "string") out.id = bundle.id;
  out.type = bundle.type;
  if (typeof bundle.timestamp === "string") out.timestamp = bundle.timestamp;
  // A page that releases nothing keeps only its self link: its `next` (or a `_count=0` page's) would tell that
  // resources the export dropped match, and paging on would count them.
  const releasesNothing = decided.every((resource) => resource === undefined);
  const links = ((bundle.link ?? []) as unknown[]).flatMap((link) => {
    if (!isObject(link) || typeof link.relation !== "string" || (releasesNothing && link.relation !== "self")) return [];
    const url = exportUrl(link.url, context.backendBase, context.exportBase);
    return url === undefined ? [] : [{ relation: link.relation, url }];
  });
  if (links.length > 0) out.link = links;
  const kept: Json[] = [];
  entries.forEach((entry, index) => {
    if (!isObject(entry)) return;
    const resource = decided[index];
    const response = isObject(entry.response) ? entryResponse(entry.response, resource !== undefined, context.entryMethods?.[index], context) : undefined;
    if (!resource && !response) return;
    const released: Json = {};
    if (resource) {
      const fullUrl = exportUrl(entry.fullUrl, context.backendBase, context.exportBase);
      if (fullUrl !== undefined) released.fullUrl = fullUrl;
      released.resource = resource;
      if (isObject(entry.search) && (entry.search.mode === "match" || entry.search.mode === "include"))
        released.search = { mode: entry.search.mode, ...(typeof entry.search.score === "number" ? { score: entry.search.score } : {}) };
    }
    if (response) released.response = response;
    kept.push(released);
  });
  if (kept.length > 0) out.entry = kept;
  return out;
}

/**
 * A batch or transaction entry's answer. A read (GET or HEAD, or an entry whose method is not
 * known) whose resource is not released answers as an absent one does (404, nothing else; an absent one's 404 in the same words): its
 * 200 and location would tell a dropped resource from one that does not exist, which a plain
 * read does not. Writes keep their status and location (the writer knows what it wrote).
 */
function entryResponse(response: Json, released: boolean, method: string | undefined, context: AnswerContext): Json | undefined {
  const read = method === undefined || method === "GET" || method === "HEAD";
  // One answer for both, in the export's words (backends write a missing one's status as "404" or "404 Not Found").
  if (read && !released && typeof response.status === "string" && /^(2|404|410)/.test(response.status)) return { status: "404 Not Found" };
  return responseOf(response, context);
}

/** A batch or transaction answer's entry status: its status line and where the resource went, no outcome (it may quote data). */
function responseOf(response: Json, context: AnswerContext): Json | undefined {
  if (typeof response.status !== "string") return undefined;
  const out: Json = { status: response.status };
  const location = exportUrl(response.location, context.backendBase, context.exportBase);
  if (location !== undefined) out.location = location;
  if (typeof response.etag === "string") out.etag = response.etag;
  if (typeof response.lastModified === "string") out.lastModified = response.lastModified;
  return out;
}
