import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { createServer } from "node:http";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { GetObjectCommand, HeadObjectCommand, ListObjectsV2Command, PutObjectCommand } from "@aws-sdk/client-s3";
import { Hash } from "@smithy/hash-node";
import { SignatureV4 } from "@smithy/signature-v4";
import type { NatsConnection } from "@nats-io/transport-node";
import type { AuditRecord } from "../../actors/runtime/event-log";
import { emptySha256, parseSignature, signatureMatches } from "../../auth/cloud-signature";
import { signedRequestFrom } from "../../auth/signed-request";
import type { NatsServerProcess } from "../../service/nats-server";
import { realisticPolicy } from "../../testkit/policy";
import { createPopulation } from "../fixtures/population";
import { type Answer, call as request } from "../../testkit/http";
import { connectTo, startNats, storedMessages } from "../../testkit/nats";
import { NodeProcess } from "../../testkit/node-process";
import { freePorts } from "../../testkit/ports";
import { S3Store, s3rverCredentials } from "../../testkit/s3";
import { tempDir } from "../../testkit/temp";
import { s3Client, s3Failure, virtualHostClient } from "../helpers/s3-client";
import { listening, until } from "../../testkit/wait";

const region = "eu-west-1";
/** The export's own signing identity (set at export time over a profile that names only the region). */
const signing = { id: "AKIDOBJECTS", key: "objects-secret-key" };
/** Who manages exports through the gateway (cloud-signed). */
const admin = { id: "AKIDADMIN", key: "admin-secret-key" };
/** Another export's signing identity that the authorization rules let read, not write. */
const readOnly = { id: "AKIDREADER", key: "reader-secret-key" };
const csv = "users.id,users.email,users.secret\naccepted,a@example.com,s3cret-a\nnot-accepted,n@example.com,s3cret-n\n";

/** The S3 code and status a command fails with. */
async function refusal(promise: Promise<unknown>): Promise<{ code: string; status: number }> {
  const { code, status } = await s3Failure(promise);
  return { code, status };
}

const client = (port: number, credentials: { accessKeyId: string; secretAccessKey: string }, extra: { systemClockOffset?: number } = {}) =>
  s3Client(port, { region, credentials, ...extra });

/** A request signed by @smithy/signature-v4 as S3 SDKs sign (service s3, the path not encoded twice), header or query form. */
async function signed(port: number, path: string, form: "header" | "query", key = signing.key): Promise<{ url: string; headers: Record<string, string> }> {
  const signer = new SignatureV4({
    service: "s3",
    region,
    credentials: { accessKeyId: signing.id, secretAccessKey: key },
    sha256: Hash.bind(null, "sha256"),
    uriEscapePath: false,
  });
  const base = { method: "GET", protocol: "http:", hostname: "127.0.0.1", port, path, query: {}, headers: { host: `127.0.0.1:${port}` } };
  const done = form === "header" ? await signer.sign(base) : await signer.presign(base, { expiresIn: 300 });
  const query = Object.entries(done.query ?? {})
    .map(([name, value]) => `${encodeURIComponent(name)}=${encodeURIComponent(String(value))}`)
    .join("&");
  const { host: _host, ...headers } = done.headers;
  return { url: `http://127.0.0.1:${port}${path}${query ? `?${query}` : ""}`, headers };
}

