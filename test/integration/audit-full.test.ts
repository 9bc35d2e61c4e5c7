import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { Agent, request as httpRequest } from "node:http";
import { jetstreamManager } from "@nats-io/jetstream";
import type { AuditRecord } from "../../actors/runtime/event-log";
import type { NatsServerProcess } from "../../service/nats-server";
import { connectTo, startNats, storedMessages } from "../../testkit/nats";
import { NodeProcess } from "../../testkit/node-process";
import { realisticPolicy } from "../../testkit/policy";

/** The smallest audit stream the node takes: a few hundred connection records fill it. */
const auditMaxBytes = 65_536;

/** GET on a new connection (each new connection to an API is audited once). */
function getOnce(port: number, path: string): Promise<{ status: number; code?: string; retryAfter?: string }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: "127.0.0.1", port, path, agent: false }, (res) => {
      let body = "";
      res.on("data", (chunk: Buffer) => (body += chunk.toString("utf8")));
      res.on("end", () => {
        let code: string | undefined;
        try {
          code = (JSON.parse(body) as { error?: { code: string } }).error?.code;
        } catch {
          code = undefined;
        }
        resolve({ status: res.statusCode!, code, retryAfter: res.headers["retry-after"] });
      });
    });
    req.on("error", reject);
    req.end();
  });
}

/** A node on its own nats-server whose audit stream holds only `auditMaxBytes`, started before the describe block's tests and stopped after. */
function nodeWithSmallAudit(nodeId: string): { nats: NatsServerProcess; node: NodeProcess } {
  const started = {} as { nats: NatsServerProcess; node: NodeProcess };
  before(async () => {
    started.nats = await startNats();
    started.node = await NodeProcess.start({ nodeId, natsUrl: started.nats.url, env: { AUDIT_MAX_BYTES: String(auditMaxBytes) } });
  });
  after(async () => {
    await started.node?.stop();
    await started.nats?.stop();
  });
  return started;
}

describe("a full audit stream refuses new records instead of dropping the oldest, and requests that need auditing fail closed (503)", () => {
  const started = nodeWithSmallAudit("audit-full-1");

  test("filled by connections: 503 ERR_AUDIT_UNAVAILABLE, an error logged and counted, the oldest records kept", async () => {
    const nc = await connectTo(started.nats.url);
    try {
      const jsm = await jetstreamManager(nc);
      const stream = await jsm.streams.info("WARDEN_AUDIT");
      assert.equal(stream.config.discard, "new", "a full audit stream refuses new records");
      assert.equal(stream.config.max_bytes, auditMaxBytes);

      // A flood of unauthenticated noise: every new connection writes one record, until the stream is full.
      let answer = await getOnce(started.node.port, "/user/nobody");
      let requests = 1;
      while (answer.status !== 503 && requests < 5000) {
        answer = await getOnce(started.node.port, "/user/nobody");
        requests++;
      }
      assert.equal(answer.status, 503, `still served after ${requests} connections`);
      assert.equal(answer.code, "ERR_AUDIT_UNAVAILABLE");
      assert.ok(Number(answer.retryAfter) >= 1, "a 503 says when to come back");
      assert.ok(requests > 50, `the stream held the records of ${requests} connections before it was full`);
      // Still refused: nothing is served unaudited, on a new connection or not.
      assert.equal((await getOnce(started.node.port, "/user/nobody")).code, "ERR_AUDIT_UNAVAILABLE");

      const state = (await jsm.streams.info("WARDEN_AUDIT")).state;
      assert.equal(state.first_seq, 1, "the oldest record is still there");
      assert.ok(state.bytes <= auditMaxBytes);
      const records = await storedMessages<AuditRecord>(nc, "WARDEN_AUDIT");
      assert.equal(records[0]!.data.event, "config.active", "the startup configuration record survives the flood");

      // /metrics is no component (never audited): the failures are counted there.
      const metrics = await (await fetch(`${started.node.url}/metrics`)).text();
      const failed = Number(/^warden_audit_records_failed_total (\d+)/m.exec(metrics)?.[1]);
      assert.ok(failed >= 2, `warden_audit_records_failed_total ${failed}`);
      assert.ok(
        started.node.lines.some((line) => line.includes('"level":50') && line.includes("audit record not stored by JetStream")),
        "each refused record is logged as an error",
      );
    } finally {
      await nc.close();
    }
  });
});

