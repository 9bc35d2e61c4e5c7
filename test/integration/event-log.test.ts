import "reflect-metadata";
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import type { NatsConnection } from "@nats-io/transport-node";
import { jetstreamManager } from "@nats-io/jetstream";
import { Registry } from "prom-client";
import { EventLog } from "../../actors/runtime/event-log";
import { TraceUnavailableError } from "../../actors/runtime/errors";
import { defaultRetention, provision } from "../../actors/runtime/provision";
import { defaultRuntimeOptions } from "../../actors/runtime/runtime";
import { Streams } from "../../actors/runtime/addressing";
import type { NatsServerProcess } from "../../service/nats-server";
import { connectTo, silentLogger, startNats } from "../../testkit/nats";

let server: NatsServerProcess;
let nc: NatsConnection;

before(async () => {
  server = await startNats();
  nc = await connectTo(server);
  await provision(nc, { replicas: 1, partitions: 4, auditRetention: defaultRetention.audit, traceRetention: defaultRetention.trace });
});

after(async () => {
  await nc?.close();
  await server?.stop();
});

const eventLog = (connection: NatsConnection, callTimeoutMs = defaultRuntimeOptions.callTimeoutMs) =>
  new EventLog(connection, { ...defaultRuntimeOptions, callTimeoutMs, nodeId: "t" }, silentLogger, new Registry());

/** The stored payloads of one subject (NDJSON, so not read through storedMessages' JSON decoding). */
async function traceMessages(subject: string): Promise<string[]> {
  const jsm = await jetstreamManager(nc);
  const info = await jsm.streams.info(Streams.trace.name, { subjects_filter: subject });
  const count = info.state.subjects?.[subject] ?? 0;
  const payloads: string[] = [];
  for (let seq = info.state.first_seq; payloads.length < count && seq <= info.state.last_seq; seq++) {
    const message = await jsm.streams.getMessage(Streams.trace.name, { seq }).catch(() => null);
    if (message?.subject === subject) payloads.push(message.string());
  }
  return payloads;
}

test("trace records of one turn are one stored NDJSON message per subject, and each promise resolves only once it is stored", async () => {
  const log = eventLog(nc);
  const stored = [0, 1, 2].map((i) => log.trace("decision", "unit-a", { i }));
  const other = log.trace("decision", "unit-b", { i: 9 });
  await Promise.all([...stored, other]);
  // Resolved means stored: read straight after, without waiting.
  assert.deepEqual(await traceMessages("warden.trace.decision.unit-a"), ['{"i":0}\n{"i":1}\n{"i":2}']);
  assert.deepEqual(await traceMessages("warden.trace.decision.unit-b"), ['{"i":9}']);
  const big = "x".repeat(100 * 1024);
  await Promise.all([0, 1, 2, 3, 4].map((i) => log.trace("redact", "unit-c", { i, big })));
  const payloads = await traceMessages("warden.trace.redact.unit-c");
  assert.ok(payloads.length >= 2, "a batch never grows past the byte bound");
  assert.equal(
    payloads.reduce((n, p) => n + p.split("\n").length, 0),
    5,
    "every record is stored once",
  );
  assert.equal(log.lostTraceRecords, 0);
});

test("a batch JetStream does not acknowledge within the deadline fails closed: every waiting record rejects with TraceUnavailableError and is counted", async () => {
  // A JetStream server with no trace stream: nothing acknowledges the records.
  const bare = await startNats();
  const bareConnection = await connectTo(bare);
  try {
    const log = eventLog(bareConnection, 600);
    const started = Date.now();
    const waits = [0, 1, 2].map((i) =>
      log.trace("decision", "unit", { i }).then(
        () => "stored",
        (error: unknown) => error,
      ),
    );
    const outcomes = await Promise.all(waits);
    for (const outcome of outcomes) assert.ok(outcome instanceof TraceUnavailableError, `rejected with TraceUnavailableError, got ${String(outcome)}`);
    assert.ok(Date.now() - started < 3000, "within the deadline, not forever");
    assert.equal(log.lostTraceRecords, 3);
  } finally {
    await bareConnection.close();
    await bare.stop();
  }
});

test("a batch sent again after its acknowledgement was late is stored once (message id per batch)", async () => {
  const log = eventLog(nc, 8000);
  // A frozen server: the first attempt times out after a second, the retry queues behind it; both reach the server when it wakes.
  server.signal("SIGSTOP");
  const waiting = log.trace("decision", "unit-d", { once: true });
  await new Promise((resolve) => setTimeout(resolve, 2500));
  server.signal("SIGCONT");
  await waiting;
  assert.deepEqual(await traceMessages("warden.trace.decision.unit-d"), ['{"once":true}']);
});
