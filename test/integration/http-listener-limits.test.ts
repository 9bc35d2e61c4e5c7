import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { connect, type Socket } from "node:net";
import Fastify from "fastify";
import type { AuditRecord } from "../../actors/runtime/event-log";
import type { NatsServerProcess } from "../../service/nats-server";
import { call as request } from "../../testkit/http";
import { connectTo, startNats, storedMessages } from "../../testkit/nats";
import { NodeProcess } from "../../testkit/node-process";
import { freePort } from "../../testkit/ports";
import { realisticPolicy } from "../../testkit/policy";

const headersTimeoutMs = 1_000;
const idleTimeoutMs = 2_000;
const maxConnections = 40;

/** A slowloris client: starts a request and sends one more header byte every `everyMs`, never ending the headers. */
function slowloris(port: number, everyMs = 200): { socket: Socket; closedAfter: Promise<number> } {
  const started = Date.now();
  const socket = connect({ host: "127.0.0.1", port });
  let timer: NodeJS.Timeout | undefined;
  socket.on("connect", () => {
    socket.write("POST / HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ");
    timer = setInterval(() => socket.write("a"), everyMs);
  });
  socket.on("error", () => undefined);
  socket.on("data", () => undefined);
  const closedAfter = new Promise<number>((resolve) =>
    socket.once("close", () => {
      clearInterval(timer);
      resolve(Date.now() - started);
    }),
  );
  return { socket, closedAfter };
}

/** A client that connects and says nothing (it reads what it is told, or its socket would never see the close). */
function silent(port: number): { socket: Socket; closed: Promise<void> } {
  const socket = connect({ host: "127.0.0.1", port });
  socket.on("error", () => undefined);
  socket.on("data", () => undefined);
  return { socket, closed: new Promise((resolve) => socket.once("close", () => resolve())) };
}

const within = <T>(promise: Promise<T>, ms: number, what: string): Promise<T> =>
  Promise.race([promise, new Promise<T>((_, reject) => setTimeout(() => reject(new Error(`${what}: not within ${ms} ms`)), ms))]);

