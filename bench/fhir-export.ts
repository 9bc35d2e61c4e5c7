// Benchmark of a FHIR export (issue 23): searches answering 1,000 Observations per page, read
// through the export and directly from the same FHIR server (Medplum's router over its in-memory
// repository, in its own process), interleaved rounds, medians. Half the patients are allowed:
// the export drops half the Observations and removes unmapped elements from the rest.
import { fork, type ChildProcess } from "node:child_process";
import type { Decision } from "../decision/types";
import type { ExportDecider } from "../exports/export-decider";
import type { MappedField } from "../exports/row-decider";
import { answerOf } from "../proxies/fhir/fhir-answers";
import { planOf } from "../proxies/fhir/fhir-mapping";
import { ResourceRedactor } from "../proxies/fhir/resource-redactor";
import { reportFigure } from "./report";
import { FhirServerFixture } from "../testkit/fhir-server";
import { fhirPolicy } from "../testkit/policy";
import { freePort } from "../testkit/ports";
import { startBenchNode } from "./http-load";

const patients = Number(process.env.BENCH_PATIENTS ?? 100);
const observationsPerPatient = Number(process.env.BENCH_OBSERVATIONS_PER_PATIENT ?? 100);
const pageSize = 1000;
const rounds = Number(process.env.BENCH_ROUNDS ?? 5);
const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
const patientId = (n: number) => `bench-patient-${n}`;

/** The child process: the FHIR server with its patients and observations, its base URL sent to the parent. */
async function serveFhir(): Promise<void> {
  const fhir = await new FhirServerFixture().start();
  for (let p = 0; p < patients; p++) {
    await fhir.repo.createResource(
      { resourceType: "Patient", id: patientId(p), name: [{ family: `Family ${p}` }], birthDate: "1990-01-01" },
      { assignedId: true },
    );
    for (let o = 0; o < observationsPerPatient; o++) {
      await fhir.create({
        resourceType: "Observation",
        status: "final",
        code: { coding: [{ system: "http://loinc.org", code: "29463-7", display: "Body weight" }], text: "weight" },
        subject: { reference: `Patient/${patientId(p)}` },
        valueQuantity: { value: 60 + (o % 40), unit: "kg", system: "http://unitsofmeasure.org", code: "kg" },
        effectiveDateTime: "2026-01-01T10:00:00Z",
        note: [{ text: `note ${o}` }],
      });
    }
  }
  process.send!({ base: fhir.base });
}

/** Every page of Observations from `base`, following next links; the time it took and the resources read. */
async function readAllPages(base: string): Promise<{ ms: number; resources: number }> {
  const started = performance.now();
  let url: string | undefined = `${base}Observation?_count=${pageSize}`;
  let resources = 0;
  while (url) {
    const response = await fetch(url, { headers: { accept: "application/fhir+json" } });
    if (response.status !== 200) throw new Error(`${url}: ${response.status} ${await response.text()}`);
    const bundle = (await response.json()) as { entry?: unknown[]; link?: Array<{ relation: string; url: string }> };
    resources += bundle.entry?.length ?? 0;
    url = bundle.link?.find((link) => link.relation === "next")?.url;
  }
  return { ms: performance.now() - started, resources };
}

/**
 * The export's own work on one page, in process, without the network or the server: parse the
 * backend's page, decide each resource (verdicts already in memory, as after the first page),
 * rebuild the Bundle, serialize it. The decider is a stand-in that answers remembered verdicts.
 */
async function pageWork(backendBase: string): Promise<number> {
  const text = await (await fetch(`${backendBase}Observation?_count=${pageSize}`)).text();
  const group = fhirPolicy().mappingGroups.find((g) => g.name === "fhir-clinical")!;
  const context = group.fieldMappings.filter((field) => field.resourceContext).map((field) => field.recordField);
  const fields = new Map<string, MappedField>(
    group.fieldMappings.map((field) => [
      field.recordField,
      { recordField: field.recordField, category: field.categoryId, resourceOrder: context.indexOf(field.recordField) },
    ]),
  );
  const mapping = { key: "bench", fields };
  const verdict = (allowed: boolean): Decision => ({
    allowed,
    flow: "platform",
    categoryIds: allowed ? ["contact", "credentials", "identity", "usage"] : [],
    reasons: [],
    summary: "",
    revision: 1,
  });
  const remembered = new Map(Array.from({ length: patients }, (_, p) => [patientId(p), verdict(p % 2 === 0)]));
  const decider = {
    hasPolicy: () => true,
    mapping: () => mapping,
    decision: (userId: string) => remembered.get(userId),
    load: async () => new Map(),
  } as unknown as ExportDecider;
  const redactor = new ResourceRedactor(decider, backendBase);
  const plan = planOf(mapping);
  const once = async () => {
    const answer = await answerOf(
      { status: 200, json: JSON.parse(text), headers: {} },
      { interaction: { kind: "search", types: ["Observation"] }, plan, redactor, backendBase, exportBase: "http://127.0.0.1:1/" },
    );
    return JSON.stringify(answer.body).length;
  };
  for (let i = 0; i < 20; i++) await once();
  const times: number[] = [];
  for (let i = 0; i < 50; i++) {
    const started = performance.now();
    await once();
    times.push(performance.now() - started);
  }
  return median(times);
}

