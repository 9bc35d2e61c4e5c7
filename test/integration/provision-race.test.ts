import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import type { NatsConnection } from "@nats-io/transport-node";
import { jetstreamManager } from "@nats-io/jetstream";
import { defaultRetention, ensureStream, provision } from "../../actors/runtime/provision";
import type { NatsServerProcess } from "../../service/nats-server";
import { connectTo, startNats } from "../../testkit/nats";

let nats: NatsServerProcess;

/**
 * Retries while a fresh server's JetStream does not answer yet (a timeout or no responders, under a loaded machine), as a
 * node's start does (service/node.ts); any other error, the race's "subjects overlap" among them, is the outcome.
 */
async function whileJetStreamStarts<T>(work: () => Promise<T>): Promise<T> {
  const until = Date.now() + 30_000;
  for (;;) {
    try {
      return await work();
    } catch (error) {
      if (!/timeout|no responders|503/i.test(String((error as Error).message)) || Date.now() > until) throw error;
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
  }
}
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

test("nodes provisioning a fresh server at once (buckets and streams): every one succeeds", async () => {
  // The lifecycle suite's two nodes once raced here: one node's bucket create answered "subjects overlap" and it exited.
  for (let round = 0; round < 6; round++) {
    const server = await startNats();
    const clients = await Promise.all(Array.from({ length: 6 }, () => connectTo(server.url)));
    try {
      const outcomes = await Promise.allSettled(
        clients.map((nc) =>
          whileJetStreamStarts(() =>
            provision(nc, { replicas: 1, partitions: 4, auditRetention: defaultRetention.audit, traceRetention: defaultRetention.trace }),
          ),
        ),
      );
      const failed = outcomes.filter((o) => o.status === "rejected").map((o) => String((o as PromiseRejectedResult).reason));
      assert.deepEqual(failed, [], `round ${round}`);
    } finally {
      await Promise.all(clients.map((nc) => nc.close()));
      await server.stop();
    }
  }
});
