import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { promisify } from "node:util";
import type { NatsConnection } from "@nats-io/transport-node";
import type { AuditRecord } from "../../actors/runtime/event-log";
import type { NatsServerProcess } from "../../service/nats-server";
import { call as request, type Body } from "../../testkit/http";
import { connectTo, startNats, storedMessages, storedTraceRecords } from "../../testkit/nats";
import { NodeProcess } from "../../testkit/node-process";
import { fhirPolicy } from "../../testkit/policy";
import { freePorts } from "../../testkit/ports";
import { listening, until } from "../../testkit/wait";
import { FhirServerFixture } from "../../testkit/fhir-server";
import { createPopulation } from "../fixtures/population";

const cluster = { HEARTBEAT_MS: "1000", LEASE_TTL_MS: "4000" };
const redactedSystem = "http://terminology.hl7.org/CodeSystem/v3-ObservationValue";

interface FhirAnswer {
  status: number;
  type: string | null;
  text: string;
  json: Body;
}

async function fhirFetch(url: string, init: RequestInit = {}): Promise<FhirAnswer> {
  const response = await fetch(url, init);
  const text = await response.text();
  let json: Body;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: response.status, type: response.headers.get("content-type"), text, json };
}

/** An OperationOutcome answer: the status, FHIR JSON, one error issue with this code. */
function assertOutcome(answer: FhirAnswer, status: number, code: string, what: string): void {
  assert.equal(answer.status, status, `${what}: ${answer.text}`);
  assert.match(answer.type ?? "", /^application\/fhir\+json/, what);
  assert.equal(answer.json?.resourceType, "OperationOutcome", `${what}: ${answer.text}`);
  assert.equal(answer.json.issue[0].severity, "error", what);
  assert.equal(answer.json.issue[0].code, code, `${what}: ${answer.text}`);
}

const entriesOf = (bundle: Body): Body[] => (bundle.entry ?? []).map((entry: Body) => entry.resource);
const hasRedactedLabel = (resource: Body) =>
  (resource.meta?.security ?? []).some((label: Body) => label.system === redactedSystem && label.code === "REDACTED");

