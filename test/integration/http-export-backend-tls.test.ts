// FHIR and objectstore exports in front of https:// backends: the backend's certificate is verified
// (host name included) against the export's backendCa, or the system's roots without it. A backend
// whose certificate does not verify (another CA, none, or the right CA for another name: the
// certificate names localhost, the endpoint 127.0.0.1) gets no request and the client an error,
// never its data.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { GetObjectCommand, PutObjectCommand } from "@aws-sdk/client-s3";
import type { NatsConnection } from "@nats-io/transport-node";
import type { AuditRecord } from "../../actors/runtime/event-log";
import type { NatsServerProcess } from "../../service/nats-server";
import { certificateAuthority, serverCertificate } from "../../testkit/certificates";
import { FhirServerFixture } from "../../testkit/fhir-server";
import { call as request } from "../../testkit/http";
import { connectTo, startNats, storedMessages } from "../../testkit/nats";
import { NodeProcess } from "../../testkit/node-process";
import { fhirPolicy } from "../../testkit/policy";
import { freePorts } from "../../testkit/ports";
import { S3Store, s3rverCredentials } from "../../testkit/s3";
import { tempDir } from "../../testkit/temp";
import { listening, until } from "../../testkit/wait";
import { createPopulation } from "../fixtures/population";
import { s3Client, s3Failure } from "../helpers/s3-client";

const csv = "users.id,users.email\naccepted,a@example.com\nnot-accepted,n@example.com\n";
const metadata = { type: "platformUse", purposeId: "service" };

