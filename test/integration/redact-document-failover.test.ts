import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { setTimeout as sleep } from "node:timers/promises";
import { compilePolicy } from "../../decision/compiled-policy";
import { decide } from "../../decision/engine";
import type { NatsServerProcess } from "../../service/nats-server";
import { realisticPolicy } from "../../testkit/policy";
import { startNats } from "../../testkit/nats";
import { call, type Body } from "../../testkit/http";
import { peakRss } from "../../testkit/memory";
import { NodeProcess } from "../../testkit/node-process";

const documentBytes = 200 * 1024 * 1024;
/** The bound this test holds each node to while it stores and redacts a 200 MB document (docs/redaction.md). */
const rssBoundBytes = 300 * 1024 * 1024;
const userCount = 1000;
const categoryOf: Record<string, string> = { "users.email": "contact", "users.clicks": "usage", "users.name": "identity" };
const columns = ["users.id", "users.email", "users.clicks", "users.name", "users.secret"];

describe("a 200 MB document job survives SIGKILL of the node running it", () => {
  let nats: NatsServerProcess;
  let nodes: NodeProcess[];

  before(async () => {
    nats = await startNats();
    nodes = await NodeProcess.startAll([
      // Progress every 100 ms: a 200 MB job can finish within the default second, before its first report says it is under way.
      { nodeId: "docs-a", natsUrl: nats.url, env: { REDACT_PROGRESS_MS: "100" } },
      { nodeId: "docs-b", natsUrl: nats.url, env: { REDACT_PROGRESS_MS: "100" } },
    ]);
    await Promise.all(nodes.map((node) => node.waitReady()));
    assert.equal((await call(nodes[0], "PUT", "/config", realisticPolicy())).status, 200);
    for (let i = 0; i < userCount; i++) {
      assert.equal((await call(nodes[i % 2], "PUT", "/user", { userId: `user-${i}`, attributes: { dob: "1990-01-01", location: "US" } })).status, 200);
      if (i % 2 === 0) assert.equal((await call(nodes[i % 2], "PUT", `/user/terms?userId=user-${i}`)).status, 200);
    }
  });

  after(async () => {
    await Promise.all((nodes ?? []).map((node) => node.stop()));
    await nats?.stop();
  });

  test("the other node completes it with exactly the expected output, and memory stays bounded", async () => {
    const revision = Number((await fetch(`${nodes[0].url}/config`)).headers.get("x-config-revision"));
    const compiled = compilePolicy(realisticPolicy(), revision);
    const acceptedUser = (await call(nodes[0], "GET", "/user/user-0")).body;
    const allowed = decide(compiled, acceptedUser, { type: "platformUse", purposeId: "service" }, new Date());
    assert.ok(allowed.allowed && allowed.categoryIds.length > 0);

    // The document is generated as it is sent; the expected output is hashed as it is generated.
    const expected = createHash("sha256");
    let expectedRows = 0;
    let rowsIn = 0;
    const header = `${columns.join(",")}\n`;
    expected.update(header);
    async function* document(): AsyncGenerator<Uint8Array> {
      yield Buffer.from(header);
      let sent = header.length;
      let n = 0;
      while (sent < documentBytes) {
        const lines: string[] = [];
        for (let i = 0; i < 2000; i++, n++) {
          const userId = `user-${n % userCount}`;
          const values = [userId, `"${userId}@example.com, primary"`, String(n), `"Name ""${n}"""`, `s${n}`];
          lines.push(values.join(","));
          rowsIn++;
          if ((n % userCount) % 2 === 0) {
            expectedRows++;
            expected.update(
              `${values.map((value, c) => (categoryOf[columns[c]] && allowed.categoryIds.includes(categoryOf[columns[c]]) ? value : "")).join(",")}\n`,
            );
          }
        }
        const chunk = Buffer.from(`${lines.join("\n")}\n`);
        sent += chunk.length;
        yield chunk;
      }
    }
    const uploaded = await fetch(`${nodes[0].url}/redact/document?purposeId=service&type=platformUse&mappingGroup=users-table`, {
      method: "PUT",
      headers: { "content-type": "text/csv" },
      body: ReadableStream.from(document()),
      duplex: "half",
    } as RequestInit);
    const accepted = (await uploaded.json()) as Body;
    assert.equal(uploaded.status, 200, JSON.stringify(accepted));
    const { jobName } = accepted;

    // Wait until the job is well under way, then kill the node running it.
    let runnerName: string | undefined;
    for (let i = 0; i < 600 && !runnerName; i++) {
      const progress = (await call(nodes[0], "GET", `/redact/progress?jobName=${jobName}`)).body;
      assert.equal(progress.status, "running", "the job must still be running when the node is killed");
      if (progress.bytesProcessed > 0) runnerName = progress.runner;
      else await sleep(50);
    }
    assert.ok(runnerName, "the job reported progress");
    const runner = nodes.find((node) => node.options.nodeId === runnerName)!;
    const survivor = nodes.find((node) => node !== runner)!;
    const runnerPeak = peakRss(runner.child.pid!);
    await runner.kill();

    let stats: Body;
    for (let i = 0; i < 900; i++) {
      const answer = await call(survivor, "GET", `/redact/stats?jobName=${jobName}`);
      if (answer.status === 200) {
        stats = answer.body;
        break;
      }
      assert.equal(answer.body.error.code, "ERR_REDACT_JOB_RUNNING");
      await sleep(100);
    }
    assert.equal(stats?.status, "complete", JSON.stringify(stats ?? (await call(survivor, "GET", `/redact/progress?jobName=${jobName}`)).body));
    assert.ok(stats.attempts >= 2, "a second attempt ran on the survivor");
    assert.equal(stats.rows.in, rowsIn);
    assert.equal(stats.rows.kept, expectedRows);

    const download = await fetch(`${survivor.url}/redact/document?jobName=${jobName}`);
    assert.equal(download.status, 200);
    const got = createHash("sha256");
    let bytes = 0;
    for await (const chunk of download.body as unknown as AsyncIterable<Uint8Array>) {
      got.update(chunk);
      bytes += chunk.length;
    }
    assert.equal(bytes, stats.bytes.out);
    assert.equal(got.digest("hex"), expected.digest("hex"), "the output is exactly the expected document: no row missing, duplicated or out of order");

    const survivorPeak = peakRss(survivor.child.pid!);
    process.stdout.write(`# peak RSS: runner ${(runnerPeak / 2 ** 20).toFixed(0)} MiB before the kill, survivor ${(survivorPeak / 2 ** 20).toFixed(0)} MiB\n`);
    assert.ok(runnerPeak < rssBoundBytes, `runner peak RSS ${runnerPeak}`);
    assert.ok(survivorPeak < rssBoundBytes, `survivor peak RSS ${survivorPeak}`);
  });
});
