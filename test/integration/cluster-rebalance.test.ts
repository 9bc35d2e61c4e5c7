import { after, test } from "node:test";
import assert from "node:assert/strict";
import type { NatsServerProcess } from "../../service/nats-server";
import { counter } from "../../testkit/counter-actor";
import { connectTestClient, eventually, ownershipCounts, type TestClient } from "../helpers/client";
import { startNats } from "../../testkit/nats";
import { NodeProcess } from "../../testkit/node-process";

let nats: NatsServerProcess | undefined;
const nodes: NodeProcess[] = [];
let caller: TestClient | undefined;

after(async () => {
  await caller?.close();
  await Promise.all(nodes.map((node) => node.stop()));
  await nats?.stop();
});

/** Increments random counters until stopped; every call must succeed. */
function startLoad(client: TestClient["client"], workers: number) {
  const applied = new Map<string, number>();
  const errors: Error[] = [];
  let running = true;
  const loops = Array.from({ length: workers }, async (_, worker) => {
    let i = 0;
    while (running) {
      const id = `load-${(worker * 7919 + i++) % 200}`;
      try {
        await client.ref(counter, id).increment(1);
        applied.set(id, (applied.get(id) ?? 0) + 1);
      } catch (error) {
        errors.push(error as Error);
        // Failing calls can fail fast: stop before the list exhausts the test's memory (any error fails the test anyway).
        if (errors.length >= 1000) running = false;
      }
    }
  });
  return {
    applied,
    errors,
    stop: async () => {
      running = false;
      await Promise.all(loops);
    },
  };
}

test("rebalancing: nodes join under load and each takes a share; a graceful leave moves its actors without errors", async () => {
  nats = await startNats();
  nodes.push(await NodeProcess.start({ nodeId: "r1", natsUrl: nats.url }));
  caller = await connectTestClient(nats.url);
  assert.deepEqual([...ownershipCounts(caller.table)], [["r1", 64]]);

  const load = startLoad(caller.client, 4);
  nodes.push(...(await NodeProcess.startAll(["r2", "r3"].map((nodeId) => ({ nodeId, natsUrl: nats!.url })))));
  const shares = await eventually("three nodes to share the partitions", () => {
    const counts = ownershipCounts(caller!.table);
    return counts.size === 3 && [...counts.values()].reduce((a, b) => a + b, 0) === 64 ? counts : undefined;
  });
  for (const [nodeId, owned] of shares) assert.ok(owned >= 8, `${nodeId} owns ${owned} of 64`);
  process.stdout.write(`# shares after join: ${JSON.stringify([...shares])}\n`);

  await new Promise((resolve) => setTimeout(resolve, 500));
  const leaving = nodes.find((node) => node.nodeId === "r2")!;
  assert.equal(await leaving.stop(), 0, "r2 exits cleanly");
  const after2 = await eventually("r1 and r3 to own everything", () => {
    const counts = ownershipCounts(caller!.table);
    return !counts.has("r2") && [...counts.values()].reduce((a, b) => a + b, 0) === 64 ? counts : undefined;
  });
  assert.deepEqual([...after2.keys()].sort(), ["r1", "r3"]);
  await new Promise((resolve) => setTimeout(resolve, 500));
  await load.stop();

  assert.deepEqual(
    load.errors.map((e) => e.message),
    [],
    "no caller saw an error while partitions moved",
  );
  let total = 0;
  for (const [id, applied] of load.applied) {
    assert.equal((await caller.client.ref(counter, id).get()).count, applied, `${id} kept every write`);
    total += applied;
  }
  assert.ok(total > 100, `the load made progress (${total} increments)`);
});
