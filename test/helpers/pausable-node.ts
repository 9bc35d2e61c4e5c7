import { after, before } from "node:test";
import assert from "node:assert/strict";
import type { NatsConnection } from "@nats-io/transport-node";
import type { NatsServerProcess } from "../../service/nats-server";
import { call as request } from "../../testkit/http";
import { connectTo, startNats } from "../../testkit/nats";
import { NodeProcess } from "../../testkit/node-process";
import { realisticPolicy } from "../../testkit/policy";
import { createPopulation } from "../fixtures/population";

/** What a test that pauses nats-server under a node works with, set once its suite's `before` ran. */
export interface PausableWorld {
  nats: NatsServerProcess;
  node: NodeProcess;
  /** The test's own connection to the server (to watch for the moment to pause it). */
  nc: NatsConnection;
}

/**
 * Registers, in the calling suite, a node over its own nats-server with a short call deadline
 * (`callTimeoutMs`: a paused server makes calls time out quickly), the realistic policy and the
 * population, stopped after the suite. The world is filled in by `before`.
 */
export function pausableNode(nodeId: string, callTimeoutMs: number) {
  const world = {} as PausableWorld;
  const call = (method: string, path: string, body?: unknown) => request(world.node, method, path, body);
  before(async () => {
    world.nats = await startNats();
    world.node = await NodeProcess.start({ nodeId, natsUrl: world.nats.url, env: { CALL_TIMEOUT_MS: String(callTimeoutMs) } });
    world.nc = await connectTo(world.nats.url);
    assert.equal((await call("PUT", "/config", realisticPolicy())).status, 200);
    await createPopulation(call);
  });
  after(async () => {
    await world.nc?.close().catch(() => undefined);
    await world.node?.stop();
    await world.nats?.stop();
  });
  return { world, call };
}
