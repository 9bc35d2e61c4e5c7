import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import { request as httpRequest, type ClientRequest } from "node:http";
import { PutObjectCommand } from "@aws-sdk/client-s3";
import type { NatsServerProcess } from "../../service/nats-server";
import { realisticPolicy } from "../../testkit/policy";
import { createPopulation, populationIds } from "../fixtures/population";
import { call as request } from "../../testkit/http";
import { startNats } from "../../testkit/nats";
import { NodeProcess } from "../../testkit/node-process";
import { freePort } from "../../testkit/ports";
import { S3Store, s3rverCredentials } from "../../testkit/s3";
import { s3Client } from "../helpers/s3-client";
import { listening, until } from "../../testkit/wait";

const columns = ["users.id", "users.email", "users.login", "users.name", "users.clicks", "users.secret"];

/** Threads of a process, from /proc. */
const threadsOf = (node: NodeProcess) => readdirSync(`/proc/${node.child.pid}/task`).length;
/** Resident memory of a process, from /proc. */
const rssOf = (node: NodeProcess) => Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${node.child.pid}/status`, "utf8"))![1]) * 1024;

/** A GET of the export read whole: its body and whether the chunked answer ended properly. */
function readWhole(port: number, path: string): Promise<{ status: number; body: string; complete: boolean }> {
  return new Promise((resolve, reject) => {
    const outgoing = httpRequest({ host: "127.0.0.1", port, path, agent: false }, (response) => {
      const chunks: Buffer[] = [];
      response.on("data", (chunk: Buffer) => chunks.push(chunk));
      const settle = () => resolve({ status: response.statusCode!, body: Buffer.concat(chunks).toString(), complete: response.complete });
      response.on("end", settle);
      response.on("aborted", settle);
      response.on("error", settle);
    });
    outgoing.on("error", reject);
    outgoing.end();
  });
}

/** A GET of the export whose client takes the answer's head and then reads nothing. */
function readNothing(port: number, path: string): Promise<ClientRequest> {
  return new Promise((resolve) => {
    const outgoing = httpRequest({ host: "127.0.0.1", port, path, agent: false }, (response) => {
      response.pause();
      resolve(outgoing);
    });
    outgoing.on("error", () => undefined);
    outgoing.end();
  });
}

/**
 * Clients that open many large GetObjects at once and read none of them: without a bound each
 * document started two CSV worker threads (an isolate each) and its blocks, and 50 such clients took
 * a node from 154 MiB to 1.2 GiB and 92 threads, its gateway answering in 0.6 s (measured before
 * the bound; docs/redaction.md, "Worker threads"). With REDACTION_MAX_WORKERS a document that finds
 * no threads free goes on on the calling thread, as fast as its client reads.
 */
describe("objectstore exports under many GetObjects that read nothing: CSV worker threads bounded per node", () => {
  let nats: NatsServerProcess;
  let store: S3Store;
  let node: NodeProcess;
  let port: number;
  let expected: string;

  before(async () => {
    nats = await startNats();
    store = await S3Store.start(["docs"]);
    node = await NodeProcess.start({ nodeId: "load-1", natsUrl: nats.url, env: { REDACTION_THREADS: "2", REDACTION_MAX_WORKERS: "2" } });
    const call = (method: string, path: string, body?: unknown) => request(node, method, path, body);
    assert.equal((await call("PUT", "/config", realisticPolicy())).status, 200);
    await createPopulation(call);
    // 24 MiB: past the 8 MiB a document keeps on the calling thread, so each GetObject asks for worker threads.
    const lines = [`${columns.join(",")}\n`];
    for (let n = 0; lines.length < 330_000; n++) {
      const id = populationIds[n % populationIds.length];
      lines.push(`${id},${id || "nobody"}-${n}@example.com,login-${n},"Name, ${n}",${n},s3cret-${n}\n`);
    }
    const direct = s3Client(store.port, { credentials: s3rverCredentials });
    await direct.send(new PutObjectCommand({ Bucket: "docs", Key: "large.csv", Body: lines.join(""), ContentType: "text/csv" }));
    direct.destroy();
    port = await freePort();
    const created = await call("PUT", "/export", {
      type: "objectstore",
      endpoint: store.endpoint,
      resolverGroup: "users-table",
      metadata: { type: "platformUse", purposeId: "service" },
      port,
    });
    assert.equal(created.status, 200, JSON.stringify(created.body));
    await until("the export listens", () => listening(port));
    // One document read whole first: the node's spare workers are started, and its bytes are what every later read must give.
    const first = await readWhole(port, "/docs/large.csv");
    assert.ok(first.complete && first.body.includes("accepted-0@example.com") && !first.body.includes("s3cret"));
    expected = first.body;
  });

  after(async () => {
    await node?.kill();
    await store?.stop();
    await nats?.stop();
  });

  test("40 GetObjects that read nothing hold the worker threads of one document, and a reader meanwhile gets the whole document", async () => {
    await new Promise((resolve) => setTimeout(resolve, 500));
    const threadsBefore = threadsOf(node);
    const rssBefore = rssOf(node);
    const idle = await Promise.all(Array.from({ length: 40 }, () => readNothing(port, "/docs/large.csv")));
    // Each has its answer's head (the header row went out); past the first, no threads are free: they go on on the calling thread, as far as their clients read.
    await new Promise((resolve) => setTimeout(resolve, 3000));
    const threadsDuring = threadsOf(node);
    const rssDuring = rssOf(node);
    assert.ok(threadsDuring - threadsBefore <= 4, `threads: ${threadsBefore} before, ${threadsDuring} with 40 idle GetObjects`);
    assert.ok(rssDuring - rssBefore < 200 * 2 ** 20, `RSS grew by ${((rssDuring - rssBefore) / 2 ** 20).toFixed(0)} MiB`);
    const health = Date.now();
    assert.equal((await request(node, "GET", "/export")).status, 200);
    assert.ok(Date.now() - health < 2000, `the gateway answered in ${Date.now() - health} ms`);

    // A reader meanwhile: no threads are free for its document, which goes on on the calling thread, and it gets the whole of it.
    const read = await readWhole(port, "/docs/large.csv");
    assert.equal(read.status, 200);
    assert.ok(read.complete, "the reader's answer ended properly");
    assert.ok(read.body === expected, `the reader got ${read.body.length} bytes, the first read ${expected.length}`);
    assert.ok(threadsOf(node) - threadsBefore <= 4, "the reader's document took no threads");
    for (const outgoing of idle) outgoing.destroy();
    await until("the idle documents' threads are gone", async () => threadsOf(node) <= threadsBefore + 2, 10_000);
  });
});
