import { after, test } from "node:test";
import assert from "node:assert/strict";
import { partitionOf } from "../../actors/runtime/addressing";
import type { NatsServerProcess } from "../../service/nats-server";
import { counter } from "../../testkit/counter-actor";
import { connectTestClient, eventually, type TestClient } from "../helpers/client";
import { startNats } from "../../testkit/nats";
import { NodeProcess } from "../../testkit/node-process";

let nats: NatsServerProcess | undefined;
let nodes: NodeProcess[] = [];
let caller: TestClient | undefined;

after(async () => {
  nodes.forEach((node) => node.signal("SIGCONT"));
  await caller?.close();
  await Promise.all(nodes.map((node) => node.stop()));
  await nats?.stop();
});

test("fencing: a paused owner's write after ownership moved is rejected, and it steps down", async () => {
  nats = await startNats();
  nodes = await NodeProcess.startAll(["a", "b"].map((nodeId) => ({ nodeId, natsUrl: nats!.url })));
  const [a] = nodes;
  caller = await connectTestClient(nats.url, 20_000);
  const table = caller.table;
  await eventually("both nodes to own partitions", () => new Set(Array.from({ length: 64 }, (_, p) => table.ownerOf(p)?.owner)).size === 2);
  const id = Array.from({ length: 1000 }, (_, i) => `fence-${i}`).find((candidate) => table.ownerOf(partitionOf("counter", candidate, 64))?.owner === "a")!;
  const partition = partitionOf("counter", id, 64);
  const ref = caller.client.ref(counter, id);
  assert.equal((await ref.increment(10)).count, 10);

  // The old owner reads count=10 and sleeps inside the handler; then it is frozen.
  const slow = ref.slowIncrement(3000);
  await new Promise((resolve) => setTimeout(resolve, 300));
  a.signal("SIGSTOP");
  await eventually("b to take the partition over", () => table.ownerOf(partition)?.owner === "b", 10_000);
  const newer = await ref.increment(100);
  assert.deepEqual(newer, { count: 110, node: "b" }, "the new owner continues from the stored state");

  a.signal("SIGCONT");
  // The frozen handler wakes up and tries to write 11 over 110: refused. Its call is answered
  // NOT_OWNER with nothing written, so the client routes it again to the current owner (b, or
  // a's new incarnation once it has rejoined and reclaimed the partition), where it runs on 110.
  const retried = await slow;
  assert.equal(retried.count, 111, "the retried call continued from the newer state, not from the stale read");
  await eventually("a to log that it stepped down", () => a.logged(/lease lapsed|stepped down|stale write rejected/));
  const stored = await ref.get();
  assert.equal(stored.count, 111);
  // a rejoins as a new incarnation and serves again.
  await a.waitReady();
  await eventually("a to own partitions again", () => Array.from({ length: 64 }, (_, p) => table.ownerOf(p)?.owner).includes("a"));
});
