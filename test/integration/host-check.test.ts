import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { request as httpRequest } from "node:http";
import type { NatsServerProcess } from "../../service/nats-server";
import { call } from "../../testkit/http";
import { startNats } from "../../testkit/nats";
import { NodeProcess } from "../../testkit/node-process";
import { fhirPolicy } from "../../testkit/policy";
import { freePorts } from "../../testkit/ports";
import { S3Store } from "../../testkit/s3";
import { FhirServerFixture } from "../../testkit/fhir-server";
import { listening, until } from "../../testkit/wait";
import { createPopulation } from "../fixtures/population";

interface Answer {
  status: number;
  type: string;
  body: string;
}

/** One request over a real socket to 127.0.0.1:port with the Host given: what a browser sends once a page's name resolves to this machine. */
function send(
  port: number,
  host: string,
  method: string,
  path: string,
  body?: string,
  type = "application/json",
  extra: Record<string, string> = {},
): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const sent = httpRequest(
      {
        host: "127.0.0.1",
        port,
        method,
        path,
        headers: { host, ...extra, ...(body === undefined ? {} : { "content-type": type, "content-length": Buffer.byteLength(body) }) },
      },
      (response) => {
        const chunks: Buffer[] = [];
        response.on("data", (chunk: Buffer) => chunks.push(chunk));
        response.on("end", () =>
          resolve({ status: response.statusCode!, type: String(response.headers["content-type"] ?? ""), body: Buffer.concat(chunks).toString("utf8") }),
        );
      },
    );
    sent.on("error", reject);
    sent.end(body);
  });
}

/** A page of evil.example whose name was made to resolve to 127.0.0.1 (DNS rebinding). */
const rebound = (port: number) => `evil.example:${port}`;

