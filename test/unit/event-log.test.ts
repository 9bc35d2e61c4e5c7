import "reflect-metadata";
import { test } from "node:test";
import assert from "node:assert/strict";
import type { NatsConnection } from "@nats-io/transport-node";
import { EventLog } from "../../actors/runtime/event-log";
import { defaultRuntimeOptions } from "../../actors/runtime/runtime";
import { silentLogger } from "../helpers/nats";

/** A connection that records publishes and can be told to refuse them, as a closing one or an oversized payload would. */
function fakeConnection() {
  const published: Array<{ subject: string; payload: string }> = [];
  let refuse = false;
  const nc = {
    options: { inboxPrefix: "_INBOX" },
    publish(subject: string, payload: string) {
      if (refuse) throw new Error("payload too large or connection draining");
      published.push({ subject, payload });
    },
  };
  return { nc: nc as unknown as NatsConnection, published, refuse: (on: boolean) => (refuse = on) };
}

const turn = () => new Promise((resolve) => setImmediate(resolve));

test("trace records are batched per subject as NDJSON, split by size, and published after the turn", async () => {
  const { nc, published } = fakeConnection();
  const log = new EventLog(nc, { ...defaultRuntimeOptions, nodeId: "t" }, silentLogger);
  for (let i = 0; i < 3; i++) log.trace("decision", "platform", { i });
  log.trace("decision", "consent", { i: 9 });
  assert.equal(published.length, 0, "nothing leaves before the turn ends");
  await turn();
  assert.deepEqual(published, [
    { subject: "warden.trace.decision.platform", payload: '{"i":0}\n{"i":1}\n{"i":2}' },
    { subject: "warden.trace.decision.consent", payload: '{"i":9}' },
  ]);
  published.length = 0;
  const big = "x".repeat(100 * 1024);
  for (let i = 0; i < 5; i++) log.trace("redact", "platform", { big });
  await turn();
  assert.ok(published.length >= 2, "a batch never grows past the byte bound");
  assert.ok(published.every((p) => p.payload.length <= 256 * 1024 + 1024));
  assert.equal(published.reduce((n, p) => n + p.payload.split("\n").length, 0), 5, "every record is published once");
});

test("a batch the connection refuses is counted as lost and never throws into a request or the event loop", async () => {
  const { nc, refuse } = fakeConnection();
  const log = new EventLog(nc, { ...defaultRuntimeOptions, nodeId: "t" }, silentLogger);
  refuse(true);
  assert.doesNotThrow(() => {
    for (let i = 0; i < 300; i++) log.trace("decision", "platform", { i });
  });
  await turn();
  assert.equal(log.lostTraceRecords, 300);
});