describe("objectstore exports with authentication enforced: S3 clients sign with SigV4, the export signs for the store with its own key", () => {
  let nats: NatsServerProcess;
  let store: S3Store;
  let node: NodeProcess;
  let nc: NatsConnection;
  let ports: number[];
  /** The gateway; /export signed by the admin key with curl --aws-sigv4 (the export API is enforced). */
  const call = async (method: string, path: string, body?: unknown): Promise<Answer> => {
    if (!path.startsWith("/export")) return request(node, method, path, body);
    const args = ["-s", "-X", method, "--aws-sigv4", `aws:amz:${region}:warden`, "--user", `${admin.id}:${admin.key}`, "-w", "\n%{http_code}"];
    if (body !== undefined) args.push("-H", "content-type: application/json", "--data-binary", JSON.stringify(body));
    const { stdout } = await promisify(execFile)("curl", [...args, `${node.url}${path}`], { encoding: "utf8" });
    const text = stdout.slice(0, stdout.lastIndexOf("\n"));
    return { status: Number(stdout.slice(stdout.lastIndexOf("\n") + 1)), etag: null, body: text.startsWith("{") ? JSON.parse(text) : text };
  };
  const body = (extra: Record<string, unknown>) => ({
    type: "objectstore",
    endpoint: store.endpoint,
    resolverGroup: "users-table",
    metadata: { type: "platformUse", purposeId: "service" },
    ...extra,
  });

  before(async () => {
    nats = await startNats();
    store = await S3Store.start(["docs"]);
    ports = await freePorts(2);
    const file = join(tempDir("objectstore-security"), "security.json");
    writeFileSync(
      file,
      JSON.stringify({
        verifiers: [
          {
            verifier: "cloud",
            profiles: [
              { profile: "exports", configuration: { region } },
              { profile: "admin", configuration: { ...admin, region } },
            ],
          },
        ],
        credentials: [
          {
            type: "cloudSigningCredentials",
            verifiers: [
              { verifier: "cloud", profile: "exports", selectors: { componentName: "objectstore" } },
              { verifier: "cloud", profile: "admin", selectors: { componentName: "export" } },
            ],
          },
        ],
        // The export API is enforced too: it manages an enforced export type (the node refuses to start otherwise).
        enforcedComponents: [{ componentName: "objectstore" }, { componentName: "export" }],
        authorization: {
          rules: [
            { name: "admin", cloudKeyIds: [admin.id], permissions: ["*:admin"] },
            { name: "object writers", cloudKeyIds: [signing.id], permissions: ["objectstore:write"] },
            { name: "object readers", cloudKeyIds: [readOnly.id], permissions: ["objectstore:read"] },
          ],
        },
      }),
    );
    // A host name for the export ports (it listens on 127.0.0.1 here), so that virtual-host requests are signed and checked too.
    node = await NodeProcess.start({ nodeId: "os-auth-1", natsUrl: nats.url, env: { SECURITY_CONFIG: file, EXPORT_HOST: "localhost" } });
    assert.equal((await call("PUT", "/config", realisticPolicy())).status, 200);
    await createPopulation(call);
    nc = await connectTo(nats.url);
    const direct = client(store.port, s3rverCredentials);
    await direct.send(new PutObjectCommand({ Bucket: "docs", Key: "people.csv", Body: csv, ContentType: "text/csv" }));
    direct.destroy();
  });

  after(async () => {
    await nc?.close();
    await node?.kill();
    await store?.stop();
    await nats?.stop();
  });

  test("the SDK and curl --aws-sigv4 sign requests the export accepts; unsigned, a wrong key, a skewed clock and a replayed signature are refused as AccessDenied and audited", async () => {
    const created = await call("PUT", "/export", body({ port: ports[0], cloudSigning: signing, credentials: s3rverCredentials }));
    assert.equal(created.status, 200, JSON.stringify(created.body));
    assert.equal(created.body.backendIdentity, "export");
    assert.equal(created.body.credentials, undefined, "the export's credentials are never read back");
    assert.deepEqual(created.body.cloudSigning, { id: signing.id, key: "(set)" });
    const port: number = created.body.listen.port;
    await until("the export listens", () => listening(port));

    const sdk = client(port, { accessKeyId: signing.id, secretAccessKey: signing.key });
    const text = await (await sdk.send(new GetObjectCommand({ Bucket: "docs", Key: "people.csv" }))).Body!.transformToString();
    assert.equal(text, "users.id,users.email,users.secret\n,a@example.com,\n", "signed GetObject: redacted");
    assert.equal((await sdk.send(new HeadObjectCommand({ Bucket: "docs", Key: "people.csv" }))).ContentLength, Buffer.byteLength(csv));
    assert.deepEqual(await refusal(sdk.send(new PutObjectCommand({ Bucket: "docs", Key: "x.csv", Body: "a" }))), { code: "AccessDenied", status: 403 });

    // Not spawnSync: s3rver runs on this process's event loop and must answer while curl waits.
    const curl = await promisify(execFile)(
      "curl",
      [
        "-s",
        "-w",
        "\n%{http_code}",
        "--aws-sigv4",
        `aws:amz:${region}:s3`,
        "--user",
        `${signing.id}:${signing.key}`,
        `http://127.0.0.1:${port}/docs/people.csv`,
      ],
      { encoding: "utf8" },
    );
    assert.equal(curl.stdout, "users.id,users.email,users.secret\n,a@example.com,\n\n200", curl.stderr);

    // Virtual-host style: the signature covers the Host naming the bucket, which the export checks as sent.
    const looked: string[] = [];
    const vhost = virtualHostClient("localhost", port, looked, { accessKeyId: signing.id, secretAccessKey: signing.key }, region);
    const viaHost = await (await vhost.send(new GetObjectCommand({ Bucket: "docs", Key: "people.csv" }))).Body!.transformToString();
    assert.ok(looked.includes("docs.localhost"), looked.join(", "));
    assert.equal(viaHost, "users.id,users.email,users.secret\n,a@example.com,\n", "signed virtual-host GetObject: redacted");
    vhost.destroy();
    const curlHost = await promisify(execFile)(
      "curl",
      [
        "-s",
        "-w",
        "\n%{http_code}",
        "--resolve",
        `docs.localhost:${port}:127.0.0.1`,
        "--aws-sigv4",
        `aws:amz:${region}:s3`,
        "--user",
        `${signing.id}:${signing.key}`,
        `http://docs.localhost:${port}/people.csv`,
      ],
      { encoding: "utf8" },
    );
    assert.equal(curlHost.stdout, "users.id,users.email,users.secret\n,a@example.com,\n\n200", curlHost.stderr);

    assert.deepEqual(
      (await sdk.send(new ListObjectsV2Command({ Bucket: "docs" }))).Contents?.map((c) => c.Key),
      ["people.csv"],
    );
    const wrongKey = client(port, { accessKeyId: signing.id, secretAccessKey: "not-the-key" });
    assert.deepEqual(await refusal(wrongKey.send(new GetObjectCommand({ Bucket: "docs", Key: "people.csv" }))), { code: "AccessDenied", status: 403 });
    const profileOnly = client(port, { accessKeyId: "AKIDSOMEONE", secretAccessKey: signing.key });
    assert.deepEqual(await refusal(profileOnly.send(new GetObjectCommand({ Bucket: "docs", Key: "people.csv" }))), { code: "AccessDenied", status: 403 });
    const skewed = client(port, { accessKeyId: signing.id, secretAccessKey: signing.key }, { systemClockOffset: -10 * 60_000 });
    assert.deepEqual(await refusal(skewed.send(new GetObjectCommand({ Bucket: "docs", Key: "people.csv" }))), { code: "AccessDenied", status: 403 });
    const unsigned = await fetch(`http://127.0.0.1:${port}/docs/people.csv`);
    assert.equal(unsigned.status, 403);
    assert.match(await unsigned.text(), /<Code>AccessDenied<\/Code>.*<RequestId>[0-9A-F]{16}<\/RequestId>/s);

    // The same signature twice: the first passes, the replay is refused (header form and a presigned URL).
    for (const form of ["header", "query"] as const) {
      const once = await signed(port, "/docs/people.csv", form);
      const first = await fetch(once.url, { headers: once.headers });
      assert.equal(first.status, 200, `${form}: ${await first.text()}`);
      const replay = await fetch(once.url, { headers: once.headers });
      assert.equal(replay.status, 403, `${form}: a signature is taken once`);
      await replay.text();
    }

    const audit = await storedMessages<AuditRecord>(nc, "WARDEN_AUDIT");
    const denied = audit.filter((m) => m.data.category === "objectstore" && m.data.event === "connection.denied").map((m) => String(m.data.details?.reason));
    for (const reason of [/signature does not match/, /not the profile's/, /more than 5 minutes old/, /replayed/, /no credentials/])
      assert.ok(
        denied.some((r) => reason.test(r)),
        `${reason} audited: ${denied.join(" | ")}`,
      );
    const text2 = JSON.stringify(audit.map((m) => m.data));
    assert.ok(!text2.includes(signing.key), "the export's signing key is not in the audit log");
    for (const c of [sdk, wrongKey, profileOnly, skewed]) c.destroy();
  });

  test("the export signs its requests to the store with its own credentials (@smithy/signature-v4, checked by this service's own SigV4 functions); the client's signature never reaches the store", async () => {
    const storeKey = { accessKeyId: "AKIDSTORE", secretAccessKey: "store-secret-key", region: "us-west-2" };
    const seen: Array<{ accessKeyId: string; matches: boolean; scope: string }> = [];
    const fake = createServer((req, res) => {
      const signedRequest = signedRequestFrom({ method: req.method!, url: req.url!, headers: req.headersDistinct, bodySha256: emptySha256, convention: "s3" });
      const parsed = parseSignature(signedRequest);
      if (!("error" in parsed))
        seen.push({
          accessKeyId: parsed.accessKeyId,
          matches: signatureMatches(storeKey.secretAccessKey, signedRequest, parsed),
          scope: `${parsed.scope.region}/${parsed.scope.service}`,
        });
      res.writeHead(404, { "content-type": "application/xml" }).end("<Error><Code>NoSuchKey</Code><Message>no such key here</Message></Error>");
    });
    await new Promise<void>((resolve) => fake.listen(0, "127.0.0.1", resolve));
    const created = await call(
      "PUT",
      "/export",
      body({ endpoint: `http://127.0.0.1:${(fake.address() as { port: number }).port}`, port: ports[1], cloudSigning: signing, credentials: storeKey }),
    );
    assert.equal(created.status, 200, JSON.stringify(created.body));
    const port: number = created.body.listen.port;
    await until("the export listens", () => listening(port));
    const sdk = client(port, { accessKeyId: signing.id, secretAccessKey: signing.key });
    assert.deepEqual(
      await refusal(sdk.send(new GetObjectCommand({ Bucket: "docs", Key: "some key+(1).csv" }))),
      { code: "NoSuchKey", status: 404 },
      "the store's answer passes, with its code",
    );
    assert.ok(seen.length > 0);
    for (const one of seen)
      assert.deepEqual(one, { accessKeyId: storeKey.accessKeyId, matches: true, scope: "us-west-2/s3" }, "signed with the export's key, never the client's");
    // Spec 6 item 4: the store connection is on the audit log with the store's endpoint and the export's key id (never its secret).
    const storeEndpoint = `127.0.0.1:${(fake.address() as { port: number }).port}`;
    const outgoing = (await storedMessages<AuditRecord>(nc, "WARDEN_AUDIT", "warden.audit.objectstore.>")).filter(
      (m) => m.data.event === "connection.outgoing" && m.data.details?.exportId === created.body.id,
    );
    assert.ok(outgoing.length > 0, "the store connection is recorded");
    for (const { data } of outgoing) {
      assert.equal(data.details?.endpoint, storeEndpoint);
      assert.equal(data.details?.identity, storeKey.accessKeyId);
      assert.equal(data.details?.identitySource, "export");
      assert.ok(!JSON.stringify(data).includes(storeKey.secretAccessKey), "the store's secret is not in the record");
    }
    assert.equal((await call("DELETE", `/export?id=${created.body.id}`)).status, 200);
    fake.close();
    fake.closeAllConnections();

    // s3rver checks the access key id of what it is sent: an export with a key it does not know gets its refusal.
    const unknown = await call(
      "PUT",
      "/export",
      body({ port: ports[1], cloudSigning: signing, credentials: { accessKeyId: "AKIDUNKNOWN", secretAccessKey: "x" } }),
    );
    assert.equal(unknown.status, 200, JSON.stringify(unknown.body));
    await until("the export listens again", () => listening(port));
    assert.deepEqual(await refusal(sdk.send(new GetObjectCommand({ Bucket: "docs", Key: "people.csv" }))), { code: "InvalidAccessKeyId", status: 403 });
    sdk.destroy();
  });

  test("allowWrites with signatures: a signed PutObject passes; a body that is not the one signed never reaches the store whole", async () => {
    const created = await call("PUT", "/export", body({ cloudSigning: signing, credentials: s3rverCredentials, allowWrites: true }));
    assert.equal(created.status, 200, JSON.stringify(created.body));
    const port: number = created.body.listen.port;
    await until("the export listens", () => listening(port));
    const sdk = client(port, { accessKeyId: signing.id, secretAccessKey: signing.key });
    await sdk.send(new PutObjectCommand({ Bucket: "docs", Key: "signed.csv", Body: csv, ContentType: "text/csv" }));
    const direct = client(store.port, s3rverCredentials);
    assert.equal(await (await direct.send(new GetObjectCommand({ Bucket: "docs", Key: "signed.csv" }))).Body!.transformToString(), csv);

    const signer = new SignatureV4({
      service: "s3",
      region,
      credentials: { accessKeyId: signing.id, secretAccessKey: signing.key },
      sha256: Hash.bind(null, "sha256"),
      uriEscapePath: false,
    });
    const good = "users.id\naccepted\n";
    const evil = "users.id\nattacker\n";
    const done = await signer.sign({
      method: "PUT",
      protocol: "http:",
      hostname: "127.0.0.1",
      port,
      path: "/docs/tampered.csv",
      query: {},
      headers: { host: `127.0.0.1:${port}`, "content-length": String(good.length) },
      body: good,
    });
    const { host: _host, ...headers } = done.headers;
    const tampered = await fetch(`http://127.0.0.1:${port}/docs/tampered.csv`, { method: "PUT", headers, body: evil }).catch((error: Error) => error);
    if (!(tampered instanceof Error)) assert.notEqual(tampered.status, 200, "the tampered body is refused");
    assert.equal(
      (await refusal(direct.send(new HeadObjectCommand({ Bucket: "docs", Key: "tampered.csv" })))).status,
      404,
      "the store holds no tampered object",
    );
    sdk.destroy();
    direct.destroy();
  });

  test("objectstore:read without objectstore:write: GetObject passes, PutObject is AccessDenied and the store holds nothing", async () => {
    const created = await call("PUT", "/export", body({ cloudSigning: readOnly, credentials: s3rverCredentials, allowWrites: true }));
    assert.equal(created.status, 200, JSON.stringify(created.body));
    const port: number = created.body.listen.port;
    await until("the export listens", () => listening(port));
    const sdk = client(port, { accessKeyId: readOnly.id, secretAccessKey: readOnly.key });
    const direct = client(store.port, s3rverCredentials);
    await direct.send(new PutObjectCommand({ Bucket: "docs", Key: "readable.csv", Body: csv, ContentType: "text/csv" }));
    const text = await (await sdk.send(new GetObjectCommand({ Bucket: "docs", Key: "readable.csv" }))).Body!.transformToString();
    assert.ok(text.includes("a@example.com"), text);
    const refused = await s3Failure(sdk.send(new PutObjectCommand({ Bucket: "docs", Key: "written.csv", Body: csv, ContentType: "text/csv" })));
    assert.deepEqual({ code: refused.code, status: refused.status }, { code: "AccessDenied", status: 403 });
    assert.match(refused.message, /objectstore:write/);
    assert.equal((await refusal(direct.send(new HeadObjectCommand({ Bucket: "docs", Key: "written.csv" })))).status, 404, "nothing was written");
    sdk.destroy();
    direct.destroy();
  });
});