describe("FHIR and objectstore exports in front of https:// backends (backendCa)", () => {
  let nats: NatsServerProcess;
  let node: NodeProcess;
  let nc: NatsConnection;
  let store: S3Store;
  const fhir = new FhirServerFixture();
  let ca: string;
  let otherCa: string;
  let ports: number[];
  const call = (method: string, path: string, body?: unknown) => request(node, method, path, body);

  before(async () => {
    const dir = tempDir("http-backend-tls");
    const authority = certificateAuthority(dir, "backend-ca");
    const server = serverCertificate(dir, authority);
    ca = readFileSync(authority.certFile, "utf8");
    otherCa = readFileSync(certificateAuthority(dir, "other-ca").certFile, "utf8");
    const tls = { key: readFileSync(server.keyFile), cert: readFileSync(server.certFile) };
    [nats, store] = await Promise.all([startNats(), S3Store.start(["docs"], tls), fhir.start(0, tls)]);
    node = await NodeProcess.start({ nodeId: "http-backend-tls", natsUrl: nats.url });
    nc = await connectTo(nats.url);
    assert.equal((await call("PUT", "/config", fhirPolicy())).status, 200);
    await createPopulation(call);
    await fhir.repo.createResource({ resourceType: "Patient", id: "accepted", name: [{ family: "Family-accepted" }] }, { assignedId: true });
    // Straight to the store, trusting its CA: the object, every row of it.
    const direct = s3Client(store.port, { credentials: s3rverCredentials, ca });
    await direct.send(new PutObjectCommand({ Bucket: "docs", Key: "people.csv", Body: csv, ContentType: "text/csv" }));
    direct.destroy();
    ports = await freePorts(8);
  });

  after(async () => {
    await nc?.close();
    await node?.stop();
    await Promise.all([nats?.stop(), store?.stop(), fhir.stop()]);
  });

  test("backendCa is taken only for an https:// endpoint, and only as PEM certificates", async () => {
    for (const [body, problem] of [
      [{ type: "objectstore", endpoint: "http://127.0.0.1:9", resolverGroup: "users-table", backendCa: ca }, /https:\/\/ endpoint/],
      [{ type: "fhir", endpoint: "http://127.0.0.1:9/fhir/R4/", resolverGroup: "fhir-clinical", backendCa: ca }, /https:\/\/ endpoint/],
      [{ type: "objectstore", endpoint: store.endpoint, resolverGroup: "users-table", backendCa: "not a certificate" }, /PEM/],
      [{ type: "objectstore", endpoint: store.endpoint, resolverGroup: "users-table", backendTls: "verify-full" }, /not taken by objectstore/],
    ] as const) {
      const refused = await call("PUT", "/export", { ...body, metadata });
      assert.equal(refused.status, 400, JSON.stringify(refused.body));
      assert.equal(refused.body.error.code, "ERR_EXPORT_INVALID");
      assert.match(JSON.stringify(refused.body.error), problem);
    }
    assert.deepEqual((await call("GET", "/export")).body.exports, [], "nothing was created");
  });

  test("objectstore: the store's certificate verified against backendCa serves; another CA, or none, reaches nothing", async () => {
    const exportWith = async (port: number, extra: Record<string, unknown>) => {
      const created = await call("PUT", "/export", { type: "objectstore", endpoint: store.endpoint, resolverGroup: "users-table", metadata, port, ...extra });
      assert.equal(created.status, 200, JSON.stringify(created.body));
      await until("the export listens", () => listening(port));
      return created.body.id as string;
    };
    const trusted = await exportWith(ports[0]!, { backendCa: ca });
    await exportWith(ports[1]!, { backendCa: otherCa });
    await exportWith(ports[2]!, {});
    // The CA that signed the store's certificate, but the address 127.0.0.1, which it does not name.
    await exportWith(ports[6]!, { backendCa: ca, endpoint: store.endpoint.replace("localhost", "127.0.0.1") });
    const read = (port: number) => s3Client(port, { unsigned: true }).send(new GetObjectCommand({ Bucket: "docs", Key: "people.csv" }));
    const text = await (await read(ports[0]!)).Body!.transformToString();
    // Redacted: the dropped user's row is gone (the user-id column has no category: emptied).
    assert.equal(text, "users.id,users.email\n,a@example.com\n");
    for (const port of [ports[1]!, ports[2]!, ports[6]!]) {
      const failed = await s3Failure(read(port));
      assert.equal(failed.status, 503, failed.message);
      assert.equal(failed.code, "ServiceUnavailable");
      assert.ok(!failed.message.includes("example.com"));
    }
    const outgoing = (await storedMessages<AuditRecord>(nc, "WARDEN_AUDIT", "warden.audit.objectstore.>")).filter(
      (m) => m.data.event === "connection.outgoing" && m.data.details?.exportId === trusted,
    );
    assert.ok(outgoing.length > 0);
    for (const { data } of outgoing) {
      assert.equal(data.details?.tls, true);
      assert.equal(data.details?.endpoint, `localhost:${store.port}`);
    }
  });

  test("fhir: the server's certificate verified against backendCa serves; another CA, or none, reaches nothing", async () => {
    for (const [port, extra] of [
      [ports[3]!, { backendCa: ca }],
      [ports[4]!, { backendCa: otherCa }],
      [ports[5]!, {}],
      // The right CA, the wrong name: the certificate names localhost only.
      [ports[7]!, { backendCa: ca, endpoint: fhir.base.replace("localhost", "127.0.0.1") }],
    ] as const) {
      const created = await call("PUT", "/export", { type: "fhir", endpoint: fhir.base, resolverGroup: "fhir-clinical", metadata, port, ...extra });
      assert.equal(created.status, 200, JSON.stringify(created.body));
      await until("the export listens", () => listening(port));
    }
    const before = fhir.requests.length;
    const allowed = await fetch(`http://127.0.0.1:${ports[3]}/Patient/accepted`);
    assert.equal(allowed.status, 200);
    assert.equal(((await allowed.json()) as { id: string }).id, "accepted");
    assert.equal(fhir.requests.length, before + 1);
    for (const port of [ports[4]!, ports[5]!, ports[7]!]) {
      const refused = await fetch(`http://127.0.0.1:${port}/Patient/accepted`);
      const outcome = (await refused.json()) as { resourceType: string; issue: Array<{ code: string }> };
      assert.equal(refused.status, 502);
      assert.equal(outcome.resourceType, "OperationOutcome");
      assert.equal(outcome.issue[0]!.code, "transient");
    }
    assert.equal(fhir.requests.length, before + 1, "an unverified server was sent no request");
  });
});
