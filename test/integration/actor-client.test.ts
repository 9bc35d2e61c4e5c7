import "reflect-metadata";
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import type { NatsConnection } from "@nats-io/transport-node";
import { Kvm } from "@nats-io/kv";
import { Buckets, partitionKey, partitionOf, Subjects } from "../../actors/runtime/addressing";
import { connectClient, defaultRuntimeOptions } from "../../actors/runtime/runtime";
import type { PartitionRecord } from "../../actors/runtime/types";
import type { NatsServerProcess } from "../../service/nats-server";
import { connectTo, silentLogger, startNats } from "../helpers/nats";

let nats: NatsServerProcess;
let nc: NatsConnection;

before(async () => {
  nats = await startNats();
  nc = await connectTo(nats);
});

after(async () => {
  await nc.close();
  await nats.stop();
});

test("a call whose owner leaves the partition table while it waits fails as OUTCOME_UNKNOWN soon after, not at its deadline", async () => {
  const { client, close } = await connectClient({ nc, logger: silentLogger, options: { nodeId: "caller", callTimeoutMs: 20_000 } });
  try {
    const partition = partitionOf("counter", "orphaned", defaultRuntimeOptions.partitions);
    const partitions = await new Kvm(nc).open(Buckets.partitions);
    // An owner that takes the call and dies before answering: subscribed, silent.
    const received = new Promise<void>((resolve) => {
      const silent = nc.subscribe(Subjects.call("ghost-incarnation", partition), { max: 1, callback: () => resolve() });
      void silent.closed;
    });
    await partitions.put(partitionKey(partition), JSON.stringify({ owner: "ghost", incarnation: "ghost-incarnation", epoch: 1 } satisfies PartitionRecord));

    const startedAt = Date.now();
    const call = client.call("counter", "orphaned", "increment", 1).then(
      () => assert.fail("a call nobody answered cannot succeed"),
      (error: unknown) => error as { code?: string; retryable?: boolean },
    );
    await received;
    // Its lease ran out: another node is recorded as the owner.
    await partitions.put(partitionKey(partition), JSON.stringify({ owner: "heir", incarnation: "heir-incarnation", epoch: 2 } satisfies PartitionRecord));

    const error = await call;
    const waitedMs = Date.now() - startedAt;
    assert.equal(error.code, "OUTCOME_UNKNOWN", "the caller is told the outcome is unknown");
    assert.equal(error.retryable, false, "not retried blindly: the handler may have run");
    assert.ok(waitedMs < 5_000, `failed after ${waitedMs} ms, well before the 20 s deadline`);
  } finally {
    close();
  }
});

test("an owner that renews its entry (same incarnation) does not fail the calls waiting on it", async () => {
  const { client, close } = await connectClient({ nc, logger: silentLogger, options: { nodeId: "caller-2", callTimeoutMs: 20_000 } });
  try {
    const partition = partitionOf("counter", "slow", defaultRuntimeOptions.partitions);
    const partitions = await new Kvm(nc).open(Buckets.partitions);
    let answer: (() => void) | undefined;
    const received = new Promise<void>((resolve) => {
      nc.subscribe(Subjects.call("slow-incarnation", partition), {
        max: 1,
        callback: (_error, msg) => {
          answer = () => msg.respond(JSON.stringify({ r: { count: 1 } }));
          resolve();
        },
      });
    });
    await partitions.put(partitionKey(partition), JSON.stringify({ owner: "slow", incarnation: "slow-incarnation", epoch: 1 } satisfies PartitionRecord));
    const call = client.call<{ count: number }>("counter", "slow", "increment", 1);
    await received;
    await partitions.put(partitionKey(partition), JSON.stringify({ owner: "slow", incarnation: "slow-incarnation", epoch: 1 } satisfies PartitionRecord));
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    answer!();
    assert.deepEqual(await call, { count: 1 }, "answered by the owner that kept the partition");
  } finally {
    close();
  }
});