describe("a change whose audit record the full stream refuses is not made: configuration writes and erasure fail closed with nothing changed", () => {
  const started = nodeWithSmallAudit("audit-full-2");

  test("writes on one connection until the audit refuses: the refused write changed nothing, and an erasure then erases nothing", async () => {
    // One kept-alive connection: its record is written once, then every write on it needs only its own records.
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    const send = (method: string, path: string, body?: unknown) =>
      new Promise<{ status: number; text: string; revision: string | undefined }>((resolve, reject) => {
        const payload = body === undefined ? undefined : JSON.stringify(body);
        const req = httpRequest(
          { host: "127.0.0.1", port: started.node.port, path, method, agent, headers: payload ? { "content-type": "application/json" } : {} },
          (res) => {
            let text = "";
            res.on("data", (chunk: Buffer) => (text += chunk.toString("utf8")));
            res.on("end", () => resolve({ status: res.statusCode!, text, revision: res.headers["x-config-revision"] as string | undefined }));
          },
        );
        req.on("error", reject);
        req.end(payload);
      });
    try {
      assert.equal((await send("PUT", "/config", realisticPolicy())).status, 200);
      assert.equal((await send("PUT", "/user", { userId: "to-erase", attributes: { dob: "1990-01-01" } })).status, 200);
      const childDob = `${new Date().getUTCFullYear() - 9}-01-01`;
      assert.equal((await send("PUT", "/user", { userId: "kid", attributes: { dob: childDob } })).status, 200);
      assert.equal((await send("PUT", "/user", { userId: "parent", attributes: { dob: "1980-01-01" } })).status, 200);
      // Each API's use on this connection is audited once: the export API's record is written while there is room.
      assert.equal((await send("GET", "/export")).status, 200);
      let written = 0;
      let answer = { status: 200, text: "", revision: undefined as string | undefined };
      for (; written < 2000; written++) {
        answer = await send("PUT", "/config/categories", { categories: [{ stableId: `cat-${written}`, name: `Category ${written}`, fields: [] }] });
        if (answer.status !== 200) break;
      }
      assert.equal(answer.status, 503, `still written after ${written} writes: ${answer.text}`);
      assert.match(answer.text, /ERR_AUDIT_UNAVAILABLE/);
      const config = await send("GET", "/config");
      assert.equal(config.status, 200, config.text);
      const ids = (JSON.parse(config.text) as { categories: Array<{ stableId: string }> }).categories.map((c) => c.stableId);
      assert.ok(ids.includes(`cat-${written - 1}`), "the last write answered 200 is there");
      assert.ok(!ids.includes(`cat-${written}`), "the write answered 503 was not made");
      // Erasure too: refused before anything is erased.
      const erasure = await send("DELETE", "/user/to-erase");
      assert.equal(erasure.status, 503, erasure.text);
      assert.equal((await send("GET", "/user/to-erase")).status, 200, "the user is still there");
      // A guardian link: refused before it is made.
      assert.equal((await send("PUT", "/user/terms?userId=kid&acceptorId=parent")).status, 503);
      assert.deepEqual((JSON.parse((await send("GET", "/user/kid")).text) as { guardians: string[] }).guardians, [], "no guardian was linked");
      // And an export: refused before it is created (a retried create had made a second one).
      const created = await send("PUT", "/export", { type: "pipeline", resolverGroup: "users-table", metadata: { type: "platformUse", purposeId: "service" } });
      assert.equal(created.status, 503, created.text);
      const listed = await send("GET", "/export");
      assert.equal(listed.status, 200, listed.text);
      assert.deepEqual((JSON.parse(listed.text) as { exports: unknown[] }).exports, [], "no export was created");
    } finally {
      agent.destroy();
    }
  });
});
