import "reflect-metadata";
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import type { NatsConnection } from "@nats-io/transport-node";
import { stateKey } from "../../actors/runtime/addressing";
import { startNode, type ActorRuntime } from "../../actors/runtime/runtime";
import type { NatsServerProcess } from "../../service/nats-server";
import { counter, type CounterState } from "../../testkit/counter-actor";
import { eventually } from "../helpers/client";
import { connectTo, silentLogger, startNats } from "../../testkit/nats";

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
