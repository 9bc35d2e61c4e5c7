import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { GetObjectCommand, HeadObjectCommand, ListObjectsV2Command, PutObjectCommand, type S3Client } from "@aws-sdk/client-s3";
import type { NatsServerProcess } from "../../service/nats-server";
import { realisticPolicy } from "../../testkit/policy";
import { createPopulation } from "../fixtures/population";
import { call as request } from "../../testkit/http";
import { startNats } from "../../testkit/nats";
import { NodeProcess } from "../../testkit/node-process";
import { freePort } from "../../testkit/ports";
import { S3Store, s3rverCredentials } from "../../testkit/s3";
import { s3Client, s3Failure, virtualHostClient } from "../helpers/s3-client";
import { listening, until } from "../../testkit/wait";

/** The node's export host: a name (an address has no names under it), which /etc/hosts sends to 127.0.0.1. */
const exportHost = "localhost";
const csv = "users.id,users.email,users.secret\naccepted,a@example.com,s3cret-a\nnot-accepted,n@example.com,s3cret-n\n";

/** curl with `--resolve` sending `bucket.localhost:port` to 127.0.0.1: status, body and headers. */
async function curl(port: number, host: string, path: string, extra: string[] = []): Promise<{ status: number; body: string }> {
  const { stdout } = await promisify(execFile)(
    "curl",
    ["-s", "--resolve", `${host}:${port}:127.0.0.1`, "-w", "\n%{http_code}", ...extra, `http://${host}:${port}${path}`],
    { encoding: "utf8" },
  );
  const cut = stdout.lastIndexOf("\n");
  return { status: Number(stdout.slice(cut + 1)), body: stdout.slice(0, cut) };
}

describe("objectstore exports addressed virtual-host style: the bucket in the Host, under the node's export host", () => {
  let nats: NatsServerProcess;
  let store: S3Store;
  let node: NodeProcess;
  let port: number;
  let direct: S3Client;

  before(async () => {
    nats = await startNats();
    store = await S3Store.start(["docs", "hidden"]);
    node = await NodeProcess.start({ nodeId: "os-vhost-1", natsUrl: nats.url, env: { EXPORT_HOST: exportHost } });
    const call = (method: string, path: string, body?: unknown) => request(node, method, path, body);
    assert.equal((await call("PUT", "/config", realisticPolicy())).status, 200);
    await createPopulation(call);
    direct = s3Client(store.port, { credentials: s3rverCredentials });
    await direct.send(new PutObjectCommand({ Bucket: "docs", Key: "people.csv", Body: csv, ContentType: "text/csv" }));
    await direct.send(new PutObjectCommand({ Bucket: "hidden", Key: "people.csv", Body: csv, ContentType: "text/csv" }));
    const created = await call("PUT", "/export", {
      type: "objectstore",
      endpoint: store.endpoint,
      resolverGroup: "users-table",
      metadata: { type: "platformUse", purposeId: "service" },
      port: await freePort(),
      buckets: ["docs"],
    });
    assert.equal(created.status, 200, JSON.stringify(created.body));
    assert.equal(created.body.listen.host, exportHost);
    port = created.body.listen.port;
    await until("the export listens", () => listening(port));
  });

  after(async () => {
    direct?.destroy();
    await node?.kill();
    await store?.stop();
    await nats?.stop();
  });

  test("the AWS SDK with forcePathStyle false: GetObject redacted, HeadObject and ListObjectsV2 pass, PutObject and a bucket outside `buckets` refused", async () => {
    const looked: string[] = [];
    const sdk = virtualHostClient(exportHost, port, looked);
    const raw = await (await direct.send(new GetObjectCommand({ Bucket: "docs", Key: "people.csv" }))).Body!.transformToString();
    assert.ok(raw.includes("s3cret-a") && raw.includes("not-accepted"), "the store itself hands out every row and field");

    const text = await (await sdk.send(new GetObjectCommand({ Bucket: "docs", Key: "people.csv" }))).Body!.transformToString();
    assert.ok(looked.includes(`docs.${exportHost}`), `the SDK put the bucket into the host it connected to: ${looked.join(", ")}`);
    const pathStyle = await (await s3Client(port).send(new GetObjectCommand({ Bucket: "docs", Key: "people.csv" }))).Body!.transformToString();
    assert.equal(text, pathStyle, "virtual-host and path-style addressing give the same redacted document");
    // The one allowed user's row, its id and the unmapped field emptied (realisticPolicy: service may not use the id).
    assert.equal(text, "users.id,users.email,users.secret\n,a@example.com,\n");
    assert.ok(!text.includes("s3cret") && !text.includes("not-accepted"), text);

    const head = await sdk.send(new HeadObjectCommand({ Bucket: "docs", Key: "people.csv" }));
    assert.equal(head.$metadata.httpStatusCode, 200);
    assert.match(head.ETag ?? "", /^W\/"[0-9a-f]{32}"$/);
    const listed = await sdk.send(new ListObjectsV2Command({ Bucket: "docs" }));
    assert.deepEqual(
      listed.Contents?.map((object) => object.Key),
      ["people.csv"],
    );

    assert.deepEqual(
      await s3Failure(sdk.send(new PutObjectCommand({ Bucket: "docs", Key: "new.csv", Body: csv }))).then(({ code, status }) => ({ code, status })),
      { code: "AccessDenied", status: 403 },
    );
    assert.equal(
      (await direct.send(new GetObjectCommand({ Bucket: "hidden", Key: "people.csv" }))).$metadata.httpStatusCode,
      200,
      "the store serves the other bucket",
    );
    const hidden = await s3Failure(sdk.send(new GetObjectCommand({ Bucket: "hidden", Key: "people.csv" })));
    assert.deepEqual({ code: hidden.code, status: hidden.status }, { code: "AccessDenied", status: 403 });
    assert.ok(looked.includes(`hidden.${exportHost}`));
    sdk.destroy();
  });

  test("curl --resolve: the bucket named by the Host, the same redacted document; a Host naming no bucket is InvalidRequest", async () => {
    const got = await curl(port, `docs.${exportHost}`, "/people.csv");
    assert.equal(got.status, 200);
    const pathStyle = await curl(port, "127.0.0.1", "/docs/people.csv");
    assert.equal(pathStyle.status, 200);
    assert.equal(got.body, pathStyle.body);
    assert.ok(!got.body.includes("s3cret") && !got.body.includes("not-accepted"), got.body);

    // The same path on the export's own host is path-style: a v1 listing of a bucket named people.csv, not served.
    const bare = await curl(port, exportHost, "/people.csv");
    assert.equal(bare.status, 501);
    assert.match(bare.body, /<Code>NotImplemented<\/Code>/);
    const hidden = await curl(port, `hidden.${exportHost}`, "/people.csv");
    assert.equal(hidden.status, 403);
    assert.match(hidden.body, /<Code>AccessDenied<\/Code>/);
    assert.ok(!hidden.body.includes("s3cret"));

    const listed = await curl(port, `docs.${exportHost}`, "/?list-type=2");
    assert.equal(listed.status, 200);
    assert.match(listed.body, /<Key>people\.csv<\/Key>/);

    const notBucket = await curl(port, `Not_A_Bucket.${exportHost}`, "/people.csv");
    assert.equal(notBucket.status, 400);
    assert.match(notBucket.body, /<Code>InvalidRequest<\/Code>/);
    assert.match(notBucket.body, /<RequestId>[0-9A-F]{16}<\/RequestId>/);
  });
});
