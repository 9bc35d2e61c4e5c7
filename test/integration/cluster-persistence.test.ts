import { after, test } from "node:test";
import assert from "node:assert/strict";
import type { NatsServerProcess } from "../../service/nats-server";
import { counter } from "../../testkit/counter-actor";
import { connectTestClient, type TestClient } from "../helpers/client";
import { startNats } from "../../testkit/nats";
import { NodeProcess } from "../../testkit/node-process";
import { tempDir } from "../../testkit/temp";

let nats: NatsServerProcess | undefined;
let nodes: NodeProcess[] = [];
let caller: TestClient | undefined;

after(async () => {
  await caller?.close();
  await Promise.all(nodes.map((node) => node.stop()));
  await nats?.stop();
});

test("persistence: stop every node and the nats-server, start them again: state is intact", async () => {
  const natsDir = tempDir("nats-persist");
  const dataDirs = { p1: tempDir("p1"), p2: tempDir("p2") };
  const startNodes = (url: string) => NodeProcess.startAll((["p1", "p2"] as const).map((nodeId) => ({ nodeId, natsUrl: url, dataDir: dataDirs[nodeId] })));

  nats = await startNats(natsDir);
  nodes = await startNodes(nats.url);
  caller = await connectTestClient(nats.url);
  const expected = new Map<string, number>();
  for (let i = 0; i < 20; i++) {
    const id = `persist-${i}`;
    await caller.client.ref(counter, id).increment(i + 1);
    await caller.client.ref(counter, id).append(`entry-${i}`);
    expected.set(id, i + 1);
  }
  await caller.close();
  for (const node of nodes) assert.equal(await node.stop(), 0);
  await nats.stop();

  nats = await startNats(natsDir);
  nodes = await startNodes(nats.url);
  caller = await connectTestClient(nats.url);
  for (const [id, count] of expected) {
    const state = await caller.client.ref(counter, id).get();
    assert.equal(state.count, count, `${id} count`);
    assert.deepEqual(state.log, [`entry-${count - 1}`], `${id} log`);
  }
});
