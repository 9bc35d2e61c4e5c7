import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import type { NatsConnection } from "@nats-io/transport-node";
import { jetstreamManager } from "@nats-io/jetstream";
import { Kvm } from "@nats-io/kv";
import { ensureStream, openBucket } from "../../actors/runtime/provision";
import type { NatsServerProcess } from "../../service/nats-server";
import { connectTo, startNats } from "../../testkit/nats";

let nats: NatsServerProcess;

const connections: NatsConnection[] = [];

before(async () => {
  nats = await startNats();
  for (let i = 0; i < 8; i++) connections.push(await connectTo(nats.url));
});

after(async () => {
  await Promise.all(connections.map((nc) => nc.close()));
  await nats?.stop();
});

test("nodes starting at once create the same stream at the same moment: every one succeeds (nats-server may say 'subjects overlap' for the stream being made)", async () => {
  // A CI run had a node exit at start: its stream add raced another node's and got "subjects overlap with an existing stream".
  for (let round = 0; round < 40; round++) {
    const config = { name: `RACE_${round}`, subjects: [`race.${round}.>`] };
    const outcomes = await Promise.allSettled(connections.map((nc) => ensureStream(nc, config)));
    const failed = outcomes.filter((o) => o.status === "rejected").map((o) => String((o as PromiseRejectedResult).reason));
    assert.deepEqual(failed, [], `round ${round}`);
  }
  const names = [];
  for await (const info of (await jetstreamManager(connections[0]!)).streams.list()) names.push(info.config.name);
  assert.equal(names.filter((name) => name.startsWith("RACE_")).length, 40);
  // A real conflict stands: another stream over the same subjects is refused.
  await assert.rejects(ensureStream(connections[0]!, { name: "RACE_OTHER", subjects: ["race.0.>"] }), /overlap/);
});

test("nodes creating the same key-value bucket at the same moment: every one gets it (the same 'subjects overlap' answer)", async () => {
  // The lifecycle suite's two nodes once raced here: one node's bucket create answered "subjects overlap" and it exited.
  const managers = connections.map((nc) => new Kvm(nc));
  for (let round = 0; round < 40; round++) {
    const outcomes = await Promise.allSettled(managers.map((kvm) => openBucket(kvm, `race_${round}`, 1)));
    const failed = outcomes.filter((o) => o.status === "rejected").map((o) => String((o as PromiseRejectedResult).reason));
    assert.deepEqual(failed, [], `round ${round}`);
  }
});
