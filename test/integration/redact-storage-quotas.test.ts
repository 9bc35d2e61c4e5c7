import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { request as httpRequest } from "node:http";
import { setTimeout as sleep } from "node:timers/promises";
import { jetstreamManager, type JetStreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import type { NatsServerProcess } from "../../service/nats-server";
import { realisticPolicy } from "../../testkit/policy";
import { createPopulation } from "../fixtures/population";
import { connectTo, startNats } from "../../testkit/nats";
import { call as request, type Body } from "../../testkit/http";
import { NodeProcess } from "../../testkit/node-process";

const maxDocumentBytes = 256 * 1024;
const maxTotalBytes = 1024 * 1024;
const path = "/redact/document?purposeId=service&type=platformUse&mappingGroup=users-table";

/** A CSV document of about `bytes` bytes, rows of the population's users. */
function csvOf(bytes: number): Buffer {
  const lines = ["users.id,users.email,users.name,users.clicks"];
  let size = lines[0]!.length + 1;
  for (let n = 0; size < bytes; n++) {
    const line = `${n % 2 === 0 ? "accepted" : "not-accepted"},user${n}@example.com,Name ${n},${n}`;
    lines.push(line);
    size += line.length + 1;
  }
  return Buffer.from(`${lines.join("\n")}\n`);
}

/** PUT /redact/document without Content-Length (chunked, 64 KiB a write); the answer may come before the whole body is sent. */
function uploadChunked(port: number, document: Buffer): Promise<{ status: number; body: Body }> {
  return new Promise((resolve, reject) => {
    let answered = false;
    const req = httpRequest(
      { host: "127.0.0.1", port, path, method: "PUT", headers: { "content-type": "text/csv", "transfer-encoding": "chunked" } },
      (res) => {
        answered = true;
        let text = "";
        res.on("data", (chunk: Buffer) => (text += chunk.toString("utf8")));
        res.on("end", () => resolve({ status: res.statusCode!, body: JSON.parse(text) as Body }));
        res.on("error", reject);
      },
    );
    req.on("error", (error) => {
      if (!answered) reject(error);
    });
    (async () => {
      for (let offset = 0; offset < document.length && !answered; offset += 65_536) {
        if (!req.write(document.subarray(offset, offset + 65_536))) await new Promise((r) => req.once("drain", r));
        await sleep(5);
      }
      req.end();
    })().catch(() => undefined);
  });
}

describe("redaction storage quotas: per job (413) and in total (507), nothing kept from a refused upload", () => {
  let nats: NatsServerProcess;
  let node: NodeProcess;
  let nc: NatsConnection;
  let jsm: JetStreamManager;
  const call = (method: string, to: string, body?: unknown) => request(node, method, to, body);
  const stored = async () => (await jsm.streams.info("WARDEN_REDACT")).state.bytes;
  const upload = async (document: Buffer) => {
    const response = await fetch(`${node.url}${path}`, { method: "PUT", headers: { "content-type": "text/csv" }, body: document });
    return { status: response.status, body: (await response.json()) as Body };
  };
  const finished = async (jobName: string): Promise<Body> => {
    for (let i = 0; i < 600; i++) {
      const progress = await call("GET", `/redact/progress?jobName=${jobName}`);
      if (progress.body.status !== "running") return progress.body;
      await sleep(50);
    }
    assert.fail(`job ${jobName} did not finish`);
  };

  before(async () => {
    nats = await startNats();
    node = await NodeProcess.start({
      nodeId: "quota-1",
      natsUrl: nats.url,
      env: { REDACT_MAX_DOCUMENT_BYTES: String(maxDocumentBytes), REDACT_STORAGE_MAX_BYTES: String(maxTotalBytes) },
    });
    assert.equal((await call("PUT", "/config", realisticPolicy())).status, 200);
    await createPopulation(call);
    nc = await connectTo(nats.url);
    jsm = await jetstreamManager(nc);
  });

  after(async () => {
    await nc?.close();
    await node?.stop();
    await nats?.stop();
  });

  test("a document over REDACT_MAX_DOCUMENT_BYTES: 413 whether it declares its length or not; nothing stored, no job", async () => {
    const stream = await jsm.streams.info("WARDEN_REDACT");
    assert.equal(stream.config.max_bytes, maxTotalBytes);
    assert.equal(stream.config.discard, "new", "a full store refuses new documents, never drops stored ones");
    const big = csvOf(maxDocumentBytes + 50_000);
    const declared = await upload(big);
    assert.equal(declared.status, 413);
    assert.equal(declared.body.error.code, "ERR_REDACT_DOCUMENT_TOO_LARGE");
    assert.match(declared.body.error.message, /larger than the 262144 bytes one redaction job may upload \(REDACT_MAX_DOCUMENT_BYTES\); nothing was kept/);
    const chunked = await uploadChunked(node.port, big);
    assert.equal(chunked.status, 413, JSON.stringify(chunked.body));
    assert.equal(chunked.body.error.code, "ERR_REDACT_DOCUMENT_TOO_LARGE");
    assert.equal(await stored(), 0, "the part received before the limit is purged");
    assert.equal((await call("GET", "/redact/jobs")).body.jobs.length, 0);
    // Just under the limit is taken.
    const fits = await upload(csvOf(maxDocumentBytes - 10_000));
    assert.equal(fits.status, 200, JSON.stringify(fits.body));
    assert.equal((await finished(fits.body.jobName as string)).status, "complete");
  });

  test("storage full at REDACT_STORAGE_MAX_BYTES: 507 before reading a declared body, and when JetStream refuses a chunked one; stored jobs stay whole", async () => {
    const document = csvOf(200_000);
    const jobs: string[] = [];
    let answer = await upload(document);
    while (answer.status === 200 && jobs.length < 20) {
      jobs.push(answer.body.jobName as string);
      await finished(answer.body.jobName as string);
      answer = await upload(document);
    }
    assert.ok(jobs.length >= 1, "documents are taken while there is room");
    assert.equal(answer.status, 507, JSON.stringify(answer.body));
    assert.equal(answer.body.error.code, "ERR_REDACT_STORAGE_FULL");
    assert.match(answer.body.error.message, /redaction storage is full \(REDACT_STORAGE_MAX_BYTES, 1048576 bytes\); nothing was kept/);
    const full = await stored();
    assert.ok(full <= maxTotalBytes && full + document.length > maxTotalBytes, `stored ${full}`);

    // Without a declared length the store's own refusal answers: 507, and the chunks taken before it are purged.
    const chunked = await uploadChunked(node.port, document);
    assert.equal(chunked.status, 507, JSON.stringify(chunked.body));
    assert.equal(chunked.body.error.code, "ERR_REDACT_STORAGE_FULL");
    assert.equal(await stored(), full, "nothing of the refused upload is kept");

    // Every stored job is still whole: its redacted document downloads.
    for (const jobName of jobs) {
      const download = await fetch(`${node.url}/redact/document?jobName=${jobName}`);
      assert.equal(download.status, 200, jobName);
      assert.match(await download.text(), /^users\.id,/);
    }
    // Deleting a job makes room again.
    assert.equal((await call("DELETE", `/redact/document?jobName=${jobs[0]}`)).status, 200);
    assert.equal((await upload(document)).status, 200);
  });
});
