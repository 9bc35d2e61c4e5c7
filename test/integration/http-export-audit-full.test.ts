// HTTP exports reach their backends over kept-alive connections; each connection is on the audit
// log (`connection.outgoing`, spec 6 item 4) before a request is written on it. With the audit
// stream full, a FHIR or objectstore export with no recorded connection sends its backend nothing
// and answers 503 in its protocol's form (OperationOutcome, S3 XML error); with room again it serves.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { Agent, request as httpRequest } from "node:http";
import { GetObjectCommand, HeadObjectCommand, PutObjectCommand } from "@aws-sdk/client-s3";
import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import type { AuditRecord } from "../../actors/runtime/event-log";
import type { NatsServerProcess } from "../../service/nats-server";
import { FhirServerFixture } from "../../testkit/fhir-server";
import { call as request } from "../../testkit/http";
import { connectTo, startNats, storedMessages } from "../../testkit/nats";
import { NodeProcess } from "../../testkit/node-process";
import { fhirPolicy } from "../../testkit/policy";
import { freePorts } from "../../testkit/ports";
import { S3Store, s3rverCredentials } from "../../testkit/s3";
import { firstSuccess, listening, until } from "../../testkit/wait";
import { createPopulation } from "../fixtures/population";
import { s3Client, s3Failure } from "../helpers/s3-client";

/** The smallest audit stream a node takes. */
const auditMaxBytes = 65_536;
const fillerSubject = "warden.audit.filler.info";
const csv = "users.id,users.email\naccepted,a@example.com\n";

/** Raw HTTP/1.1 requests to a door over one kept-alive client connection (the door names it in x-connection-id). */
class KeptConnection {
  private readonly agent = new Agent({ keepAlive: true, maxSockets: 1 });
  private connectionId?: string;

  constructor(private readonly port: number) {}

  send(method: string, path: string, headers: Record<string, string> = {}, body?: string): Promise<{ status: number; text: string; sameConnection: boolean }> {
    return new Promise((resolve, reject) => {
      const outgoing = httpRequest({ host: "127.0.0.1", port: this.port, method, path, headers, agent: this.agent }, (response) => {
        let text = "";
        response.setEncoding("utf8");
        response.on("data", (chunk: string) => (text += chunk));
        response.on("end", () => {
          const id = response.headers["x-connection-id"] as string | undefined;
          const sameConnection = this.connectionId !== undefined && id === this.connectionId;
          this.connectionId ??= id;
          resolve({ status: response.statusCode ?? 0, text, sameConnection });
        });
      });
      outgoing.on("error", reject);
      outgoing.end(body);
    });
  }

  close(): void {
    this.agent.destroy();
  }
}

