import "reflect-metadata";
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { setTimeout as sleep } from "node:timers/promises";
import type { NatsConnection } from "@nats-io/transport-node";
import { Registry } from "prom-client";
import { partitionOf, stateKey, Subjects } from "../../actors/runtime/addressing";
import { connectClient, defaultRuntimeOptions, startNode, type ActorRuntime } from "../../actors/runtime/runtime";
import type { ActorClient } from "../../actors/runtime/client";
import type { CallEnvelope, ReplyEnvelope } from "../../actors/runtime/types";
import type { NatsServerProcess } from "../../service/nats-server";
import { counter, type CounterState } from "../../testkit/counter-actor";
import { eventually } from "../helpers/client";
import { connectTo, silentLogger, startNats } from "../../testkit/nats";
import { untilStopped } from "../../testkit/process-stopped";

describe("one node in process", () => {
  let nats: NatsServerProcess;
  let nc: NatsConnection;
  let runtime: ActorRuntime;

  before(async () => {
    nats = await startNats();
    nc = await connectTo(nats);
    ({ runtime } = await startNode({ nc, logger: silentLogger, options: { nodeId: "solo", heartbeatMs: 200, leaseTtlMs: 1000 } }, [counter]));
    await eventually("the node to own every partition", () => runtime.placement.ownedCount() === 64);
  });

  after(async () => {
    await runtime.stop();
    await nc.close();
    await nats.stop();
  });

  test("state in memory that JetStream has moved past is never written back: the write is refused and the call retried on fresh state", async () => {
    const ref = runtime.client.ref(counter, "underneath");
    await ref.increment(1);
    // Another writer (as a newer owner would) changes the stored state behind the activation's back.
    const store = runtime.host.store;
    const key = stateKey("counter", "underneath");
    const stored = await store.read(key);
    await store.write(key, { count: 1000, log: ["written underneath"] } satisfies CounterState, stored.revision);

    const result = await ref.increment(1);
    assert.equal(result.count, 1001, "the increment was applied to the newer state, after a reload");
    assert.deepEqual((await store.read(key)).value, { count: 1001, log: ["written underneath"] });
  });

  test("the state cache serves reads without a round trip and is told of every commit", async () => {
    const cache = await runtime.cache(counter);
    const ref = runtime.client.ref(counter, "cached");
    await ref.increment(3);
    assert.equal((await cache.get("cached")).state.count, 3);
    assert.equal(cache.peek("cached")?.state.count, 3, "warm: answered from memory");

    const told = new Promise<[string, number]>((resolve) => cache.once("change", (id: string, revision: number) => resolve([id, revision])));
    await ref.increment(4);
    const [id, revision] = await told;
    assert.equal(id, "cached");
    assert.equal(cache.peek("cached")?.state.count, 7);
    assert.equal(cache.peek("cached")?.revision, revision);

    await ref.reset();
    await eventually("the erasure to reach the cache", () => cache.peek("cached")?.state.count === 0);
    assert.equal(cache.peek("unknown-id"), undefined);
    assert.deepEqual((await cache.get("never-written")).state, { count: 0, log: [] }, "an actor with no state reads as its initial state");
  });

  test("status reports what readiness needs", () => {
    const status = runtime.status(true);
    assert.equal(status.nodeId, "solo");
    assert.equal(status.leaseValid, true);
    assert.equal(status.ownedPartitions, 64);
    assert.equal(status.assignedPartitions, 64);
    assert.deepEqual(status.actorTypes, ["counter"]);
    assert.deepEqual(status.liveNodes, ["solo"]);
  });
});

describe("a call held in transit past its caller's deadline", () => {
  let nats: NatsServerProcess;
  let nodeNc: NatsConnection;
  let callerNc: NatsConnection;
  let runtime: ActorRuntime;
  let caller: ActorClient;
  let closeCaller: () => void;
  const metrics = new Registry();
  /** Calls the node handled for the counter's increment, by outcome. */
  const increments = async (): Promise<Record<string, number>> => {
    const values = (await metrics.getSingleMetric("warden_actor_calls_total")?.get())?.values ?? [];
    return Object.fromEntries(values.filter((v) => v.labels.handler === "increment").map((v) => [String(v.labels.outcome), v.value]));
  };
  const handled = async () => Object.values(await increments()).reduce((sum, count) => sum + count, 0);

  before(async () => {
    nats = await startNats();
    nodeNc = await connectTo(nats);
    callerNc = await connectTo(nats);
    // A lease far longer than the pause below: the node must stay the owner, as a node on a slow server does.
    ({ runtime } = await startNode({ nc: nodeNc, logger: silentLogger, metrics, options: { nodeId: "held", heartbeatMs: 1000, leaseTtlMs: 20_000 } }, [
      counter,
    ]));
    await eventually("the node to own every partition", () => runtime.placement.ownedCount() === 64);
    ({ client: caller, close: closeCaller } = await connectClient({ nc: callerNc, logger: silentLogger, options: { nodeId: "held-caller" } }));
  });

  after(async () => {
    closeCaller();
    await runtime.stop();
    await callerNc.close();
    await nodeNc.close();
    await nats.stop();
  });

  test("is not started when the paused nats-server wakes: the caller was told it failed, and it did not run", async () => {
    const ref = caller.ref(counter, "in-transit");
    assert.equal((await ref.increment(1)).count, 1);
    const timeoutMs = 300;
    nats.signal("SIGSTOP");
    let failure: { code?: string };
    try {
      await untilStopped(nats.pid);
      failure = await ref.increment(1, { timeoutMs }).then(
        () => assert.fail("a call through a paused server cannot be answered"),
        (error: unknown) => error as { code?: string },
      );
      // Held past the deadline and the skew margin before the server delivers it.
      await sleep(defaultRuntimeOptions.clockSkewMs + 700);
    } finally {
      nats.signal("SIGCONT");
    }
    assert.equal(failure.code, "DEADLINE_EXCEEDED", "the caller gave up at its deadline");
    await eventually("the held call to reach the node", async () => (await handled()) === 2);
    assert.deepEqual(await increments(), { ok: 1, EXPIRED_BEFORE_START: 1 }, "refused, not run");
    assert.equal((await ref.get()).count, 1, "the state shows only the call that was answered");
  });

  test("a call without the caller's deadline (an older node's) runs as before; one long past it is refused", async () => {
    const partition = partitionOf("counter", "wire", runtime.placement.partitionCount);
    const subject = Subjects.call(runtime.membership.incarnation, partition);
    const send = async (envelope: CallEnvelope) => (await callerNc.request(subject, JSON.stringify(envelope), { timeout: 5000 })).json<ReplyEnvelope>();
    assert.deepEqual(await send({ t: "counter", i: "wire", m: "increment", d: 5000, a: 1 }), { r: { count: 1, node: "in-process" } });
    const refused = await send({ t: "counter", i: "wire", m: "increment", d: 5000, x: Date.now() - 10_000, a: 1 });
    assert.ok("e" in refused && refused.e.code === "EXPIRED_BEFORE_START", JSON.stringify(refused));
    assert.deepEqual(await send({ t: "counter", i: "wire", m: "increment", d: 5000, x: Date.now() + 5000, a: 1 }), { r: { count: 2, node: "in-process" } });
    assert.equal((await caller.ref(counter, "wire").get()).count, 2);
  });
});
