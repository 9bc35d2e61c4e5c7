import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import type { NatsServerProcess } from "../../service/nats-server";
import { counter, relay } from "../../testkit/counter-actor";
import { connectTestClient, eventually, ownershipCounts, type TestClient } from "../helpers/client";
import { startNats } from "../../testkit/nats";
import { NodeProcess } from "../../testkit/node-process";

describe("three node processes on one nats-server", () => {
  let nats: NatsServerProcess;
  let nodes: NodeProcess[] = [];
  let caller: TestClient;

  before(async () => {
    nats = await startNats();
    nodes = await NodeProcess.startAll(["n1", "n2", "n3"].map((nodeId) => ({ nodeId, natsUrl: nats.url })));
    caller = await connectTestClient(nats.url);
    await eventually("every node to own a share", () => {
      const counts = ownershipCounts(caller.table);
      return counts.size === 3 && [...counts.values()].reduce((a, b) => a + b, 0) === 64;
    });
  });

  after(async () => {
    await caller?.close();
    await Promise.all(nodes.map((node) => node.stop()));
    await nats?.stop();
  });

  test("single writer: 500 concurrent increments from all three nodes count exactly 500", async () => {
    const target = "single-writer";
    const results = await Promise.all(Array.from({ length: 500 }, (_, i) => caller.client.ref(relay, `relay-${i % 60}`).forward(target)));
    const origins = new Set(results.map((r) => r.via));
    assert.deepEqual([...origins].sort(), ["n1", "n2", "n3"], "calls originated on every node");
    assert.equal(new Set(results.map((r) => r.node)).size, 1, "one activation handled every increment");
    const seen = results.map((r) => r.count).sort((a, b) => a - b);
    assert.deepEqual(
      seen,
      Array.from({ length: 500 }, (_, i) => i + 1),
      "each increment saw a distinct count: one at a time",
    );
    const stored = await caller.client.ref(counter, target).get();
    assert.equal(stored.count, 500);
  });

  test("order: 200 pipelined messages from one sender are handled in send order", async () => {
    const ref = caller.client.ref(counter, "ordered");
    const sent = Array.from({ length: 200 }, (_, i) => `m${i}`);
    await Promise.all(sent.map((entry) => ref.append(entry)));
    assert.deepEqual((await ref.get()).log, sent);
  });

  test("an unknown handler or actor type is a clear, non-retryable error", async () => {
    await assert.rejects(
      caller.client.call("counter", "x", "nope"),
      (error: Error & { code?: string; retryable?: boolean }) => error.code === "UNKNOWN_HANDLER" && error.retryable === false,
    );
    await assert.rejects(caller.client.call("no-such-type", "x", "get"), (error: Error & { code?: string }) => error.code === "UNKNOWN_ACTOR_TYPE");
  });

  test("a handler that throws leaves the state untouched and the actor usable", async () => {
    const ref = caller.client.ref(counter, "failing");
    await ref.increment(5);
    await assert.rejects(ref.fail(), (error: Error & { code?: string }) => error.code === "INTERNAL" && !/staging/.test(error.message));
    assert.equal((await ref.get()).count, 5);
    assert.deepEqual(await ref.increment(1).then((r) => r.count), 6);
  });

  test("a call whose deadline passes is answered DEADLINE_EXCEEDED", async () => {
    await assert.rejects(
      caller.client.ref(counter, "slow").slowIncrement(2000, { timeoutMs: 300 }),
      (error: Error & { code?: string }) => error.code === "DEADLINE_EXCEEDED",
    );
  });
});