describe("FHIR and objectstore exports record their backend connections, and send nothing unrecorded", () => {
  let nats: NatsServerProcess;
  let node: NodeProcess;
  let nc: NatsConnection;
  let store: S3Store;
  const fhir = new FhirServerFixture();
  /** Per type: an export used while the audit log has room, and one first used once it is full (no connection of its own yet). */
  const exports = { fhir: { used: 0, fresh: 0 }, objectstore: { used: 0, fresh: 0 } };
  const ids: Record<string, string> = {};
  const call = (method: string, path: string, body?: unknown) => request(node, method, path, body);
  const readPatient = (port: number) => fetch(`http://127.0.0.1:${port}/Patient/accepted`);

  before(async () => {
    [nats, store] = await Promise.all([startNats(), S3Store.start(["docs"]), fhir.start()]);
    node = await NodeProcess.start({ nodeId: "http-export-audit", natsUrl: nats.url, env: { AUDIT_MAX_BYTES: String(auditMaxBytes) } });
    nc = await connectTo(nats.url);
    // fhirPolicy has both mapping groups: fhir-clinical for the FHIR exports, users-table for the CSV.
    const configured = await call("PUT", "/config", fhirPolicy());
    assert.equal(configured.status, 200, JSON.stringify(configured.body));
    await createPopulation(call);
    await fhir.repo.createResource({ resourceType: "Patient", id: "accepted", name: [{ family: "Family-accepted" }] }, { assignedId: true });
    const direct = s3Client(store.port, { credentials: s3rverCredentials });
    await direct.send(new PutObjectCommand({ Bucket: "docs", Key: "people.csv", Body: csv, ContentType: "text/csv" }));
    direct.destroy();
    const [fhirUsed, fhirFresh, objectUsed, objectFresh] = await freePorts(4);
    const metadata = { type: "platformUse", purposeId: "service" };
    for (const [name, port, body] of [
      ["fhir.used", fhirUsed, { type: "fhir", endpoint: fhir.base, resolverGroup: "fhir-clinical" }],
      ["fhir.fresh", fhirFresh, { type: "fhir", endpoint: fhir.base, resolverGroup: "fhir-clinical" }],
      ["objectstore.used", objectUsed, { type: "objectstore", endpoint: store.endpoint, resolverGroup: "users-table" }],
      ["objectstore.fresh", objectFresh, { type: "objectstore", endpoint: store.endpoint, resolverGroup: "users-table", allowWrites: true }],
    ] as const) {
      const created = await call("PUT", "/export", { ...body, metadata, port });
      assert.equal(created.status, 200, JSON.stringify(created.body));
      ids[name] = created.body.id as string;
      await until(`export ${name} listens`, () => listening(port!));
    }
    Object.assign(exports, { fhir: { used: fhirUsed, fresh: fhirFresh }, objectstore: { used: objectUsed, fresh: objectFresh } });
  });

  after(async () => {
    await nc?.close();
    await node?.stop();
    await Promise.all([nats?.stop(), store?.stop(), fhir.stop()]);
  });

  /** The stored `connection.outgoing` records of an export. */
  const outgoingOf = async (exportId: string) =>
    (await storedMessages<AuditRecord>(nc, "WARDEN_AUDIT", "warden.audit.>"))
      .filter((m) => m.data.event === "connection.outgoing" && m.data.details?.exportId === exportId)
      .map((m) => ({ subject: m.subject, details: m.data.details as Record<string, unknown> }));

  test("with room: each export's backend connection is recorded with its endpoint and identity, in the export's category", async () => {
    assert.equal((await readPatient(exports.fhir.used)).status, 200);
    const client = s3Client(exports.objectstore.used, { unsigned: true });
    const text = await (await client.send(new GetObjectCommand({ Bucket: "docs", Key: "people.csv" }))).Body!.transformToString();
    assert.match(text, /^users\.id,users\.email\n/);
    client.destroy();
    const fhirRecords = await outgoingOf(ids["fhir.used"]!);
    assert.equal(fhirRecords.length, 1, JSON.stringify(fhirRecords));
    assert.equal(fhirRecords[0]!.subject, "warden.audit.fhir.info");
    assert.equal(fhirRecords[0]!.details.endpoint, `127.0.0.1:${fhir.listeningPort}`);
    assert.equal(fhirRecords[0]!.details.identitySource, "none", "an unauthenticated client's request carries no identity");
    const storeRecords = await outgoingOf(ids["objectstore.used"]!);
    assert.ok(storeRecords.length >= 1, JSON.stringify(storeRecords));
    for (const record of storeRecords) {
      assert.equal(record.subject, "warden.audit.objectstore.info");
      assert.equal(record.details.endpoint, `127.0.0.1:${store.port}`);
      assert.equal(record.details.identity, null, "an export without credentials sends unsigned requests");
    }
    // A second read reuses the kept-alive connection: no new record.
    assert.equal((await readPatient(exports.fhir.used)).status, 200);
    assert.equal((await outgoingOf(ids["fhir.used"]!)).length, 1);
  });

  test("full: an export whose backend connection cannot be recorded answers 503 and its backend receives nothing", async () => {
    // Client connections to the fresh exports, opened (and their unauthenticated use stored) while there is room, by requests
    // each door refuses itself: with the log full, the doors admit further requests on them, and only the backend connection is new.
    const fhirClient = new KeptConnection(exports.fhir.fresh);
    const storeClient = new KeptConnection(exports.objectstore.fresh);
    const fhirRequests = fhir.requests.length;
    assert.equal((await fhirClient.send("GET", "/Patient/accepted?_format=xml")).status, 406);
    assert.equal((await storeClient.send("GET", "/docs/people.csv", { range: "bytes=0-1" })).status, 501);
    assert.equal(fhir.requests.length, fhirRequests, "the priming requests were refused by the doors themselves");

    const jsm = await jetstreamManager(nc);
    const js = jetstream(nc);
    const filler = JSON.stringify({ event: "filler", message: "x".repeat(900) });
    while ((await jsm.streams.info("WARDEN_AUDIT")).state.bytes <= auditMaxBytes - 1200) await js.publish(fillerSubject, filler);
    // The node reads the stream's fill once a second.
    await new Promise((resolve) => setTimeout(resolve, 1500));

    const refused = await fhirClient.send("GET", "/Patient/accepted");
    assert.equal(refused.sameConnection, true, "the request came on the client connection opened before");
    assert.equal(refused.status, 503, refused.text);
    const outcome = JSON.parse(refused.text) as { resourceType: string; issue: Array<{ code: string; diagnostics?: string }> };
    assert.equal(outcome.resourceType, "OperationOutcome");
    assert.equal(outcome.issue[0]!.code, "transient");
    assert.match(outcome.issue[0]!.diagnostics ?? "", /cannot record this connection in its audit log/);
    assert.equal(fhir.requests.length, fhirRequests, "the FHIR server received nothing");

    const got = await storeClient.send("GET", "/docs/people.csv");
    assert.equal(got.sameConnection, true);
    assert.equal(got.status, 503, got.text);
    assert.match(got.text, /<Code>ServiceUnavailable<\/Code>/);
    assert.match(got.text, /cannot record this connection in its audit log/);
    // A write (allowWrites) with no recorded connection does not reach the store.
    const put = await storeClient.send("PUT", "/docs/unrecorded.csv", { "content-type": "text/csv" }, csv);
    assert.equal(put.status, 503, put.text);
    const direct = s3Client(store.port, { credentials: s3rverCredentials });
    const head = await s3Failure(direct.send(new HeadObjectCommand({ Bucket: "docs", Key: "unrecorded.csv" })));
    assert.equal(head.status, 404, "the store has no such object: the write never reached it");
    direct.destroy();
    fhirClient.close();
    storeClient.close();
    assert.deepEqual(await outgoingOf(ids["fhir.fresh"]!), []);
    assert.deepEqual(await outgoingOf(ids["objectstore.fresh"]!), []);
    assert.ok(
      node.lines.some((line) => line.includes("audit record not stored") && line.includes("connection.outgoing")),
      "the unstored records are in the node's log",
    );
  });

  test("with room again: the same exports record their connections and serve", async () => {
    const jsm = await jetstreamManager(nc);
    await jsm.streams.purge("WARDEN_AUDIT", { filter: fillerSubject });
    await firstSuccess(async () => {
      const answer = await readPatient(exports.fhir.fresh);
      if (answer.status !== 200) throw new Error(`FHIR read: ${answer.status}`);
    }, 10_000);
    const client = s3Client(exports.objectstore.fresh, { unsigned: true });
    await firstSuccess(() => client.send(new PutObjectCommand({ Bucket: "docs", Key: "recorded.csv", Body: csv, ContentType: "text/csv" })), 10_000);
    client.destroy();
    assert.equal((await outgoingOf(ids["fhir.fresh"]!)).length, 1);
    assert.ok((await outgoingOf(ids["objectstore.fresh"]!)).length >= 1);
  });
});