describe("the Host check on a node bound to loopback (the default): the gateway and every HTTP export door refuse a rebound name in their own error form", () => {
  let nats: NatsServerProcess;
  let node: NodeProcess;
  let store: S3Store;
  const fhir = new FhirServerFixture();
  const doors: Record<"pipeline" | "fhir" | "objectstore", number> = { pipeline: 0, fhir: 0, objectstore: 0 };

  before(async () => {
    nats = await startNats();
    [store] = await Promise.all([S3Store.start(["docs"]), fhir.start()]);
    // A patient whose id is a user id the policy allows (createPopulation: accepted).
    await fhir.repo.createResource({ resourceType: "Patient", id: "accepted", birthDate: "1990-01-01" }, { assignedId: true });
    // The embedded default configuration: HOST and EXPORT_HOST 127.0.0.1, no component enforces authentication.
    node = await NodeProcess.start({ nodeId: "host-check-1", natsUrl: nats.url });
    const gateway = (method: string, path: string, body?: unknown) => call(node, method, path, body);
    assert.equal((await gateway("PUT", "/config", fhirPolicy())).status, 200);
    await createPopulation(gateway);
    const [pipelinePort, fhirPort, objectstorePort] = await freePorts(3);
    const metadata = { type: "platformUse", purposeId: "service" };
    for (const [type, port, body] of [
      ["pipeline", pipelinePort!, { resolverGroup: "users-table" }],
      ["fhir", fhirPort!, { endpoint: fhir.base, resolverGroup: "fhir-clinical" }],
      ["objectstore", objectstorePort!, { endpoint: store.endpoint, resolverGroup: "users-table" }],
    ] as const) {
      const created = await gateway("PUT", "/export", { type, port, metadata, ...body });
      assert.equal(created.status, 200, JSON.stringify(created.body));
      assert.equal(created.body.listen.host, "127.0.0.1");
      doors[type] = port;
      await until(`the ${type} export listens`, () => listening(port));
    }
  });

  after(async () => {
    await node?.kill();
    await Promise.all([store?.stop(), fhir.stop()]);
    await nats?.stop();
  });

  test("gateway: GET /config and a PUT with a JSON body refused 421 ERR_REQUEST_HOST; the same with Host 127.0.0.1 and localhost served", async () => {
    const refused = await send(node.port, rebound(node.port), "GET", "/config");
    assert.equal(refused.status, 421, refused.body);
    assert.equal(JSON.parse(refused.body).error.code, "ERR_REQUEST_HOST");
    assert.match(JSON.parse(refused.body).error.message, /ALLOWED_HOSTS/);
    assert.ok(!refused.body.includes("categories"), "nothing of the configuration went out");
    const write = await send(node.port, rebound(node.port), "PUT", "/mapping/groups/stolen", JSON.stringify({ fieldMappings: [] }));
    assert.equal(write.status, 421, write.body);
    assert.equal((await call(node, "GET", "/mapping/groups/stolen")).status, 404, "nothing was written");

    for (const host of [`127.0.0.1:${node.port}`, `localhost:${node.port}`]) {
      const served = await send(node.port, host, "GET", "/config");
      assert.equal(served.status, 200, `${host}: ${served.body}`);
      assert.ok(JSON.parse(served.body).categories.length > 0, served.body);
    }
  });

  test("pipeline door: a record POSTed with a rebound Host is refused 421 in the registry's JSON form; with Host 127.0.0.1 it is redacted", async () => {
    const port = doors.pipeline;
    const record = JSON.stringify({ id: "alice", email: "a@example.com" });
    const refused = await send(port, rebound(port), "POST", "/", record);
    assert.equal(refused.status, 421, refused.body);
    assert.equal(JSON.parse(refused.body).error.code, "ERR_REQUEST_HOST");
    const served = await send(port, `127.0.0.1:${port}`, "POST", "/", record);
    assert.equal(served.status, 200, served.body);
    assert.equal(typeof JSON.parse(served.body).dropped, "boolean");
  });

  test("FHIR door: a read with a rebound Host is an OperationOutcome (421, security); with Host 127.0.0.1 the patient", async () => {
    const port = doors.fhir;
    const refused = await send(port, rebound(port), "GET", "/Patient/accepted");
    assert.equal(refused.status, 421, refused.body);
    assert.match(refused.type, /^application\/fhir\+json/);
    const outcome = JSON.parse(refused.body);
    assert.equal(outcome.resourceType, "OperationOutcome");
    assert.equal(outcome.issue[0].code, "security");
    assert.match(outcome.issue[0].diagnostics, /this fhir export does not answer to the Host 'evil\.example:\d+'.*ALLOWED_HOSTS/);
    const served = await send(port, `127.0.0.1:${port}`, "GET", "/Patient/accepted");
    assert.equal(served.status, 200, served.body);
    assert.equal(JSON.parse(served.body).resourceType, "Patient");
  });

  test("objectstore door: ListBuckets with a rebound Host is an S3 XML error (421 MisdirectedRequest); with Host 127.0.0.1 the bucket list", async () => {
    const port = doors.objectstore;
    const refused = await send(port, rebound(port), "GET", "/");
    assert.equal(refused.status, 421, refused.body);
    assert.match(refused.type, /^application\/xml/);
    assert.match(
      refused.body,
      /<Error><Code>MisdirectedRequest<\/Code><Message>this objectstore export does not answer to the Host &#39;evil\.example:\d+&#39;/,
    );
    // A bucket named under the rebound name is no virtual-host request of this export either.
    assert.equal((await send(port, `docs.evil.example:${port}`, "GET", "/")).status, 421);
    const served = await send(port, `127.0.0.1:${port}`, "GET", "/");
    assert.equal(served.status, 200, served.body);
    assert.match(served.body, /<Name>docs<\/Name>/);
  });

  test("the doors that take Basic credentials (FHIR, pipeline) refuse what a browser sent for another site's page, in their own form; the objectstore door does not (presigned URLs)", async () => {
    // A navigation or form another site started: the browser would add the Basic credentials it cached for this port.
    const fromElsewhere = { "sec-fetch-site": "cross-site", "sec-fetch-mode": "navigate", authorization: `Basic ${Buffer.from("ed:pw").toString("base64")}` };
    const fhirRefused = await send(doors.fhir, `127.0.0.1:${doors.fhir}`, "GET", "/Patient/accepted", undefined, undefined, fromElsewhere);
    assert.equal(fhirRefused.status, 403, fhirRefused.body);
    assert.equal(JSON.parse(fhirRefused.body).resourceType, "OperationOutcome");
    const record = JSON.stringify({ id: "alice", email: "a@example.com" });
    const pipelineRefused = await send(doors.pipeline, `127.0.0.1:${doors.pipeline}`, "POST", "/", record, "application/json", {
      ...fromElsewhere,
      "sec-fetch-site": "same-site",
    });
    assert.equal(pipelineRefused.status, 403, pipelineRefused.body);
    assert.equal(JSON.parse(pipelineRefused.body).error.code, "ERR_REQUEST_CROSS_SITE");
    // The same requests from the door's own origin, or from a client that is no browser, are served.
    const sameOrigin = await send(doors.fhir, `127.0.0.1:${doors.fhir}`, "GET", "/Patient/accepted", undefined, undefined, { "sec-fetch-site": "same-origin" });
    assert.equal(sameOrigin.status, 200, sameOrigin.body);
    assert.equal((await send(doors.pipeline, `127.0.0.1:${doors.pipeline}`, "POST", "/", record)).status, 200);
    const objects = await send(doors.objectstore, `127.0.0.1:${doors.objectstore}`, "GET", "/", undefined, undefined, { "sec-fetch-site": "cross-site" });
    assert.equal(objects.status, 200, objects.body);
  });

  test("every refusal is counted in warden_refusals_total{kind=ERR_REQUEST_HOST}, the doors' with the gateway's", async () => {
    const metrics = await send(node.port, `127.0.0.1:${node.port}`, "GET", "/metrics");
    const counted = /^warden_refusals_total\{kind="ERR_REQUEST_HOST"\} (\d+)$/m.exec(metrics.body);
    assert.equal(
      Number(counted?.[1]),
      6,
      metrics.body
        .split("\n")
        .filter((line) => line.startsWith("warden_refusals_total"))
        .join("\n"),
    );
  });
});