describe("FHIR exports (issue 23)", () => {
  let nats: NatsServerProcess;
  let nodes: NodeProcess[] = [];
  let nc: NatsConnection;
  let ports: number[];
  const fhir = new FhirServerFixture();
  const dead = new Set<NodeProcess>();
  const live = () => nodes.find((n) => !dead.has(n))!;
  const call = (method: string, path: string, body?: unknown) => request(live(), method, path, body);
  const fhirBody = (extra: Record<string, unknown> = {}) => ({
    type: "fhir",
    endpoint: fhir.base,
    resolverGroup: "fhir-clinical",
    metadata: { type: "platformUse", purposeId: "service" },
    ...extra,
  });
  /** Observation ids by patient. */
  const observations = new Map<string, string[]>();
  let groupObservation = "";
  let unownedObservation = "";

  before(async () => {
    nats = await startNats();
    ports = await freePorts(4);
    [nodes] = await Promise.all([
      NodeProcess.startAll(["fhir-1", "fhir-2"].map((nodeId) => ({ nodeId, natsUrl: nats.url, env: { ...cluster, EXPORT_PORTS: `${ports[3]}-${ports[3]}` } }))),
      fhir.start(),
    ]);
    assert.equal((await call("PUT", "/config", fhirPolicy())).status, 200);
    await createPopulation(call);
    nc = await connectTo(nats.url);
    // Patients whose ids are user ids: accepted (allowed), not-accepted (no terms: dropped), child (allowed through the guardian).
    for (const userId of ["accepted", "not-accepted", "child"]) {
      await fhir.repo.createResource(
        {
          resourceType: "Patient",
          id: userId,
          name: [{ family: `Family-${userId}` }],
          birthDate: "1990-01-01",
          telecom: [{ system: "phone", value: `555-${userId}` }],
          address: [{ city: `City-${userId}` }],
          gender: "other",
        },
        { assignedId: true },
      );
      const ids: string[] = [];
      for (let n = 0; n < 3; n++) {
        const created = await fhir.create({
          resourceType: "Observation",
          status: "final",
          code: { text: `code-${userId}-${n}` },
          subject: { reference: `Patient/${userId}` },
          valueQuantity: { value: n, unit: "kg" },
          note: [{ text: `note-${userId}-${n}` }],
        });
        ids.push(created.id);
      }
      observations.set(userId, ids);
      await fhir.create({ resourceType: "Condition", subject: { reference: `Patient/${userId}` }, code: { text: `condition-${userId}` } });
    }
    groupObservation = (await fhir.create({ resourceType: "Observation", status: "final", code: { text: "group" }, subject: { reference: "Group/everyone" } }))
      .id;
    unownedObservation = (await fhir.create({ resourceType: "Observation", status: "final", code: { text: "unowned" } })).id;
  });

  after(async () => {
    await nc?.close();
    await Promise.all(nodes.filter((n) => !dead.has(n)).map((n) => n.kill()));
    await fhir.stop();
    await nats?.stop();
  });

  test("lifecycle: bad bodies and mapping paths refused (each listed), create, stop, start, delete; audit in category fhir", async () => {
    const badGroup = fhirPolicy();
    badGroup.mappingGroups.push({
      name: "fhir-typos",
      fieldMappings: [
        { recordField: "Patient.id", resourceContext: true },
        { recordField: "Patient.nmae", categoryId: "identity" },
        { recordField: "Obsrvation.code", categoryId: "usage" },
        { recordField: "Observation.code.text", categoryId: "usage" },
        { recordField: "Observation.status", resourceContext: true },
      ],
    });
    assert.equal((await call("PUT", "/config", badGroup)).status, 200);
    const refused: Array<[Record<string, unknown>, string[]]> = [
      [fhirBody({ endpoint: undefined }), ["endpoint"]],
      [fhirBody({ endpoint: "127.0.0.1:8080" }), ["endpoint"]],
      [fhirBody({ endpoint: "ftp://127.0.0.1/fhir" }), ["endpoint"]],
      [fhirBody({ endpoint: "http://user:secret@127.0.0.1:8080/fhir" }), ["endpoint"]],
      [fhirBody({ strict: true }), ["strict"]],
      [fhirBody({ backendTls: "require" }), ["backendTls"]],
      [fhirBody({ backendCa: "-----BEGIN CERTIFICATE-----" }), ["backendCa"]],
      [fhirBody({ credentials: { user: "u", password: "p" } }), ["credentials"]],
      [
        fhirBody({ resolverGroup: "users-table" }),
        ["resolverGroup:users.id", "resolverGroup:users.email", "resolverGroup:users.login", "resolverGroup:users.name", "resolverGroup:users.clicks"],
      ],
      [
        fhirBody({ resolverGroup: "fhir-typos" }),
        ["resolverGroup:Patient.nmae", "resolverGroup:Obsrvation.code", "resolverGroup:Observation.code.text", "resolverGroup:Observation.status"],
      ],
    ];
    for (const [body, paths] of refused) {
      const answer = await call("PUT", "/export", body);
      assert.equal(answer.status, 400, JSON.stringify(answer.body));
      assert.equal(answer.body.error.code, "ERR_EXPORT_INVALID");
      assert.deepEqual(
        answer.body.error.details.map((d: Body) => d.path),
        paths,
        JSON.stringify(answer.body),
      );
    }
    assert.deepEqual((await call("GET", "/export")).body.exports, [], "nothing was created by a refused body");

    const created = await call("PUT", "/export", fhirBody({ port: ports[0] }));
    assert.equal(created.status, 200, JSON.stringify(created.body));
    const id: string = created.body.id;
    assert.equal(created.body.type, "fhir");
    assert.equal(created.body.endpoint, fhir.base);
    await until("the FHIR port answers", () => listening(ports[0]!));
    const read = await fhirFetch(`http://127.0.0.1:${ports[0]}/Patient/accepted`);
    assert.equal(read.status, 200, read.text);
    const listed = (await call("GET", "/export")).body.exports.find((e: Body) => e.id === id);
    assert.equal(listed.status, "active");
    assert.deepEqual([listed.serving.rows.in, listed.serving.rows.kept], [1, 1]);

    assert.equal((await call("PUT", `/export/stop?id=${id}`)).body.status, "inactive");
    await until("the FHIR port closes", async () => !(await listening(ports[0]!)));
    assert.equal((await call("PUT", `/export/start?id=${id}`)).body.status, "active");
    await until("the FHIR port opens again", () => listening(ports[0]!));
    assert.equal((await fhirFetch(`http://127.0.0.1:${ports[0]}/Patient/accepted`)).status, 200);
    assert.equal((await call("DELETE", `/export?id=${id}`)).status, 200);
    await until("the FHIR port closes for good", async () => !(await listening(ports[0]!)));
    assert.equal((await call("GET", `/export?id=${id}`)).status, 404);

    const audit = (await storedMessages<AuditRecord>(nc, "WARDEN_AUDIT", "warden.audit.fhir.>")).filter(
      (m) => (m.data.details as { exportId?: string } | undefined)?.exportId === id,
    );
    assert.ok(
      audit.some((m) => m.data.event === "port.opened" && m.subject === "warden.audit.fhir.info"),
      "port opened, audited as fhir",
    );
    assert.ok(
      audit.some((m) => m.data.event === "port.closed" && m.subject === "warden.audit.fhir.info"),
      "port closed, audited as fhir",
    );
    const traces = await storedTraceRecords<{ userId: string; exportId?: string; allowed: boolean }>(nc, "warden.trace.export.>");
    assert.ok(
      traces.some(({ record }) => record.exportId === id && record.userId === "accepted" && record.allowed),
      "the decision for the patient read is traced with the export's id",
    );
    assert.equal((await call("PUT", "/config", fhirPolicy())).status, 200);
  });

  test("reads, searches across pages, includes and revincludes: each resource decided by its own patient; what leaks directly does not leak through the export", async () => {
    const created = await call("PUT", "/export", fhirBody({ port: ports[1] }));
    assert.equal(created.status, 200, JSON.stringify(created.body));
    const base = `http://127.0.0.1:${ports[1]}/`;
    await until("the FHIR port answers", () => listening(ports[1]!));
    const { Client } = await import("fhir-kit-client");
    const client = new Client({ baseUrl: base });
    const direct = new Client({ baseUrl: fhir.base });

    // read: the allowed patient's allowed elements, the rest removed and the resource labelled REDACTED.
    const directPatient: Body = await direct.read({ resourceType: "Patient", id: "accepted" });
    assert.deepEqual(directPatient.address, [{ city: "City-accepted" }], "the backend holds the address");
    // Seen once in a full run (a 404 for this read): a failure says which answer it was and how the export decided the patient.
    const patient: Body = await client
      .read({ resourceType: "Patient", id: "accepted" })
      .catch(async (error: { message: string; response?: { data?: unknown } }) => {
        const traces = await storedTraceRecords<{ userId: string; exportId?: string }>(nc, "warden.trace.export.>");
        const decided = traces.filter(({ record }) => record.exportId === created.body.id && record.userId === "accepted").map(({ record }) => record);
        throw new Error(`${error.message}: ${JSON.stringify(error.response?.data)}; the export's traces of accepted: ${JSON.stringify(decided)}`);
      });
    assert.equal(patient.id, "accepted");
    assert.deepEqual(patient.name, [{ family: "Family-accepted" }]);
    assert.equal(patient.birthDate, "1990-01-01");
    assert.deepEqual(patient.telecom, [{ system: "phone", value: "555-accepted" }]);
    assert.equal(patient.address, undefined, "location is not a category of the purpose");
    assert.equal(patient.gender, undefined, "an unmapped element is removed");
    assert.ok(hasRedactedLabel(patient), JSON.stringify(patient.meta));
    const version = patient.meta.versionId as string;
    const vread: Body = await client.vread({ resourceType: "Patient", id: "accepted", version });
    assert.deepEqual(vread, patient, "vread answers the version as read does");

    // A Patient without terms: its read is the same 404 as a patient that does not exist.
    const directDropped: Body = await direct.read({ resourceType: "Patient", id: "not-accepted" });
    assert.deepEqual(directDropped.name, [{ family: "Family-not-accepted" }], "the backend serves the patient without terms");
    const dropped = await fhirFetch(`${base}Patient/not-accepted`);
    const absent = await fhirFetch(`${base}Patient/no-such-patient`);
    assertOutcome(dropped, 404, "not-found", "a patient without terms");
    assert.equal(dropped.text, absent.text, "a dropped resource answers exactly what an absent one does");
    assert.doesNotMatch(dropped.text, /not-accepted|Family/);
    await assert.rejects(
      client.read({ resourceType: "Observation", id: observations.get("not-accepted")![0]! }),
      (error: Body) => error.response?.status === 404,
    );
    assertOutcome(await fhirFetch(`${base}Observation/${groupObservation}`), 404, "not-found", "an observation of a Group (no patient)");
    assertOutcome(await fhirFetch(`${base}Observation/${unownedObservation}`), 404, "not-found", "an observation without subject");

    // Search across pages with fhir-kit-client following the export's next links.
    const directPage: Body = await direct.search({ resourceType: "Observation", searchParams: { _count: 2 } });
    assert.equal(directPage.total, 11, "the backend counts every observation");
    let page: Body = await client.search({ resourceType: "Observation", searchParams: { _count: 2, _sort: "_id" } });
    const seen: Body[] = [];
    let pages = 0;
    while (page) {
      pages++;
      assert.equal(page.total, undefined, "the backend's total is not the export's to give");
      for (const link of page.link ?? []) assert.ok(link.url.startsWith(base), `link ${link.url} is under the export's base`);
      // The backend's pages whose every entry is dropped are read past by the export: an empty page only ends the
      // paging (nothing later released anything), with its self link alone.
      const next = (page.link ?? []).some((link: Body) => link.relation === "next");
      assert.ok(entriesOf(page).length > 0 || !next, `page ${pages} releases something, or is the last`);
      seen.push(...entriesOf(page));
      page = await client.nextPage({ bundle: page });
    }
    assert.ok(pages >= 3, `paged through ${pages} pages`);
    const seenIds = seen.map((o) => o.id).sort();
    assert.deepEqual(
      seenIds,
      [...observations.get("accepted")!, ...observations.get("child")!].sort(),
      "only the allowed patients' observations, every one of them",
    );
    for (const observation of seen) {
      assert.deepEqual(
        Object.keys(observation).sort(),
        ["code", "id", "meta", "resourceType", "subject", "valueQuantity"],
        "status (no category) and note (unmapped) removed",
      );
      assert.ok(hasRedactedLabel(observation));
    }

    // _include and _revinclude: every included resource decided by its own patient.
    const included: Body = await client.search({ resourceType: "Observation", searchParams: { _include: "Observation:subject", _count: 50 } });
    const includedPatients = entriesOf(included)
      .filter((r) => r.resourceType === "Patient")
      .map((r) => r.id)
      .sort();
    assert.deepEqual(includedPatients, ["accepted", "child"]);
    const directIncluded: Body = await direct.search({ resourceType: "Observation", searchParams: { _include: "Observation:subject", _count: 50 } });
    assert.ok(
      entriesOf(directIncluded).some((r) => r.id === "not-accepted"),
      "directly, the patient without terms is included",
    );
    const revincluded: Body = await client.search({ resourceType: "Patient", searchParams: { _revinclude: "Observation:subject", _count: 50 } });
    const byType = (type: string) => entriesOf(revincluded).filter((r) => r.resourceType === type);
    assert.deepEqual(
      byType("Patient")
        .map((r) => r.id)
        .sort(),
      ["accepted", "child"],
    );
    assert.deepEqual(
      byType("Observation")
        .map((r) => r.id)
        .sort(),
      [...observations.get("accepted")!, ...observations.get("child")!].sort(),
    );
    assert.ok(revincluded.entry.every((entry: Body) => entry.fullUrl === undefined || entry.fullUrl.startsWith(base)));

    // Observations of an allowed and a dropped patient asked for in one search.
    const mixed: Body = await client.search({ resourceType: "Observation", searchParams: { subject: "Patient/accepted,Patient/not-accepted" } });
    assert.deepEqual(
      entriesOf(mixed)
        .map((o) => o.subject.reference)
        .sort(),
      ["Patient/accepted", "Patient/accepted", "Patient/accepted"],
    );

    // Searching on an element tells of it even when the element is removed: a search that reads a
    // category the purpose does not allow releases nothing of the patients who do not allow it,
    // and one that reads an element released to nobody is refused.
    const byCity: Body = await direct.search({ resourceType: "Patient", searchParams: { "address-city": "City-accepted" } });
    assert.deepEqual(
      entriesOf(byCity).map((p) => p.id),
      ["accepted"],
      "directly, the city search finds the patient",
    );
    const cityThrough = await fhirFetch(`${base}Patient?address-city=City-accepted`);
    assert.equal(cityThrough.status, 200, cityThrough.text);
    assert.deepEqual(entriesOf(cityThrough.json), [], "through the export the city (location) tells nothing");
    const byName = await fhirFetch(`${base}Patient?name=Family-accepted`);
    assert.deepEqual(
      entriesOf(byName.json).map((p) => p.id),
      ["accepted"],
      "a search on an allowed element works",
    );
    const directByStatus: Body = await direct.search({ resourceType: "Observation", searchParams: { status: "final", _count: 50 } });
    assert.ok(entriesOf(directByStatus).length > 0);
    const byStatus = await fhirFetch(`${base}Observation?status=final&subject.name=Family-accepted&_text=x`);
    assertOutcome(byStatus, 400, "not-supported", "searches on what no one may see");
    assert.deepEqual(
      byStatus.json.issue.map((issue: Body) => issue.expression[0]),
      ["status", "subject.name", "_text"],
    );

    // _elements and _summary are passed to the backend; what comes back is still decided.
    fhir.requests.length = 0;
    const elements = await fhirFetch(`${base}Observation?_elements=code&_summary=data&_count=50`);
    assert.equal(elements.status, 200, elements.text);
    assert.ok(
      fhir.requests.some((r) => r.url.includes("_elements=code") && r.url.includes("_summary=data")),
      JSON.stringify(fhir.requests),
    );
    assert.equal(entriesOf(elements.json).length, 6);

    // Authentication is not enforced for fhir here: the client's Authorization reaches the backend as it was sent.
    fhir.requests.length = 0;
    assert.equal((await fhirFetch(`${base}Patient/accepted`, { headers: { authorization: "Bearer client-token" } })).status, 200);
    assert.deepEqual(
      fhir.requests.map((r) => r.authorization),
      ["Bearer client-token"],
    );

    // POST _search (form) and a system-level search.
    const posted = await fhirFetch(`${base}Observation/_search`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: "subject=Patient/not-accepted",
    });
    assert.equal(posted.status, 200, posted.text);
    assert.deepEqual(entriesOf(posted.json), [], "the patient without terms' observations are left out");
    const system = await fhirFetch(`${base}?_type=Patient`);
    assert.equal(system.status, 200, system.text);
    assert.equal(system.json.resourceType, "Bundle");

    // curl, another client: a read and a refused XML format.
    const exec = promisify(execFile);
    const curled = await exec("curl", ["-s", "-H", "accept: application/fhir+json", `${base}Condition?subject=Patient/child`]);
    const curledBundle = JSON.parse(curled.stdout);
    assert.deepEqual(
      entriesOf(curledBundle).map((c: Body) => c.code.text),
      ["condition-child"],
    );
    const xml = await exec("curl", ["-s", "-w", "\n%{http_code}", `${base}Patient/accepted?_format=xml`]);
    const [xmlBody, xmlStatus] = xml.stdout.split("\n");
    assert.equal(xmlStatus, "406");
    assert.equal(JSON.parse(xmlBody!).resourceType, "OperationOutcome");
    await call("DELETE", `/export?id=${created.body.id}`);
  });

  test("what an adversarial review found: chains behind a type modifier, a subject's display, paging past dropped entries, compartments: leaks directly, not through the export", async () => {
    const created = await call("PUT", "/export", fhirBody({ port: ports[1] }));
    assert.equal(created.status, 200, JSON.stringify(created.body));
    const base = `http://127.0.0.1:${ports[1]}/`;
    await until("the FHIR port answers", () => listening(ports[1]!));

    // A chain after a type modifier filters on the Patient's address (a category the purpose does not allow): an oracle on it.
    const chain = "Observation?subject:Patient.address-city=City-accepted";
    const chainedDirect: Body = (await fhirFetch(`${fhir.base}${chain}`)).json;
    assert.equal(entriesOf(chainedDirect).length, 3, "directly, the city picks the patient's observations");
    assertOutcome(await fhirFetch(`${base}${chain}`), 400, "not-supported", "a chain behind a type modifier");
    assertOutcome(await fhirFetch(`${base}Observation?subject:identifier=ssn|1`), 400, "not-supported", "the :identifier modifier");

    // The resource-context Reference: its patient reference stays, what else it holds (display, identifier) goes.
    const described = await fhir.create({
      resourceType: "Observation",
      status: "final",
      code: { text: "described" },
      subject: { reference: "Patient/accepted", display: "Family-accepted, SSN-123", identifier: { system: "ssn", value: "SSN-123" } },
    });
    assert.match((await fhirFetch(`${fhir.base}Observation/${described.id}`)).text, /SSN-123/, "directly, the subject's display and identifier");
    const released = await fhirFetch(`${base}Observation/${described.id}`);
    assert.equal(released.status, 200, released.text);
    assert.deepEqual(released.json.subject, { reference: "Patient/accepted" });
    assert.doesNotMatch(released.text, /SSN-123/);
    assert.ok(hasRedactedLabel(released.json));

    // Paging past dropped entries: directly, a denied patient's observations page by page (their count); through the
    // export, one empty page with no `next`, as for a patient with no observations at all.
    const denied = `Observation?subject=Patient/not-accepted&_count=1`;
    const deniedDirect: Body = (await fhirFetch(`${fhir.base}${denied}`)).json;
    assert.ok(
      deniedDirect.link.some((link: Body) => link.relation === "next"),
      "directly, a next page",
    );
    const deniedPage: Body = (await fhirFetch(`${base}${denied}`)).json;
    const nobodyPage: Body = (await fhirFetch(`${base}Observation?subject=Patient/no-such-patient&_count=1`)).json;
    for (const page of [deniedPage, nobodyPage]) {
      assert.equal(page.entry, undefined);
      assert.deepEqual(
        page.link.map((link: Body) => link.relation),
        ["self"],
        "no next link: a page that releases nothing does not tell that more matched",
      );
    }
    const countOnly: Body = (await fhirFetch(`${fhir.base}Patient?_id=not-accepted&_count=0`)).json;
    assert.ok(countOnly.total === 1 || countOnly.link.some((link: Body) => link.relation === "next"), "directly, _count=0 tells the patient exists");
    for (const id of ["not-accepted", "no-such-patient"]) {
      const page: Body = (await fhirFetch(`${base}Patient?_id=${id}&_count=0`)).json;
      assert.deepEqual([page.total, page.link.map((link: Body) => link.relation)], [undefined, ["self"]], id);
    }

    // A compartment's filter reads elements the query does not show (Observation.performer in Patient's compartment).
    assertOutcome(await fhirFetch(`${base}Patient/not-accepted/Observation`), 400, "not-supported", "a compartment search");
    await call("DELETE", `/export?id=${created.body.id}`);
  });

  test("refusals: unknown types, XML, history, operations, writes; malformed backend answers and a backend that is down give an OperationOutcome, never raw bytes", async () => {
    const created = await call("PUT", "/export", fhirBody({ port: ports[1] }));
    assert.equal(created.status, 200, JSON.stringify(created.body));
    const base = `http://127.0.0.1:${ports[1]}/`;
    await until("the FHIR port answers", () => listening(ports[1]!));
    fhir.requests.length = 0;
    assertOutcome(await fhirFetch(`${base}Nonsense/1`), 400, "not-supported", "an unknown resource type");
    assertOutcome(await fhirFetch(`${base}Nonsense?name=x`), 400, "not-supported", "a search of an unknown resource type");
    assertOutcome(await fhirFetch(`${base}Patient/accepted?_format=xml`), 406, "not-supported", "_format xml");
    assertOutcome(await fhirFetch(`${base}Patient?_format=application/fhir%2Bxml`), 406, "not-supported", "_format fhir+xml");
    assertOutcome(await fhirFetch(`${base}Patient/accepted`, { headers: { accept: "application/fhir+xml" } }), 406, "not-supported", "Accept XML");
    assertOutcome(await fhirFetch(`${base}Patient/accepted/_history`), 400, "not-supported", "instance history");
    assertOutcome(await fhirFetch(`${base}Patient/_history`), 400, "not-supported", "type history");
    assertOutcome(await fhirFetch(`${base}Patient/accepted/$everything`), 400, "not-supported", "$everything");
    assertOutcome(await fhirFetch(`${base}Observation/$lastn`), 400, "not-supported", "$lastn");
    const newPatient = JSON.stringify({ resourceType: "Patient", name: [{ family: "Intruder" }] });
    assertOutcome(
      await fhirFetch(`${base}Patient`, { method: "POST", headers: { "content-type": "application/fhir+json" }, body: newPatient }),
      403,
      "forbidden",
      "a create on a read-only export",
    );
    assertOutcome(await fhirFetch(`${base}Patient/accepted`, { method: "DELETE" }), 403, "forbidden", "a delete");
    assertOutcome(
      await fhirFetch(`${base}`, {
        method: "POST",
        headers: { "content-type": "application/fhir+json" },
        body: JSON.stringify({ resourceType: "Bundle", type: "transaction", entry: [] }),
      }),
      403,
      "forbidden",
      "a transaction",
    );
    assertOutcome(
      await fhirFetch(`${base}Patient/accepted`, { method: "PUT", headers: { "content-type": "application/xml" }, body: "<Patient/>" }),
      403,
      "forbidden",
      "an XML update on a read-only export",
    );
    // Dot segments, even encoded, are resolved within the export's own path (WHATWG URL): the backend request stays under its base.
    assertOutcome(await fhirFetch(`${base}Patient/%2E%2E/%2E%2E/admin`), 400, "not-supported", "an encoded .. does not leave the base");
    assert.deepEqual(fhir.requests, [], "no refused request reached the backend");
    const head = await fetch(`${base}Patient/accepted`, { method: "HEAD" });
    assert.equal(head.status, 200, "HEAD is answered as GET");
    assert.equal(await head.text(), "");
    fhir.requests.length = 0;

    // Malformed backend answers: the client gets the export's OperationOutcome, not the bytes.
    const oddities = [
      { status: 200, contentType: "text/html", body: "<html>Patient accepted secret-html</html>" },
      {
        status: 200,
        contentType: "application/fhir+json",
        body: '{"resourceType":"Bundle","type":"searchset","entry":[{"resource":{"resourceType":"Patient","id":"not-accepted","name":"secret-cut',
      },
      {
        status: 200,
        contentType: "application/fhir+json",
        body: '{"resourceType":"Bundle","type":"searchset","entry":{"resource":{"resourceType":"Patient","id":"not-accepted","name":"secret-entry"}}}',
      },
      { status: 200, contentType: "application/fhir+json", body: '{"resourceType":"Patient","id":"not-accepted","name":"secret-patient"}' },
      {
        status: 500,
        contentType: "application/fhir+json",
        body: '{"resourceType":"OperationOutcome","issue":[{"severity":"error","code":"exception","diagnostics":"secret-stack"}]}',
      },
      { status: 302, contentType: "text/plain", body: "secret-redirect" },
    ];
    for (const odd of oddities) {
      fhir.misbehave = () => odd;
      const answer = await fhirFetch(`${base}Patient?_count=5`);
      fhir.misbehave = undefined;
      assertOutcome(answer, 502, "exception", `malformed answer ${odd.body.slice(0, 40)}`);
      assert.doesNotMatch(answer.text, /secret/, "nothing of the backend's answer reaches the client");
    }
    const backendRefusal = {
      status: 400,
      contentType: "application/fhir+json",
      body: '{"resourceType":"OperationOutcome","issue":[{"severity":"error","code":"invalid","diagnostics":"secret-diagnostics of Patient not-accepted"}]}',
    };
    fhir.misbehave = () => backendRefusal;
    const refusal = await fhirFetch(`${base}Patient?birthdate=nonsense`);
    fhir.misbehave = undefined;
    assertOutcome(refusal, 400, "invalid", "a backend refusal");
    assert.doesNotMatch(refusal.text, /secret/);

    // A mapping group changed after the export was created is checked when it is used: a path FHIR R4 does not have serves nothing.
    const changed = fhirPolicy();
    changed.mappingGroups
      .find((g) => g.name === "fhir-clinical")!
      .fieldMappings.push({ recordField: "Observation.valueQuantiy", categoryId: "usage" }, { recordField: "Specimen.subjekt", resourceContext: true });
    assert.equal((await call("PUT", "/config", changed)).status, 200);
    await until("the changed mapping reaches the serving node", async () => (await fhirFetch(`${base}Patient/accepted`)).status === 400);
    fhir.requests.length = 0;
    const unusable = await fhirFetch(`${base}Observation?_count=5`);
    assertOutcome(unusable, 400, "invalid", "a mapping group with unknown paths");
    assert.deepEqual(
      unusable.json.issue.map((issue: Body) => issue.expression[0]),
      ["Observation.valueQuantiy", "Specimen.subjekt"],
    );
    assert.deepEqual(fhir.requests, [], "nothing is asked of the backend with an unusable mapping");
    assert.equal((await call("PUT", "/config", fhirPolicy())).status, 200);
    await until("the mapping is usable again", async () => (await fhirFetch(`${base}Patient/accepted`)).status === 200);

    // A backend that is down.
    const downPort = (await freePorts(1))[0]!;
    const down = await call("PUT", "/export", fhirBody({ port: ports[2], endpoint: `http://127.0.0.1:${downPort}/fhir/R4` }));
    assert.equal(down.status, 200, JSON.stringify(down.body));
    await until("the second FHIR port answers", () => listening(ports[2]!));
    assertOutcome(await fhirFetch(`http://127.0.0.1:${ports[2]}/Patient/accepted`), 502, "transient", "a backend that is down");
    await call("DELETE", `/export?id=${down.body.id}`);
    await call("DELETE", `/export?id=${created.body.id}`);
  });

  test("allowWrites: a create reaches the backend and its answer is decided like a read", async () => {
    const created = await call("PUT", "/export", fhirBody({ port: ports[1], allowWrites: true }));
    assert.equal(created.status, 200, JSON.stringify(created.body));
    const base = `http://127.0.0.1:${ports[1]}/`;
    await until("the FHIR port answers", () => listening(ports[1]!));
    const written = await fhirFetch(`${base}Observation`, {
      method: "POST",
      headers: { "content-type": "application/fhir+json" },
      body: JSON.stringify({
        resourceType: "Observation",
        status: "final",
        code: { text: "written" },
        subject: { reference: "Patient/accepted" },
        note: [{ text: "secret-note" }],
      }),
    });
    assert.equal(written.status, 201, written.text);
    assert.equal(written.json.code.text, "written");
    assert.equal(written.json.note, undefined, "the answer is decided as a read is");
    const stored: Body = await fhir.repo.readResource("Observation", written.json.id);
    assert.deepEqual(stored.note, [{ text: "secret-note" }], "the backend stored the whole resource");
    const forDropped = await fhirFetch(`${base}Observation`, {
      method: "POST",
      headers: { "content-type": "application/fhir+json" },
      body: JSON.stringify({ resourceType: "Observation", status: "final", code: { text: "hidden" }, subject: { reference: "Patient/not-accepted" } }),
    });
    assert.equal(forDropped.status, 201);
    assert.equal(forDropped.json.resourceType, "OperationOutcome", "a resource of a dropped patient is not shown back");
    // A batch's reads: a dropped resource answers as an absent one does (directly, 200 and its location).
    const batch = JSON.stringify({
      resourceType: "Bundle",
      type: "batch",
      entry: ["Patient/not-accepted", "Patient/no-such-patient", "Patient/accepted"].map((url) => ({ request: { method: "GET", url } })),
    });
    const statuses = (bundle: Body) => bundle.entry.map((entry: Body) => entry.response.status.split(" ")[0]);
    const batchDirect: Body = (await fhirFetch(fhir.base, { method: "POST", headers: { "content-type": "application/fhir+json" }, body: batch })).json;
    assert.deepEqual(statuses(batchDirect), ["200", "404", "200"], "directly, the dropped patient exists");
    const batchAnswer = await fhirFetch(base, { method: "POST", headers: { "content-type": "application/fhir+json" }, body: batch });
    assert.equal(batchAnswer.status, 200, batchAnswer.text);
    assert.deepEqual(statuses(batchAnswer.json), ["404", "404", "200"]);
    assert.deepEqual(batchAnswer.json.entry[0], batchAnswer.json.entry[1], "the dropped patient's entry is the absent one's");
    assert.doesNotMatch(batchAnswer.text, /Family-not-accepted|Patient\/not-accepted/);
    assertOutcome(
      await fhirFetch(`${base}Patient/accepted`, { method: "PUT", headers: { "content-type": "application/xml" }, body: "<Patient/>" }),
      415,
      "not-supported",
      "XML body",
    );
    await call("DELETE", `/export?id=${created.body.id}`);
  });

  test("SIGKILL of the serving node: the surviving node serves the export on the same port", async () => {
    const created = await call("PUT", "/export", fhirBody({ port: ports[3] }));
    assert.equal(created.status, 200, JSON.stringify(created.body));
    const id: string = created.body.id;
    const serving = async () => (await call("GET", `/export?id=${id}`)).body.serving?.nodeId as string | undefined;
    await until("a node serves the export", async () => (await serving()) !== undefined && (await listening(ports[3]!)));
    const before = await fhirFetch(`http://127.0.0.1:${ports[3]}/Patient/accepted`);
    assert.equal(before.status, 200);
    const servingNode = await serving();
    const killed = nodes.find((n) => n.nodeId === servingNode);
    assert.ok(killed, `the serving node ${servingNode} is one of the test's`);
    await killed.kill();
    dead.add(killed);
    await until(
      "the surviving node serves the export",
      async () => (await listening(ports[3]!)) && (await fhirFetch(`http://127.0.0.1:${ports[3]}/Patient/accepted`)).status === 200,
      30_000,
    );
    assert.notEqual(await serving(), killed.nodeId);
    const after = await fhirFetch(`http://127.0.0.1:${ports[3]}/Patient/accepted`);
    assert.deepEqual(after.json, before.json, "the same answer from the new node");
    assertOutcome(await fhirFetch(`http://127.0.0.1:${ports[3]}/Patient/not-accepted`), 404, "not-found", "still dropped after failover");
  });
});