describe("HTTP listeners: timeouts and a connection cap (gateway and pipeline door)", () => {
  let nats: NatsServerProcess;
  let node: NodeProcess;
  let pipelinePort: number;

  before(async () => {
    nats = await startNats();
    const env = {
      HTTP_HEADERS_TIMEOUT_MS: String(headersTimeoutMs),
      HTTP_IDLE_TIMEOUT_MS: String(idleTimeoutMs),
      HTTP_MAX_CONNECTIONS: String(maxConnections),
    };
    node = await NodeProcess.start({ nodeId: "limits-1", natsUrl: nats.url, env });
    assert.equal((await request(node, "PUT", "/config", realisticPolicy())).status, 200);
    pipelinePort = await freePort();
    const created = await request(node, "PUT", "/export", {
      type: "pipeline",
      resolverGroup: "users-table",
      metadata: { type: "platformUse", purposeId: "service" },
      port: pipelinePort,
    });
    assert.equal(created.status, 200, JSON.stringify(created.body));
    const deadline = Date.now() + 15_000;
    while (
      (await fetch(`http://127.0.0.1:${pipelinePort}/`, { method: "POST", headers: { "content-type": "application/json" }, body: "{}" }).catch(
        () => undefined,
      )) === undefined
    ) {
      if (Date.now() > deadline) throw new Error("the pipeline export did not open");
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  });

  after(async () => {
    await node?.stop();
    await nats?.stop();
  });

  test("a Fastify listener with its defaults keeps a slowloris connection open (what the limits prevent)", async () => {
    const app = Fastify();
    app.post("/", async () => "ok");
    await app.listen({ host: "127.0.0.1", port: 0 });
    try {
      const { socket, closedAfter } = slowloris((app.server.address() as { port: number }).port);
      const outcome = await Promise.race([
        closedAfter.then(() => "closed"),
        new Promise((resolve) => setTimeout(() => resolve("still open"), headersTimeoutMs * 4)),
      ]);
      assert.equal(outcome, "still open");
      socket.destroy();
    } finally {
      await app.close();
    }
  });

  for (const door of ["gateway", "pipeline"] as const) {
    test(`${door}: slowloris connections are cut at the headers timeout while normal requests go on`, async () => {
      const port = door === "gateway" ? node.port : pipelinePort;
      const slow = Array.from({ length: 20 }, () => slowloris(port));
      const answered: number[] = [];
      const until = Date.now() + headersTimeoutMs * 2;
      while (Date.now() < until) {
        const response =
          door === "gateway"
            ? await fetch(`${node.url}/healthz`)
            : await fetch(`http://127.0.0.1:${port}/`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ id: "x" }) });
        answered.push(response.status);
        await response.arrayBuffer();
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      assert.ok(answered.length >= 10, "requests were made throughout");
      assert.ok(
        answered.every((status) => status === 200),
        `every normal request answered: ${answered.join(",")}`,
      );
      const closedAfter = await within(Promise.all(slow.map((s) => s.closedAfter)), headersTimeoutMs * 4, "slowloris connections cut");
      // Node checks the deadline on an interval (a quarter of the timeout here): cut between the timeout and a little after.
      for (const ms of closedAfter) assert.ok(ms >= headersTimeoutMs * 0.9 && ms < headersTimeoutMs * 3, `cut after ${ms} ms`);
    });
  }

  test("gateway: silent connections are closed after the timeouts, and connections over the cap are refused as they arrive", async () => {
    const held = Array.from({ length: maxConnections }, () => silent(node.port));
    await new Promise((resolve) => setTimeout(resolve, 300));
    const over = silent(node.port);
    await within(over.closed, 1_000, "a connection over the cap closed at once");
    await within(Promise.all(held.map((h) => h.closed)), idleTimeoutMs * 3, "silent connections closed by the timeouts");
    const response = await fetch(`${node.url}/healthz`);
    assert.equal(response.status, 200, "places are free again");
    const metrics = await (await fetch(`${node.url}/metrics`)).text();
    assert.match(metrics, /warden_refusals_total\{kind="ERR_SERVICE_CONNECTIONS_FULL"\} [1-9]/, "the refusal is counted");
  });

  test("gateway: a request whose body stalls is cut after the idle timeout", async () => {
    const started = Date.now();
    const stalled = silent(node.port);
    stalled.socket.write('PUT /user HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"userId":');
    await within(stalled.closed, idleTimeoutMs * 3, "the stalled request cut");
    assert.ok(Date.now() - started >= idleTimeoutMs * 0.9, "not before the idle timeout");
  });

  test("pipeline: connections over the cap are refused and audited as a count, not one record each", async () => {
    const held = Array.from({ length: maxConnections }, () => silent(pipelinePort));
    await new Promise((resolve) => setTimeout(resolve, 300));
    const over = Array.from({ length: 30 }, () => silent(pipelinePort));
    await within(Promise.all(over.map((o) => o.closed)), 2_000, "connections over the cap closed at once");
    for (const h of held) h.socket.destroy();
    const nc = await connectTo(nats.url);
    try {
      const refused = (await storedMessages<AuditRecord>(nc, "WARDEN_AUDIT", "warden.audit.pipeline.>")).filter((m) => m.data.event === "connection.refused");
      assert.ok(refused.length >= 1 && refused.length <= 3, `a few records, got ${refused.length}`);
      assert.equal(refused[0]!.subject, "warden.audit.pipeline.warn");
      // Each one is counted where operators look: GET /export's serving.connections.refused.
      const listed = (await request(node, "GET", "/export")).body.exports as Array<{ serving: { port: number; connections: { refused: number } } | null }>;
      const serving = listed.find((e) => e.serving?.port === pipelinePort)?.serving;
      assert.ok(serving && serving.connections.refused >= 30, JSON.stringify(serving));
    } finally {
      await nc.close();
    }
  });
});
