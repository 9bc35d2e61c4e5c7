import { test } from "node:test";
import assert from "node:assert/strict";
import { interactionOf } from "../../proxies/fhir/fhir-interaction";
import { FhirError } from "../../proxies/fhir/fhir-error";
import { exportUrl } from "../../proxies/fhir/fhir-links";
import { planOf } from "../../proxies/fhir/fhir-mapping";
import { subjectOf } from "../../proxies/fhir/patient-reference";
import { searchRequirement } from "../../proxies/fhir/search-requirement";

const backend = "http://fhir.internal:8080/fhir/R4/";
const exportBase = "http://warden:9000/";

test("the patient of a resource: Patient.id, a Patient reference, one patient in a list; anything else is nobody (dropped)", () => {
  const patient = { context: ["id"], categories: new Map() };
  const observation = { context: ["subject", "performer"], categories: new Map() };
  assert.equal(subjectOf({ resourceType: "Patient", id: "p-1" }, patient, backend), "p-1");
  assert.equal(subjectOf({ resourceType: "Patient", id: "bad/id" }, patient, backend), undefined);
  assert.equal(subjectOf({ resourceType: "Observation", subject: { reference: "Patient/p-1" } }, observation, backend), "p-1");
  assert.equal(subjectOf({ resourceType: "Observation", subject: { reference: "Patient/p-1/_history/3" } }, observation, backend), "p-1");
  assert.equal(
    subjectOf({ resourceType: "Observation", subject: { reference: `${backend}Patient/p-1` } }, observation, backend),
    "p-1",
    "an absolute reference under the backend's base",
  );
  assert.equal(
    subjectOf({ resourceType: "Observation", subject: { reference: "http://elsewhere/Patient/p-1" } }, observation, backend),
    undefined,
    "another server's patient is not this one's user",
  );
  assert.equal(subjectOf({ resourceType: "Observation", subject: { reference: "Group/g" } }, observation, backend), undefined);
  assert.equal(subjectOf({ resourceType: "Observation", subject: { display: "someone" } }, observation, backend), undefined);
  assert.equal(
    subjectOf({ resourceType: "Observation", performer: [{ reference: "Patient/p-2" }, { reference: "Patient/p-2" }] }, observation, backend),
    "p-2",
    "the first non-empty context element",
  );
  assert.equal(
    subjectOf({ resourceType: "Observation", performer: [{ reference: "Patient/p-2" }, { reference: "Patient/p-3" }] }, observation, backend),
    undefined,
    "two patients: nobody",
  );
  assert.equal(
    subjectOf({ resourceType: "Observation", subject: { reference: "Group/g" }, performer: [{ reference: "Patient/p-2" }] }, observation, backend),
    undefined,
    "an unresolvable first element is not skipped",
  );
  assert.equal(subjectOf({ resourceType: "Observation" }, observation, backend), undefined);
});

test("links: under the backend's base or relative, moved to the export's base; anything else left out", () => {
  assert.equal(exportUrl(`${backend}Observation?_count=2&_offset=2`, backend, exportBase), `${exportBase}Observation?_count=2&_offset=2`);
  assert.equal(exportUrl("Patient/1", backend, exportBase), `${exportBase}Patient/1`);
  assert.equal(exportUrl("?_getpages=abc", backend, exportBase), `${exportBase}?_getpages=abc`);
  assert.equal(exportUrl("http://fhir.internal:8080/admin", backend, exportBase), undefined);
  assert.equal(exportUrl("//evil.example/Patient", backend, exportBase), undefined);
  assert.equal(exportUrl("https://evil.example/fhir/R4/Patient", backend, exportBase), undefined);
  assert.equal(exportUrl(42, backend, exportBase), undefined);
});

