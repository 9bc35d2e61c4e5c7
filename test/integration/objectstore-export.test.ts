import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { createServer, request as httpRequest, type Server, type ServerResponse } from "node:http";
import { randomBytes } from "node:crypto";
import { connect } from "node:net";
import { brotliCompressSync, brotliDecompressSync, constants as zlibConstants, deflateSync, gunzipSync, gzipSync, inflateSync } from "node:zlib";
import {
  CopyObjectCommand,
  DeleteObjectCommand,
  GetObjectCommand,
  HeadObjectCommand,
  ListBucketsCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  type S3Client,
} from "@aws-sdk/client-s3";
import type { NatsConnection } from "@nats-io/transport-node";
import type { AuditRecord } from "../../actors/runtime/event-log";
import type { NatsServerProcess } from "../../service/nats-server";
import { realisticPolicy } from "../../testkit/policy";
import { createPopulation, populationIds } from "../fixtures/population";
import { call as request, type Body } from "../../testkit/http";
import { connectTo, startNats, storedMessages, storedTraceRecords } from "../../testkit/nats";
import { NodeProcess } from "../../testkit/node-process";
import { freePorts } from "../../testkit/ports";
import { S3Store, s3rverCredentials } from "../../testkit/s3";
import { s3Client, s3Failure } from "../helpers/s3-client";
import { listening, until } from "../../testkit/wait";

const cluster = { HEARTBEAT_MS: "1000", LEASE_TTL_MS: "4000" };
const columns = ["users.id", "users.email", "users.login", "users.name", "users.clicks", "users.secret"];
const records = populationIds.map((id, n) => ({
  "users.id": id,
  "users.email": `${id || "nobody"}@example.com`,
  "users.login": `login-${id}`,
  "users.name": `Name ${id}`,
  "users.clicks": n,
  "users.secret": `s3cret-${n}`,
}));
const csv = `${columns.join(",")}\n${records.map((r) => columns.map((c) => String(r[c as keyof typeof r])).join(",")).join("\n")}\n`;
const json = JSON.stringify(records);
const ndjson = `${records.map((r) => JSON.stringify(r)).join("\n")}\n`;

/** A raw GET of the export: status, headers, and the body as far as it came (`complete`: the chunked answer ended properly). */
function rawGet(
  port: number,
  path: string,
  headers: Record<string, string> = {},
): Promise<{ status: number; headers: Record<string, string | string[] | undefined>; body: string; complete: boolean }> {
  return new Promise((resolve, reject) => {
    const outgoing = httpRequest({ host: "127.0.0.1", port, path, headers }, (response) => {
      const chunks: Buffer[] = [];
      response.on("data", (chunk: Buffer) => chunks.push(chunk));
      const settle = (complete: boolean) =>
        resolve({ status: response.statusCode!, headers: response.headers, body: Buffer.concat(chunks).toString("utf8"), complete });
      response.on("end", () => settle(response.complete));
      response.on("error", () => settle(false));
      response.on("aborted", () => settle(false));
    });
    outgoing.on("error", reject);
    outgoing.end();
  });
}

/** A GET over HTTP/1.0 on a raw socket (Node's client speaks only 1.1): the head and the body, read until the server closes. */
function http10Get(port: number, path: string): Promise<{ head: string; body: string }> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, "127.0.0.1", () => socket.write(`GET ${path} HTTP/1.0\r\nHost: 127.0.0.1:${port}\r\n\r\n`));
    const chunks: Buffer[] = [];
    socket.on("data", (chunk: Buffer) => chunks.push(chunk));
    socket.on("error", reject);
    socket.on("close", () => {
      const text = Buffer.concat(chunks).toString("utf8");
      const split = text.indexOf("\r\n\r\n");
      resolve({ head: text.slice(0, split), body: text.slice(split + 4) });
    });
  });
}