async function main(): Promise<void> {
  const child: ChildProcess = fork(__filename, ["--fhir-server"], { stdio: ["ignore", "inherit", "inherit", "ipc"] });
  const backendBase = await new Promise<string>((resolve, reject) => {
    child.once("message", (message) => resolve((message as { base: string }).base));
    child.once("exit", (code) => reject(new Error(`the FHIR server process exited (${code})`)));
  });
  const { node, base } = await startBenchNode();
  try {
    const put = async (path: string, body?: unknown) => {
      const response = await fetch(`${base}${path}`, {
        method: "PUT",
        ...(body === undefined ? {} : { headers: { "content-type": "application/json" }, body: JSON.stringify(body) }),
      });
      if (response.status !== 200) throw new Error(`PUT ${path}: ${response.status} ${await response.text()}`);
      return (await response.json()) as { id: string };
    };
    await put("/config", fhirPolicy());
    for (let p = 0; p < patients; p++) {
      await put("/user", { userId: patientId(p), attributes: { dob: "1990-01-01", location: "US" } });
      if (p % 2 === 0) await put(`/user/terms?userId=${patientId(p)}`);
    }
    const port = await freePort();
    await put("/export", {
      type: "fhir",
      endpoint: backendBase,
      resolverGroup: "fhir-clinical",
      metadata: { type: "platformUse", purposeId: "service" },
      port,
    });
    const exportBase = `http://127.0.0.1:${port}/`;
    for (let attempt = 0; attempt < 50; attempt++) {
      if (
        await fetch(`${exportBase}Patient?_count=1`).then(
          () => true,
          () => false,
        )
      )
        break;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    // Warm-up (decisions made and traced, JIT): not measured.
    await readAllPages(backendBase);
    const warm = await readAllPages(exportBase);
    const direct: number[] = [];
    const through: number[] = [];
    let directResources = 0;
    for (let round = 0; round < rounds; round++) {
      const d = await readAllPages(backendBase);
      const e = await readAllPages(exportBase);
      direct.push(d.ms);
      through.push(e.ms);
      directResources = d.resources;
      process.stdout.write(`round ${round + 1}: direct ${d.ms.toFixed(0)} ms (${d.resources} resources), export ${e.ms.toFixed(0)} ms (${e.resources} kept)\n`);
    }
    const directMs = median(direct);
    const exportMs = median(through);
    const ratio = directMs / exportMs;
    const perResourceUs = ((exportMs - directMs) / directResources) * 1000;
    process.stdout.write(
      `${directResources} Observations in pages of ${pageSize} (${warm.resources} kept through the export): direct ${directMs.toFixed(0)} ms, export ${exportMs.toFixed(0)} ms, throughput ratio ${ratio.toFixed(2)}x, export cost ${perResourceUs.toFixed(1)} us per resource read from the backend\n`,
    );
    reportFigure({
      figure: "FHIR export: searches of 1,000 Observations per page, throughput vs direct",
      measured: `${((directResources / exportMs) * 1000).toFixed(0)} resources/s`,
      baseline: `${((directResources / directMs) * 1000).toFixed(0)} resources/s`,
      ratio,
      target: ">= 0.6x",
      met: ratio >= 0.6,
    });
    reportFigure({
      figure: "FHIR export: cost per resource read from the backend",
      measured: `${perResourceUs.toFixed(1)} us`,
      baseline: "-",
      ratio: null,
      target: "recorded",
    });
    const pageMs = await pageWork(backendBase);
    process.stdout.write(
      `the export's own work on one page of ${pageSize} (parse, decide, rebuild, serialize; in process): ${pageMs.toFixed(2)} ms, ${((pageMs / pageSize) * 1000).toFixed(1)} us per resource\n`,
    );
    reportFigure({
      figure: "FHIR export: its own work per resource (in process)",
      measured: `${((pageMs / pageSize) * 1000).toFixed(1)} us`,
      baseline: "-",
      ratio: null,
      target: "recorded",
    });
  } finally {
    await node.stop();
    child.kill();
  }
}

if (process.argv.includes("--fhir-server")) void serveFhir();
else
  main().catch((error: unknown) => {
    console.error(error);
    process.exit(1);
  });