test("interactions: read, vread, search (type, system, POST _search), writes; history, operations and compartment searches refused", () => {
  assert.deepEqual(interactionOf("GET", ["Patient", "1"]), { kind: "read", type: "Patient" });
  assert.deepEqual(interactionOf("GET", ["Patient", "1", "_history", "2"]), { kind: "read", type: "Patient" });
  for (const [method, path] of [
    ["GET", ["Patient"]],
    ["POST", ["Patient", "_search"]],
    ["GET", ["Patient", "_search"]],
  ] as const)
    assert.deepEqual(interactionOf(method, path), { kind: "search", types: ["Patient"] }, `${method} ${path.join("/")}`);
  for (const [method, path] of [
    ["GET", []],
    ["POST", ["_search"]],
  ] as const)
    assert.deepEqual(interactionOf(method, path), { kind: "search" }, `${method} ${path.join("/")}`);
  for (const [method, path] of [
    ["POST", []],
    ["POST", ["Patient"]],
    ["PUT", ["Patient", "1"]],
    ["PATCH", ["Patient", "1"]],
    ["DELETE", ["Patient", "1"]],
    ["DELETE", ["Patient"]],
  ] as const)
    assert.deepEqual(interactionOf(method, path), { kind: "write" }, `${method} ${path.join("/")}`);
  assert.deepEqual(interactionOf("GET", ["metadata"]), { kind: "capabilities" });
  const refused = (method: string, path: string[], status: number) =>
    assert.throws(
      () => interactionOf(method, path),
      (error: unknown) => error instanceof FhirError && error.status === status,
      `${method} ${path.join("/")}`,
    );
  // A compartment's filter reads elements (Observation.performer) the query does not show.
  refused("GET", ["Patient", "1", "Observation"], 400);
  refused("GET", ["Practitioner", "x", "Observation"], 400);
  refused("GET", ["Patient", "1", "_history"], 400);
  refused("GET", ["_history"], 400);
  refused("GET", ["Patient", "1", "$everything"], 400);
  refused("POST", ["$export"], 400);
  refused("GET", ["Patients", "1"], 400);
  refused("GET", ["Patient", "no/such"], 404);
  refused("OPTIONS", ["Patient"], 405);
  refused("GET", ["Patient", ".."], 404);
  refused("GET", ["Patient", "..", "Observation"], 404);
  refused("PUT", ["Patient", "."], 404);
});

test("a search's parameters: the categories they read, or refused when no one may see what they read", () => {
  const field = (recordField: string, category: string | undefined, resourceOrder = -1) => [recordField, { recordField, category, resourceOrder }] as const;
  const plan = planOf({
    key: "k",
    fields: new Map([
      field("Patient.id", undefined, 0),
      field("Patient.name", "identity"),
      field("Patient.address", "location"),
      field("Observation.subject", undefined, 1),
      field("Observation.code", "usage"),
      field("Observation.status", undefined),
    ]),
  });
  const read = (query: string, types?: string[]) => [...searchRequirement(new URLSearchParams(query), types, plan).categories].sort();
  assert.deepEqual(read("_count=5&_summary=data&_elements=code&_id=1&_lastUpdated=gt2020", ["Observation"]), []);
  assert.deepEqual(read("subject=Patient/1&_include=Observation:subject", ["Observation"]), [], "resource context reads no category");
  assert.deepEqual(read("code=x&_sort=-code", ["Observation"]), ["usage"]);
  assert.deepEqual(read("name=Smith&address-city=Paris", ["Patient"]), ["identity", "location"]);
  assert.deepEqual(read("_type=Patient&name=Smith"), ["identity"], "a system search reads the parameter in each _type");
  const refused = (query: string, types: string[] | undefined, expressions: string[]) =>
    assert.throws(
      () => searchRequirement(new URLSearchParams(query), types, plan),
      (error: unknown) =>
        error instanceof FhirError && error.status === 400 && JSON.stringify(error.items?.map((item) => item.expression)) === JSON.stringify(expressions),
      query,
    );
  refused("status=final", ["Observation"], ["status"]);
  refused("subject.name=Smith&_has:Observation:subject:code=x", ["Patient"], ["subject.name", "_has:Observation:subject:code"]);
  refused("_text=cancer&_content=x&_filter=name eq x", ["Patient"], ["_text", "_content", "_filter"]);
  refused("gender=other&birthdate=1990", ["Patient"], ["gender", "birthdate"]);
  refused("name=x", undefined, ["name"]);
  refused("_include=*", ["Patient"], ["_include=*"]);
  refused("_revinclude=Observation:status", ["Patient"], ["_revinclude=Observation:status"]);
  // A chain behind a type modifier reads the Patient's elements (an oracle on an identifier no one may see).
  refused(
    "subject:Patient.identifier=SSN-1&patient:Patient.address-city=Paris",
    ["Observation"],
    ["subject:Patient.identifier", "patient:Patient.address-city"],
  );
  // :identifier and :text read Reference.identifier and display, which are not released.
  refused("subject:identifier=ssn|1&code:text=x", ["Observation"], ["subject:identifier", "code:text"]);
  assert.deepEqual(read("subject:Patient=1&code:not=x&code:missing=false", ["Observation"]), ["usage"], "type and matching modifiers read their element only");
  // Cursors of stored searches carry a search the export checked once: a page by cursor alone is refused.
  refused("_getpages=abc&_getpagesoffset=20&_bundletype=searchset", undefined, ["_getpages", "_getpagesoffset", "_bundletype"]);
  refused("_pageId=abc&_cursor=x&_page=2", ["Observation"], ["_pageId", "_cursor", "_page"]);
});