describe("objectstore exports: an S3 endpoint handing out documents redacted per record", () => {
  let nats: NatsServerProcess;
  let store: S3Store;
  let nodes: NodeProcess[] = [];
  let nc: NatsConnection;
  let ports: number[];
  let direct: S3Client;
  const dead = new Set<NodeProcess>();
  const live = () => nodes.find((n) => !dead.has(n))!;
  const call = (method: string, path: string, body?: unknown) => request(live(), method, path, body);
  const objectstoreBody = (extra: Record<string, unknown> = {}) => ({
    type: "objectstore",
    endpoint: store.endpoint,
    resolverGroup: "users-table",
    metadata: { type: "platformUse", purposeId: "service" },
    ...extra,
  });
  const created = async (extra: Record<string, unknown>): Promise<Body> => {
    const answer = await call("PUT", "/export", objectstoreBody(extra));
    assert.equal(answer.status, 200, JSON.stringify(answer.body));
    await until("the export listens", () => listening(answer.body.listen.port));
    return answer.body;
  };

  /** What /redact/document makes of the same document: the engines are the same, so the export must give these bytes. */
  const redactedByJob = async (contentType: string, document: string): Promise<string> => {
    const upload = await fetch(`${live().url}/redact/document?purposeId=service&type=platformUse&mappingGroup=users-table`, {
      method: "PUT",
      headers: { "content-type": contentType },
      body: document,
    });
    const job = (await upload.json()) as Body;
    assert.equal(upload.status, 200, JSON.stringify(job));
    await until("the redaction job completes", async () => (await call("GET", `/redact/progress?jobName=${job.jobName}`)).body.status === "complete");
    return (await fetch(`${live().url}/redact/document?jobName=${job.jobName}`)).text();
  };

  before(async () => {
    nats = await startNats();
    store = await S3Store.start(["docs", "hidden"]);
    ports = await freePorts(7);
    nodes = await NodeProcess.startAll(
      ["os-1", "os-2"].map((nodeId) => ({ nodeId, natsUrl: nats.url, env: { ...cluster, EXPORT_PORTS: `${ports[5]}-${ports[5]}` } })),
    );
    assert.equal((await call("PUT", "/config", realisticPolicy())).status, 200);
    await createPopulation(call);
    nc = await connectTo(nats.url);
    direct = s3Client(store.port, { credentials: s3rverCredentials });
    const put = (Bucket: string, Key: string, Body: string, ContentType?: string) =>
      direct.send(new PutObjectCommand({ Bucket, Key, Body, ...(ContentType ? { ContentType } : {}) }));
    await put("docs", "people.csv", csv, "text/csv");
    await put("docs", "people.json", json, "application/json");
    await put("docs", "people.ndjson", ndjson, "application/octet-stream");
    await put("docs", "by-suffix/people.csv", csv, "binary/octet-stream");
    await put("docs", "picture.png", "\x89PNG not a document", "image/png");
    await put("docs", "ragged.csv", "users.id,users.email\naccepted,a@x,extra\n", "text/csv");
    await put("hidden", "people.csv", csv, "text/csv");
  });

  after(async () => {
    direct?.destroy();
    await nc?.close();
    await Promise.all(nodes.filter((n) => !dead.has(n)).map((n) => n.kill()));
    await store?.stop();
    await nats?.stop();
  });

  test("PUT /export: bad bodies are refused naming the field and create nothing; credentials are never read back; stop, start and delete close and open the port", async () => {
    // The request schema's refusals are ERR_REQUEST_INVALID; the export types' own, ERR_EXPORT_INVALID.
    const refused: Array<[Record<string, unknown>, string, string?]> = [
      [objectstoreBody({ endpoint: undefined }), "endpoint"],
      [objectstoreBody({ endpoint: "127.0.0.1:9000" }), "endpoint"],
      [objectstoreBody({ endpoint: `${store.endpoint}/docs` }), "endpoint"],
      [objectstoreBody({ endpoint: "ftp://127.0.0.1:21" }), "endpoint"],
      [objectstoreBody({ credentials: { user: "u", password: "p" } }), "credentials"],
      // Export credentials need an enforced component (nothing is enforced on these nodes).
      [objectstoreBody({ credentials: { accessKeyId: "S3RVER", secretAccessKey: "S3RVER" } }), "credentials"],
      [objectstoreBody({ strict: true }), "strict"],
      [objectstoreBody({ backendTls: "require" }), "backendTls"],
      [objectstoreBody({ resourceServerId: "aud" }), "resourceServerId"],
      [objectstoreBody({ backendTls: "require" }), "backendTls"],
      [objectstoreBody({ buckets: ["Not_A_Bucket"] }), "buckets[0]"],
      [objectstoreBody({ formats: { csv: "csv" } }), "formats.csv"],
      [objectstoreBody({ resolverGroup: "nope" }), "resolverGroup"],
      [objectstoreBody({ rangedReads: { parallel: 0 } }), "/rangedReads/parallel", "ERR_REQUEST_INVALID"],
      [objectstoreBody({ rangedReads: { parallel: 17 } }), "/rangedReads/parallel", "ERR_REQUEST_INVALID"],
      [objectstoreBody({ rangedReads: { rangeBytes: 1000 } }), "/rangedReads/rangeBytes", "ERR_REQUEST_INVALID"],
      [objectstoreBody({ rangedReads: {} }), "/rangedReads", "ERR_REQUEST_INVALID"],
      [
        { type: "pipeline", resolverGroup: "users-table", metadata: { type: "platformUse", purposeId: "service" }, rangedReads: { parallel: 2 } },
        "rangedReads",
      ],
      [{ type: "pipeline", resolverGroup: "users-table", metadata: { type: "platformUse", purposeId: "service" }, buckets: ["docs"] }, "buckets"],
      [
        {
          type: "postgres",
          endpoint: "127.0.0.1:5432",
          resolverGroup: "users-table",
          metadata: { type: "platformUse", purposeId: "service" },
          credentials: { accessKeyId: "A", secretAccessKey: "B" },
        },
        "credentials",
      ],
    ];
    for (const [body, path, code = "ERR_EXPORT_INVALID"] of refused) {
      const answer = await call("PUT", "/export", body);
      assert.equal(answer.status, 400, `${path}: ${JSON.stringify(answer.body)}`);
      assert.equal(answer.body.error.code, code, JSON.stringify(answer.body));
      assert.equal(answer.body.error.details[0].path, path, JSON.stringify(answer.body));
    }
    assert.deepEqual((await call("GET", "/export")).body.exports, [], "nothing was created by a refused body");

    const body = await created({ port: ports[0], buckets: ["docs"], formats: { ".data": "csv" } });
    const id: string = body.id;
    assert.equal(body.type, "objectstore");
    assert.equal(body.endpoint, store.endpoint);
    assert.equal(body.backendIdentity, "client");
    assert.deepEqual(body.buckets, ["docs"]);
    const client = s3Client(ports[0]!);
    const got = await client.send(new GetObjectCommand({ Bucket: "docs", Key: "people.csv" }));
    assert.match(await got.Body!.transformToString(), /^users\.id,/);

    assert.equal((await call("PUT", `/export/stop?id=${id}`)).body.status, "inactive");
    await until("the port closes", async () => !(await listening(ports[0]!)));
    assert.equal((await call("PUT", `/export/start?id=${id}`)).body.status, "active");
    await until("the port opens again", () => listening(ports[0]!));
    assert.equal((await client.send(new GetObjectCommand({ Bucket: "docs", Key: "people.csv" }))).$metadata.httpStatusCode, 200);
    const listed = (await call("GET", `/export?id=${id}`)).body;
    assert.ok(listed.serving.rows.in > 0, JSON.stringify(listed.serving));
    assert.equal((await call("DELETE", `/export?id=${id}`)).status, 200);
    await until("the port closes for good", async () => !(await listening(ports[0]!)));
    assert.equal((await call("GET", `/export?id=${id}`)).status, 404);
    client.destroy();

    const audit = await storedMessages<AuditRecord>(nc, "WARDEN_AUDIT");
    const events = audit.filter((m) => m.data.category === "objectstore" && m.data.details?.exportId === id).map((m) => m.data.event);
    assert.ok(events.filter((e) => e === "port.opened").length >= 2 && events.includes("port.closed"), events.join(","));
  });

  test("GetObject streams CSV, JSON and NDJSON redacted as /redact/document redacts them: what the store hands out raw does not pass", async () => {
    const body = await created({ port: ports[1] });
    const client = s3Client(ports[1]!);
    const unsigned = s3Client(ports[1]!, { unsigned: true });
    for (const [key, contentType, document] of [
      ["people.csv", "text/csv", csv],
      ["by-suffix/people.csv", "text/csv", csv],
      ["people.json", "application/json", json],
      ["people.ndjson", "application/x-ndjson", ndjson],
    ] as const) {
      const raw = await (await direct.send(new GetObjectCommand({ Bucket: "docs", Key: key }))).Body!.transformToString();
      assert.ok(raw.includes("s3cret-0") && raw.includes("not-accepted@example.com"), `${key}: the store itself hands out every row and field`);
      const expected = await redactedByJob(contentType, document);
      for (const [what, sdk] of [
        ["signed", client],
        ["unsigned", unsigned],
      ] as const) {
        const answer = await sdk.send(new GetObjectCommand({ Bucket: "docs", Key: key }));
        const text = await answer.Body!.transformToString();
        assert.equal(text, expected, `${key} (${what}): the export's bytes are the redaction engine's`);
        assert.ok(!text.includes("s3cret") && !text.includes("not-accepted"), `${key}: no unmapped field, no row of a user who may not be used`);
        assert.equal(answer.ContentLength, undefined, `${key}: no length (chunked), never the stored one`);
        assert.match(answer.ETag ?? "", /^W\/"[0-9a-f]{32}"$/);
      }
    }
    assert.ok(csv.split("\n")[0] === (await redactedByJob("text/csv", csv)).split("\n")[0], "the header row is kept");

    // Raw HTTP: chunked, a derived ETag unlike the stored one, a request id.
    const stored = await direct.send(new HeadObjectCommand({ Bucket: "docs", Key: "people.csv" }));
    const raw = await rawGet(ports[1]!, "/docs/people.csv");
    assert.equal(raw.status, 200);
    assert.equal(raw.headers["transfer-encoding"], "chunked");
    assert.equal(raw.headers["content-length"], undefined);
    assert.notEqual(raw.headers.etag, stored.ETag);
    assert.equal(raw.headers["cache-control"], "no-store");
    assert.match(String(raw.headers["x-amz-request-id"]), /^[0-9A-F]{16}$/);

    // Each user was decided and traced before their rows went out; the door traced each object's summary.
    const traces = await storedTraceRecords<Body>(nc, "warden.trace.export.>");
    const users = traces.filter((t) => t.record.kind === "export.user" && t.record.exportId === body.id).map((t) => t.record.userId);
    for (const userId of ["accepted", "not-accepted", "child"]) assert.ok(users.includes(userId), `${userId} decided and traced`);
    const objects = traces.filter((t) => t.record.kind === "export.object" && t.record.exportId === body.id);
    assert.ok(
      objects.some((t) => t.record.key === "people.csv" && t.record.outcome === "complete" && t.record.rowsIn === records.length),
      JSON.stringify(objects.map((o) => o.record)),
    );
    client.destroy();
    unsigned.destroy();
  });

  test("objects stored compressed (Content-Encoding gzip, deflate, br) are decoded and redacted, in one GET or in ranges; a coding the export does not decode is refused", async () => {
    // Larger than a range of 64 KiB once compressed (random secrets do not compress): read in ranges, it has several.
    const lines = [`${columns.join(",")}\n`];
    for (let n = 0; lines.length < 20_000; n++) {
      const id = populationIds[n % populationIds.length];
      lines.push(`${id},${id || "nobody"}-${n}@example.com,login-${n},"Name, ${n}",${n},s3cret-${randomBytes(8).toString("hex")}\n`);
    }
    const large = lines.join("");
    const stored: Array<
      [key: string, contentType: string, encoding: string, document: string, encode: (text: string) => Buffer, decode: (bytes: Buffer) => Buffer]
    > = [
      ["compressed/large.csv", "text/csv", "gzip", large, (text) => gzipSync(text), gunzipSync],
      ["compressed/people.csv", "text/csv", "gzip", csv, (text) => gzipSync(text), gunzipSync],
      ["compressed/people.json", "application/json", "br", json, (text) => brotliCompressSync(text), brotliDecompressSync],
      ["compressed/people.ndjson", "application/x-ndjson", "deflate", ndjson, (text) => deflateSync(text), inflateSync],
    ];
    for (const [key, contentType, encoding, document, encode] of stored)
      await direct.send(new PutObjectCommand({ Bucket: "docs", Key: key, Body: encode(document), ContentType: contentType, ContentEncoding: encoding }));
    assert.ok(gzipSync(large).length > 3 * 65536, "the large object has several ranges of 64 KiB");
    await direct.send(
      new PutObjectCommand({ Bucket: "docs", Key: "compressed/zstd.csv", Body: "(zstd bytes)", ContentType: "text/csv", ContentEncoding: "zstd" }),
    );

    // Read directly, the store hands out the compressed bytes, every row and field in them once decoded.
    for (const [key, , encoding, , , decode] of stored) {
      const answer = await direct.send(new GetObjectCommand({ Bucket: "docs", Key: key }));
      assert.equal(answer.ContentEncoding, encoding, `${key}: the store keeps the coding`);
      const raw = decode(Buffer.from(await answer.Body!.transformToByteArray())).toString();
      assert.ok(raw.includes("s3cret-") && raw.includes("not-accepted"), `${key}: decoded, the store's bytes hold everything`);
    }
    // In one GET, and in ranges of 64 KiB (the store's first range is dropped and the object read in one GET: it decodes from its first byte).
    for (const rangedReads of [undefined, { parallel: 2, rangeBytes: 65536 }]) {
      const exported = await created({ port: ports[4], ...(rangedReads ? { rangedReads } : {}) });
      const client = s3Client(ports[4]!);
      for (const [key, contentType, , document] of stored) {
        const expected = await redactedByJob(contentType, document);
        const answer = await client.send(new GetObjectCommand({ Bucket: "docs", Key: key }));
        assert.equal(
          await answer.Body!.transformToString(),
          expected,
          `${key} (${JSON.stringify(rangedReads ?? "one GET")}): decoded and redacted as /redact/document redacts the plain document`,
        );
        assert.equal(answer.ContentEncoding, undefined, `${key}: answered plain, with no coding`);
        const raw = await rawGet(ports[4]!, `/docs/${key}`, { "accept-encoding": "gzip, br" });
        assert.equal(raw.headers["content-encoding"], undefined);
        assert.ok(raw.complete && raw.body === expected);
      }
      const refused = await s3Failure(client.send(new GetObjectCommand({ Bucket: "docs", Key: "compressed/zstd.csv" })));
      assert.equal(refused.status, 403);
      assert.equal(refused.code, "AccessDenied");
      assert.match(refused.message, /content coding this export does not decode/);
      client.destroy();
      assert.equal((await call("DELETE", `/export?id=${exported.id}`)).status, 200);
      await until("the port is free again", async () => !(await listening(ports[4]!)));
    }
  });

  test("a client that goes away stops the decoding of an object stored compressed: a few KB decoding to a GiB of dropped rows is not decoded and redacted to its end for nobody", async () => {
    // 1 GiB of rows of a user who may not be used, brotli-compressed to a few KB: stored whole in the node's buffers at once.
    // Every row is dropped, so nothing goes out and no slow client holds the decoding back: only the client's leaving can.
    const header = `${columns.join(",")}\n`;
    const plain = Buffer.alloc(1 << 30);
    plain.write(header);
    plain.fill("not-accepted,bomb@example.com,login,Name,1,s3cret\n", header.length);
    const decodedBytes = plain.lastIndexOf("\n") + 1;
    const bomb = brotliCompressSync(plain.subarray(0, decodedBytes), { params: { [zlibConstants.BROTLI_PARAM_QUALITY]: 5 } });
    assert.ok(bomb.length < 16 << 10, `${bomb.length} bytes stored, ${decodedBytes} decoded`);
    await direct.send(new PutObjectCommand({ Bucket: "docs", Key: "compressed/bomb.csv", Body: bomb, ContentType: "text/csv", ContentEncoding: "br" }));
    // Read directly: a few KB of brotli holding a GiB of rows.
    const stored = await direct.send(new GetObjectCommand({ Bucket: "docs", Key: "compressed/bomb.csv" }));
    assert.equal(stored.ContentEncoding, "br");
    assert.equal((await stored.Body!.transformToByteArray()).length, bomb.length);

    const exported = await created({ port: ports[4] });
    // The header row goes out at once; the client takes it and goes away.
    await new Promise<void>((resolve) => {
      const outgoing = httpRequest({ host: "127.0.0.1", port: ports[4]!, path: "/docs/compressed/bomb.csv" }, (response) => {
        assert.equal(response.statusCode, 200);
        response.once("data", () => {
          outgoing.destroy();
          resolve();
        });
      });
      outgoing.on("error", () => undefined);
      outgoing.once("close", () => resolve());
      outgoing.end();
    });
    const left = Date.now();
    let ended: Body | undefined;
    await until(
      "the abandoned document is traced",
      async () => {
        ended = (await storedTraceRecords<Body>(nc, "warden.trace.export.>")).find(
          (trace) => trace.record.kind === "export.object" && trace.record.exportId === exported.id && trace.record.key === "compressed/bomb.csv",
        )?.record;
        return ended !== undefined;
      },
      120_000,
    );
    assert.notEqual(ended!.outcome, "complete");
    assert.ok(
      ended!.bytesIn < decodedBytes / 4,
      `the decoding stopped with the client: ${ended!.bytesIn} of ${decodedBytes} bytes decoded and redacted, traced ${Date.now() - left} ms after the client left`,
    );
    assert.equal((await call("DELETE", `/export?id=${exported.id}`)).status, 200);
    await until("the port is free again", async () => !(await listening(ports[4]!)));
  });

  test("a compressed object with bytes after the end of its stream is cut off, never ended as a whole document; one that does not decode is 422 before the answer", async () => {
    // The decoders stop at the end of their stream and drop what follows: a second deflate stream, plain bytes after brotli,
    // a second gzip member after a zero byte. Without a check the export ended the first part alone as a complete document.
    const part = (tag: string, count: number) =>
      Array.from({ length: count }, (_, n) => `accepted,${tag}-${n}@example.com,login-${n},Name,${n},s3cret\n`).join("");
    const first = `${columns.join(",")}\n${part("first", 200_000)}`;
    const second = part("second", 1000);
    const cases: Array<[key: string, encoding: string, head: Buffer, rest: Buffer, decodeRest: (bytes: Buffer) => Buffer]> = [
      ["trailing/two-deflate.csv", "deflate", deflateSync(first), deflateSync(second), inflateSync],
      [
        "trailing/brotli-then-plain.csv",
        "br",
        brotliCompressSync(first, { params: { [zlibConstants.BROTLI_PARAM_QUALITY]: 5 } }),
        Buffer.from(second),
        (bytes) => bytes,
      ],
      ["trailing/gzip-zero-gzip.csv", "gzip", gzipSync(first), Buffer.concat([Buffer.from([0]), gzipSync(second)]), (bytes) => gunzipSync(bytes.subarray(1))],
    ];
    for (const [key, encoding, head, rest] of cases)
      await direct.send(
        new PutObjectCommand({ Bucket: "docs", Key: key, Body: Buffer.concat([head, rest]), ContentType: "text/csv", ContentEncoding: encoding }),
      );
    await direct.send(
      new PutObjectCommand({
        Bucket: "docs",
        Key: "trailing/truncated.csv",
        Body: gzipSync(csv).subarray(0, 40),
        ContentType: "text/csv",
        ContentEncoding: "gzip",
      }),
    );
    const exported = await created({ port: ports[4] });
    const client = s3Client(ports[4]!);
    for (const [key, , head, rest, decodeRest] of cases) {
      // Directly: the store hands out every byte, the second part's rows after the first stream.
      const stored = Buffer.from(await (await direct.send(new GetObjectCommand({ Bucket: "docs", Key: key }))).Body!.transformToByteArray());
      assert.equal(stored.length, head.length + rest.length);
      assert.ok(
        decodeRest(stored.subarray(head.length)).toString().includes("accepted,second-0@example.com"),
        `${key}: the object goes on past its first stream`,
      );
      // Through the export: the first part's rows go out, and the answer is cut off: it is not the object's whole document.
      const raw = await rawGet(ports[4]!, `/docs/${key}`);
      assert.equal(raw.status, 200);
      assert.ok(raw.body.includes(",first-0@example.com,"), `${key}: the first part streamed`);
      assert.equal(raw.complete, false, `${key}: ${raw.body.length} bytes ended as a whole document, the object's bytes after its stream dropped`);
      assert.ok(!raw.body.includes("second-"));
    }
    // A small object whose stray byte is found right after its first output (the header and rows, made before the answer
    // starts): the answer's head and that output still reach the client, then it is cut off (before, the connection was
    // destroyed with them unsent: the client saw no answer at all).
    await direct.send(
      new PutObjectCommand({
        Bucket: "docs",
        Key: "trailing/small-then-garbage.csv",
        Body: Buffer.concat([gzipSync(csv), Buffer.from([0xff])]),
        ContentType: "text/csv",
        ContentEncoding: "gzip",
      }),
    );
    const small = await rawGet(ports[4]!, "/docs/trailing/small-then-garbage.csv");
    assert.equal(small.status, 200);
    assert.equal(small.complete, false, "cut off, not a whole document");
    // A stream that does not decode is a malformed document (docs/objectstore-export.md): 422 before the answer, not 500.
    const refused = await s3Failure(client.send(new GetObjectCommand({ Bucket: "docs", Key: "trailing/truncated.csv" })));
    assert.equal(refused.status, 422);
    assert.equal(refused.code, "InvalidObjectState");
    assert.match(refused.message, /CONTENT_CODING_MALFORMED/);
    client.destroy();
    assert.equal((await call("DELETE", `/export?id=${exported.id}`)).status, 200);
    await until("the port is free again", async () => !(await listening(ports[4]!)));
  });

  /** A GET of the export read slowly: it stops for 20 ms every four chunks, so the store's reads are paused and resumed many times mid-body. */
  const slowGet = (port: number, path: string) =>
    new Promise<{ body: string; complete: boolean }>((resolve, reject) => {
      const outgoing = httpRequest({ host: "127.0.0.1", port, path }, (response) => {
        const chunks: Buffer[] = [];
        response.on("data", (chunk: Buffer) => {
          chunks.push(chunk);
          if (chunks.length % 4 === 0) {
            response.pause();
            setTimeout(() => response.resume(), 20);
          }
        });
        response.on("end", () => resolve({ body: Buffer.concat(chunks).toString("utf8"), complete: response.complete }));
        response.on("error", reject);
      });
      outgoing.on("error", reject);
      outgoing.end();
    });

  test("a CSV of many socket reads and worker blocks, read fast and read slowly, in one GET or in ranges, gives the redaction engine's bytes every time", async () => {
    // 24 MiB: past the 8 MiB the engine keeps on the calling thread, so worker blocks and ~100 reused socket reads are in play.
    const lines = [`${columns.join(",")}\n`];
    for (let n = 0; lines.length < 330_000; n++) {
      const id = populationIds[n % populationIds.length];
      lines.push(`${id},${id || "nobody"}-${n}@example.com,login-${n},"Name, ${n}",${n},s3cret-${n}\n`);
    }
    const large = lines.join("");
    assert.ok(large.length > 20 << 20, `${large.length} bytes`);
    await direct.send(new PutObjectCommand({ Bucket: "docs", Key: "large.csv", Body: large, ContentType: "text/csv" }));
    const raw = await (await direct.send(new GetObjectCommand({ Bucket: "docs", Key: "large.csv" }))).Body!.transformToString();
    assert.ok(raw.includes("not-accepted-1@example.com") && raw.includes("s3cret-329998"), "the store itself hands out every row and field");
    const expected = await redactedByJob("text/csv", large);
    assert.ok(!expected.includes("not-accepted-1@example.com") && !expected.includes("s3cret"));

    // The default (one GET), ranges of 8 MiB three at once, and ranges of 64 KiB four at once (row after row cut between two ranges).
    for (const rangedReads of [undefined, { parallel: 3 }, { parallel: 4, rangeBytes: 65536 }]) {
      const reading = JSON.stringify(rangedReads ?? "defaults");
      const exported = await created({ port: ports[3], ...(rangedReads ? { rangedReads } : {}) });
      assert.deepEqual((await call("GET", `/export?id=${exported.id}`)).body.rangedReads, rangedReads, "the setting reads back as given");
      const fast = await rawGet(ports[3]!, "/docs/large.csv");
      assert.equal(fast.status, 200);
      assert.ok(fast.complete);
      assert.ok(fast.body === expected, `${reading}, read fast: ${fast.body.length} bytes, the engine's ${expected.length}`);
      const slow = await slowGet(ports[3]!, "/docs/large.csv");
      assert.ok(slow.complete);
      assert.ok(slow.body === expected, `${reading}, read slowly: ${slow.body.length} bytes, the engine's ${expected.length}`);
      assert.equal((await call("DELETE", `/export?id=${exported.id}`)).status, 200);
      await until("the port is free again", async () => !(await listening(ports[3]!)));
    }
  });

  test("an object overwritten while the export reads it in ranges: read directly, ranges of two versions join into rows no version has; through the export the stream is cut off and nothing of the second version passes", async () => {
    // Version 1: rows of an allowed user. Version 2: rows of a user whose data may not be used, with other lengths, so
    // that a row of version 1 cut between two ranges goes on with bytes of version 2 (its email, its secret).
    const rows = (id: string, tag: string, count: number) =>
      `${columns.join(",")}\n${Array.from({ length: count }, (_, n) => `${id},${tag}-${n}@example.com,login-${n},Name,${n},s3cret\n`).join("")}`;
    const v1 = rows("accepted", "first", 400_000);
    const v2 = rows("not-accepted", "LEAKED-second-version", 400_000);
    const rangeBytes = 65536;
    const put = (body: string) => direct.send(new PutObjectCommand({ Bucket: "docs", Key: "changing.csv", Body: body, ContentType: "text/csv" }));

    // Directly: a downloader that joins ranges without checking they are of one version.
    await put(v1);
    const range = async (start: number) =>
      (
        await direct.send(new GetObjectCommand({ Bucket: "docs", Key: "changing.csv", Range: `bytes=${start}-${start + rangeBytes - 1}` }))
      ).Body!.transformToString();
    const first = await range(0);
    await put(v2);
    const joined = first + (await range(rangeBytes));
    const cut = joined.lastIndexOf("\n", rangeBytes - 1) + 1;
    const spliced = joined.slice(cut, joined.indexOf("\n", rangeBytes));
    assert.ok(spliced.startsWith("accepted,"), spliced);
    assert.ok(!v1.includes(`\n${spliced}\n`), `read directly, a row of the allowed user goes on with the other user's bytes: ${spliced}`);

    // Through the export (ranges of 64 KiB, two at once): the client reads a little, the object is overwritten, the client reads on.
    await put(v1);
    const exported = await created({ port: ports[6], rangedReads: { parallel: 2, rangeBytes } });
    const outcome = await new Promise<{ body: string; complete: boolean }>((resolve, reject) => {
      const outgoing = httpRequest({ host: "127.0.0.1", port: ports[6]!, path: "/docs/changing.csv" }, (response) => {
        const chunks: Buffer[] = [];
        response.once("data", (chunk: Buffer) => {
          chunks.push(chunk);
          response.pause();
          void put(v2).then(() => {
            response.on("data", (more: Buffer) => chunks.push(more));
            response.resume();
          }, reject);
        });
        const settle = () => resolve({ body: Buffer.concat(chunks).toString("utf8"), complete: response.complete });
        response.on("end", settle);
        response.on("aborted", settle);
        response.on("error", settle);
      });
      outgoing.on("error", reject);
      outgoing.end();
    });
    assert.equal(outcome.complete, false, "the answer is cut off, not ended as a whole document");
    assert.ok(outcome.body.startsWith("users.id,"), "the first version's start was sent");
    assert.ok(!outcome.body.includes("LEAKED"), "nothing of the second version passed");
    const whole = outcome.body.split("\n").slice(1, -1);
    assert.ok(whole.length > 0);
    for (const line of whole)
      assert.match(line, /^,first-\d+@example\.com,login-\d+,Name,\d+,$/, "every row sent is a row of the first version (its id and secret emptied)");
    assert.ok(outcome.body.length < v1.length);
    await until("the cut-off document is traced as failed", async () =>
      (await storedTraceRecords<Body>(nc, "warden.trace.export.>")).some(
        (trace) => trace.record.kind === "export.object" && trace.record.exportId === exported.id && trace.record.outcome === "failed",
      ),
    );
    assert.equal((await call("DELETE", `/export?id=${exported.id}`)).status, 200);
  });

  test("HeadObject, ListObjectsV2 and ListBuckets pass within `buckets`; Range, unknown formats, malformed documents, writes and other operations are refused as S3 errors, and audited", async () => {
    const body = await created({ port: ports[2], buckets: ["docs"] });
    const client = s3Client(ports[2]!);
    const head = await client.send(new HeadObjectCommand({ Bucket: "docs", Key: "people.csv" }));
    assert.equal(head.ContentLength, Buffer.byteLength(csv), "HeadObject shows the stored size (documented)");
    assert.match(head.ETag ?? "", /^W\//);
    const listing = await client.send(new ListObjectsV2Command({ Bucket: "docs", Prefix: "people" }));
    assert.deepEqual(listing.Contents?.map((c) => c.Key).sort(), ["people.csv", "people.json", "people.ndjson"]);
    const buckets = await client.send(new ListBucketsCommand({}));
    assert.deepEqual(
      buckets.Buckets?.map((b) => b.Name),
      ["docs"],
      "a bucket outside `buckets` is not listed",
    );
    assert.deepEqual((await direct.send(new ListBucketsCommand({}))).Buckets?.map((b) => b.Name).sort(), ["docs", "hidden"], "the store itself lists both");

    const hidden = await s3Failure(client.send(new GetObjectCommand({ Bucket: "hidden", Key: "people.csv" })));
    assert.deepEqual([hidden.code, hidden.status], ["AccessDenied", 403]);
    const picture = await s3Failure(client.send(new GetObjectCommand({ Bucket: "docs", Key: "picture.png" })));
    assert.deepEqual([picture.code, picture.status], ["AccessDenied", 403]);
    assert.match(picture.message, /not a document this export redacts/);
    const range = await s3Failure(client.send(new GetObjectCommand({ Bucket: "docs", Key: "people.csv", Range: "bytes=0-10" })));
    assert.deepEqual([range.code, range.status], ["NotImplemented", 501]);
    const rangeDirect = await direct.send(new GetObjectCommand({ Bucket: "docs", Key: "people.csv", Range: "bytes=0-200" }));
    assert.match(await rangeDirect.Body!.transformToString(), /s3cret|not-accepted/, "a range of the stored object is raw bytes: the export must not pass it");
    const ragged = await s3Failure(client.send(new GetObjectCommand({ Bucket: "docs", Key: "ragged.csv" })));
    assert.equal(ragged.status, 422);
    assert.match(ragged.message, /CSV_RAGGED_ROW \(line 2\)/);
    const missing = await s3Failure(client.send(new GetObjectCommand({ Bucket: "docs", Key: "nothing.csv" })));
    assert.deepEqual([missing.code, missing.status], ["NoSuchKey", 404]);
    const put = await s3Failure(client.send(new PutObjectCommand({ Bucket: "docs", Key: "new.csv", Body: "users.id\nx\n" })));
    assert.deepEqual([put.code, put.status], ["AccessDenied", 403]);
    const del = await s3Failure(client.send(new DeleteObjectCommand({ Bucket: "docs", Key: "people.csv" })));
    assert.deepEqual([del.code, del.status], ["AccessDenied", 403]);
    assert.equal((await direct.send(new HeadObjectCommand({ Bucket: "docs", Key: "people.csv" }))).$metadata.httpStatusCode, 200, "nothing was deleted");

    const acl = await rawGet(ports[2]!, "/docs/people.csv?acl");
    assert.equal(acl.status, 501);
    assert.match(
      acl.body,
      /<Error><Code>NotImplemented<\/Code><Message>[^<]+<\/Message><Resource>\/docs\/people.csv<\/Resource><RequestId>[0-9A-F]{16}<\/RequestId><\/Error>/,
    );
    assert.equal(acl.headers["x-amz-request-id"], /<RequestId>([0-9A-F]+)</.exec(acl.body)![1]);
    const v1 = await rawGet(ports[2]!, "/docs");
    assert.equal(v1.status, 501);
    const again = await rawGet(ports[2]!, "/docs/people.csv?acl");
    assert.notEqual(/<RequestId>([0-9A-F]+)</.exec(again.body)![1], /<RequestId>([0-9A-F]+)</.exec(acl.body)![1], "a request id per request");

    const audit = await storedMessages<AuditRecord>(nc, "WARDEN_AUDIT");
    const refusals = audit
      .filter((m) => m.data.category === "objectstore" && m.data.event === "request.refused" && m.data.details?.exportId === body.id)
      .map((m) => m.data.details?.code);
    for (const code of ["AccessDenied", "NotImplemented"]) assert.ok(refusals.includes(code), `${code} audited: ${refusals.join(",")}`);
    client.destroy();
  });

  test("allowWrites: PutObject, CopyObject and DeleteObject pass unchanged (within `buckets`)", async () => {
    await created({ port: ports[3], buckets: ["docs"], allowWrites: true });
    const client = s3Client(ports[3]!);
    await client.send(new PutObjectCommand({ Bucket: "docs", Key: "written.csv", Body: csv, ContentType: "text/csv" }));
    assert.equal(
      await (await direct.send(new GetObjectCommand({ Bucket: "docs", Key: "written.csv" }))).Body!.transformToString(),
      csv,
      "the store got the body unchanged",
    );
    await client.send(new CopyObjectCommand({ Bucket: "docs", Key: "copied.csv", CopySource: "docs/written.csv" }));
    assert.equal(await (await direct.send(new GetObjectCommand({ Bucket: "docs", Key: "copied.csv" }))).Body!.transformToString(), csv, "copied by the store");
    assert.equal(
      (await s3Failure(client.send(new PutObjectCommand({ Bucket: "hidden", Key: "x.csv", Body: csv })))).code,
      "AccessDenied",
      "a bucket outside `buckets` is refused",
    );
    assert.equal(
      (await s3Failure(client.send(new CopyObjectCommand({ Bucket: "docs", Key: "y.csv", CopySource: "hidden/people.csv" })))).code,
      "AccessDenied",
      "a copy's source outside `buckets` too",
    );
    await assert.rejects(direct.send(new HeadObjectCommand({ Bucket: "docs", Key: "y.csv" })), "nothing was copied out of a hidden bucket");
    await client.send(new DeleteObjectCommand({ Bucket: "docs", Key: "written.csv" }));
    const gone = await s3Failure(direct.send(new HeadObjectCommand({ Bucket: "docs", Key: "written.csv" })));
    assert.equal(gone.status, 404);
    client.destroy();
  });

  test("object keys with '.' or '..' segments are refused: the store resolves them into another bucket, past `buckets`", async () => {
    // The exports of the two tests before: ports[2] read-only, ports[3] with allowWrites, both with `buckets: ["docs"]`.
    const secret = "users.id,users.email\naccepted,hidden-bucket-only@example.com\n";
    await direct.send(new PutObjectCommand({ Bucket: "hidden", Key: "only-here.csv", Body: secret, ContentType: "text/csv" }));
    const resolved = await rawGet(store.port, "/docs/../hidden/only-here.csv");
    assert.equal(resolved.status, 200);
    assert.match(resolved.body, /hidden-bucket-only/, "the store itself takes docs/../hidden/ to the hidden bucket");
    for (const path of [
      "/docs/../hidden/only-here.csv",
      "/docs/..%2Fhidden%2Fonly-here.csv",
      "/docs/x/../../hidden/only-here.csv",
      "/docs/%2E%2E/hidden/only-here.csv",
      "/docs/./people.csv",
    ]) {
      const refused = await rawGet(ports[2]!, path);
      assert.equal(refused.status, 403, path);
      assert.match(refused.body, /<Code>AccessDenied<\/Code><Message>an object key with a &#39;\.&#39; or &#39;\.\.&#39; segment is not served/, path);
    }
    const reader = s3Client(ports[2]!);
    const get = await s3Failure(reader.send(new GetObjectCommand({ Bucket: "docs", Key: "../hidden/only-here.csv" })));
    assert.deepEqual([get.code, get.status], ["AccessDenied", 403]);
    const head = await s3Failure(reader.send(new HeadObjectCommand({ Bucket: "docs", Key: "../hidden/only-here.csv" })));
    assert.equal(head.status, 403, "HeadObject too (no size or type of another bucket's object)");
    reader.destroy();

    const writer = s3Client(ports[3]!);
    const planted = await s3Failure(writer.send(new PutObjectCommand({ Bucket: "docs", Key: "../hidden/planted.csv", Body: csv })));
    assert.deepEqual([planted.code, planted.status], ["AccessDenied", 403]);
    await assert.rejects(direct.send(new HeadObjectCommand({ Bucket: "hidden", Key: "planted.csv" })), "nothing was written into the hidden bucket");
    const copied = await s3Failure(
      writer.send(new CopyObjectCommand({ Bucket: "docs", Key: "copied-secret.csv", CopySource: "docs/../hidden/only-here.csv" })),
    );
    assert.deepEqual([copied.code, copied.status], ["AccessDenied", 403]);
    await assert.rejects(direct.send(new HeadObjectCommand({ Bucket: "docs", Key: "copied-secret.csv" })), "nothing was copied out of the hidden bucket");
    const deleted = await s3Failure(writer.send(new DeleteObjectCommand({ Bucket: "docs", Key: "../hidden/only-here.csv" })));
    assert.deepEqual([deleted.code, deleted.status], ["AccessDenied", 403]);
    assert.equal((await direct.send(new HeadObjectCommand({ Bucket: "hidden", Key: "only-here.csv" }))).$metadata.httpStatusCode, 200, "nothing was deleted");
    writer.destroy();
  });

  test("a CSV whose first line is a row, not a header, is refused (422 CSV_NO_USER_COLUMN): read directly it is a dropped user's row, through the export nothing of it passes", async () => {
    // The read-only export of the tests before (ports[2]); no header row, and the first row is a user whose rows are dropped.
    const headerless = "not-accepted,not-accepted@example.com,login-x,Name x,1,s3cret-first-row\naccepted,accepted@example.com,login-a,Name a,2,s3cret-a\n";
    await direct.send(new PutObjectCommand({ Bucket: "docs", Key: "headerless.csv", Body: headerless, ContentType: "text/csv" }));
    await direct.send(new PutObjectCommand({ Bucket: "docs", Key: "one-line.csv", Body: "not-accepted,s3cret-one-line", ContentType: "binary/octet-stream" }));
    assert.match(await (await direct.send(new GetObjectCommand({ Bucket: "docs", Key: "headerless.csv" }))).Body!.transformToString(), /s3cret-first-row/);
    for (const key of ["headerless.csv", "one-line.csv"]) {
      const refused = await rawGet(ports[2]!, `/docs/${key}`);
      assert.equal(refused.status, 422, `${key}: ${refused.body}`);
      assert.match(refused.body, /CSV_NO_USER_COLUMN \(line 1\)/, key);
      assert.doesNotMatch(refused.body, /s3cret|not-accepted/, `${key}: nothing of its first line`);
    }
  });

  test("HTTP/1.0 GetObject is refused (505): without chunked framing a document cut off by a failure would end like a complete one", async () => {
    // The read-only export of the tests before (ports[2]). Rows enough to be sent before the ragged row fails the document.
    const rows = Array.from({ length: 20_000 }, (_, i) => `accepted,row${i}@example.com`).join("\n");
    await direct.send(
      new PutObjectCommand({ Bucket: "docs", Key: "late-ragged.csv", Body: `users.id,users.email\n${rows}\naccepted,x,extra\n`, ContentType: "text/csv" }),
    );
    const cut = await rawGet(ports[2]!, "/docs/late-ragged.csv");
    assert.equal(cut.status, 200);
    assert.ok(cut.body.length > 0 && !cut.complete, "HTTP/1.1: rows were sent, then the answer was cut off, and the client sees the cut");
    const old = await http10Get(ports[2]!, "/docs/late-ragged.csv");
    assert.match(old.head, /^HTTP\/1\.1 505 /, old.head);
    assert.match(old.body, /<Code>HttpVersionNotSupported<\/Code><Message>GetObject needs HTTP\/1\.1/);
    assert.doesNotMatch(old.body, /row0@example/, "no row of the document");
    assert.match(
      (await http10Get(ports[2]!, "/docs/people.csv")).head,
      /^HTTP\/1\.1 505 /,
      "a document that would not fail is refused alike (the failure cannot be known first)",
    );
    assert.match((await http10Get(ports[2]!, "/docs?list-type=2")).head, /^HTTP\/1\.1 200 /, "other operations answer whole bodies and stay open to HTTP/1.0");
  });

  test("a store failing midway cuts the client's stream off (never a short document ended cleanly); a client that goes away aborts the store's request; a slow reader holds the store back", async () => {
    // A store (fake, in addition to s3rver) that streams an endless CSV as fast as it is taken, or fails after some rows:
    // chunked (read through Node's HTTP client), or with a Content-Length (1 TiB: read off the connection, store-body.ts).
    let sized = false;
    let written = 0;
    let closedEarly = 0;
    let failAfter = Number.POSITIVE_INFINITY;
    const row = Buffer.from("accepted,a@x,login,Name,1,s3cret\n".repeat(1000));
    const fake: Server = createServer((req, res: ServerResponse) => {
      if (req.method === "HEAD") {
        res.writeHead(200, { "content-type": "text/csv" }).end();
        return;
      }
      res.writeHead(200, { "content-type": "text/csv", etag: '"fake"', ...(sized ? { "content-length": String(2 ** 40) } : {}) });
      res.write(`${columns.join(",")}\n`);
      let sent = 0;
      const pump = () => {
        while (sent < failAfter) {
          sent += row.length;
          written += row.length;
          if (!res.write(row)) return void res.once("drain", pump);
        }
        res.socket?.destroy();
      };
      res.on("close", () => {
        if (!res.writableFinished) closedEarly++;
      });
      pump();
    });
    await new Promise<void>((resolve) => fake.listen(0, "127.0.0.1", resolve));
    const fakePort = (fake.address() as { port: number }).port;
    const answer = await call("PUT", "/export", objectstoreBody({ endpoint: `http://127.0.0.1:${fakePort}`, port: ports[4] }));
    assert.equal(answer.status, 200, JSON.stringify(answer.body));
    await until("the export listens", () => listening(ports[4]!));

    for (const framing of ["chunked", "content-length"]) {
      sized = framing === "content-length";
      // 1. failing midway: the client's chunked answer has no proper end.
      failAfter = 3 * 1024 * 1024;
      const cut = await rawGet(ports[4]!, "/docs/endless.csv");
      assert.equal(cut.status, 200);
      assert.equal(cut.complete, false, "the answer is cut off, not ended");
      assert.ok(cut.body.length > 0);
      const sdkCut = await s3Client(ports[4]!).send(new GetObjectCommand({ Bucket: "docs", Key: "endless.csv" }));
      await assert.rejects(sdkCut.Body!.transformToString(), "the SDK's stream fails rather than ending");

      // 2. a slow reader (reads nothing for a while): the store is held back (backpressure), memory stays bounded.
      failAfter = Number.POSITIVE_INFINITY;
      written = 0;
      closedEarly = 0;
      const rssBefore = await nodeRss(live());
      const slow = await new Promise<{ destroy: () => void; received: () => number }>((resolve) => {
        const outgoing = httpRequest({ host: "127.0.0.1", port: ports[4]!, path: "/docs/endless.csv" }, (response) => {
          let received = 0;
          response.pause();
          resolve({ destroy: () => outgoing.destroy(), received: () => received });
          response.on("data", (chunk: Buffer) => (received += chunk.length));
        });
        outgoing.end();
      });
      await new Promise((resolve) => setTimeout(resolve, 3000));
      const held = written;
      await new Promise((resolve) => setTimeout(resolve, 2000));
      assert.ok(written - held < 4 * 1024 * 1024, `the store was held back while the client read nothing (${written - held} more bytes)`);
      assert.ok(written < 64 * 1024 * 1024, `bounded: ${written} bytes taken from the store`);
      const rssDuring = await nodeRss(live());
      assert.ok(rssDuring - rssBefore < 100 * 1024 * 1024, `node RSS grew by ${rssDuring - rssBefore}`);

      // 3. the client goes away: the store's request is aborted.
      slow.destroy();
      await until(`the store's request is aborted (${framing})`, async () => closedEarly > 0, 10_000);
    }
    assert.equal((await call("DELETE", `/export?id=${answer.body.id}`)).status, 200);
    await new Promise<void>((resolve) => fake.close(() => resolve()));
    fake.closeAllConnections();
  });

  test("SIGKILL of the serving node: the export comes back on the survivor, same port, and serves redacted documents", async () => {
    const body = await created({ port: ports[4] });
    const serving = (await call("GET", `/export?id=${body.id}`)).body.serving;
    const owner = nodes.find((n) => n.nodeId === serving.nodeId)!;
    await owner.kill();
    dead.add(owner);
    await until(
      "the survivor serves the export",
      async () => {
        const view = (await call("GET", `/export?id=${body.id}`)).body;
        return view.serving?.nodeId === live().nodeId && (await listening(ports[4]!));
      },
      30_000,
    );
    const client = s3Client(ports[4]!);
    const text = await (await client.send(new GetObjectCommand({ Bucket: "docs", Key: "people.csv" }))).Body!.transformToString();
    assert.equal(text, await redactedByJob("text/csv", csv));
    client.destroy();
  });
});

/** The resident memory of a node process, from /proc. */
async function nodeRss(node: NodeProcess): Promise<number> {
  const { readFileSync } = await import("node:fs");
  const status = readFileSync(`/proc/${node.child.pid}/status`, "utf8");
  return Number(/VmRSS:\s+(\d+) kB/.exec(status)![1]) * 1024;
}
