import "reflect-metadata";
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import type { NatsConnection } from "@nats-io/transport-node";
import { Kvm } from "@nats-io/kv";
import { Buckets, partitionKey, partitionOf, Subjects } from "../../actors/runtime/addressing";
import { connectClient, defaultRuntimeOptions } from "../../actors/runtime/runtime";
import type { PartitionRecord } from "../../actors/runtime/types";
import type { NatsServerProcess } from "../../service/nats-server";
import { connectTo, silentLogger, startNats } from "../../testkit/nats";

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

test("a call whose owner dies with it fails as OUTCOME_UNKNOWN once the table names another owner, not at its deadline", async () => {
  const { client, close } = await connectClient({ nc, logger: silentLogger, options: { nodeId: "caller", callTimeoutMs: 20_000 } });
  try {
    const partition = partitionOf("counter", "orphaned", defaultRuntimeOptions.partitions);
    const partitions = await new Kvm(nc).open(Buckets.partitions);
    // An owner that takes the call and dies before answering: its subscription goes with it.
    const received = new Promise<void>((resolve) => {
      const ghost = nc.subscribe(Subjects.callsTo("ghost-incarnation"), {
        callback: () => {
          ghost.unsubscribe();
          resolve();
        },
      });
    });
    await partitions.put(partitionKey(partition), JSON.stringify({ owner: "ghost", incarnation: "ghost-incarnation", epoch: 1 } satisfies PartitionRecord));

    const startedAt = Date.now();
    const call = client.call("counter", "orphaned", "increment", 1).then(
      () => assert.fail("a call nobody answered cannot succeed"),
      (error: unknown) => error as { code?: string; retryable?: boolean },
    );
    await received;
    await nc.flush();
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

test("a call whose owner is only paused waits for it: when it wakes and answers NOT_OWNER, the call runs on the new owner", async () => {
  const { client, close } = await connectClient({ nc, logger: silentLogger, options: { nodeId: "caller-paused", callTimeoutMs: 20_000 } });
  const subscriptions: Array<{ unsubscribe(): void }> = [];
  try {
    const partition = partitionOf("counter", "paused", defaultRuntimeOptions.partitions);
    const partitions = await new Kvm(nc).open(Buckets.partitions);
    let wake: (() => void) | undefined;
    const received = new Promise<void>((resolve) => {
      // Frozen while it holds the call (a stopped process keeps its connection): it answers nothing until woken, then NOT_OWNER.
      subscriptions.push(
        nc.subscribe(Subjects.callsTo("paused-incarnation"), {
          callback: (_error, msg) => {
            if (!msg.subject.endsWith(`.${partition}`)) return;
            wake = () => void msg.respond(JSON.stringify({ e: { code: "NOT_OWNER", message: "lease lapsed", retryable: true } }));
            resolve();
          },
        }),
      );
    });
    subscriptions.push(
      nc.subscribe(Subjects.call("heir-2-incarnation", partition), {
        callback: (_error, msg) => void msg.respond(JSON.stringify({ r: { count: 2, node: "heir-2" } })),
      }),
    );
    await partitions.put(partitionKey(partition), JSON.stringify({ owner: "paused", incarnation: "paused-incarnation", epoch: 1 } satisfies PartitionRecord));
    const call = client.call<{ count: number; node: string }>("counter", "paused", "increment", 1);
    await received;
    await partitions.put(partitionKey(partition), JSON.stringify({ owner: "heir-2", incarnation: "heir-2-incarnation", epoch: 2 } satisfies PartitionRecord));
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    wake!();
    assert.deepEqual(await call, { count: 2, node: "heir-2" }, "routed again after the paused owner's NOT_OWNER");
  } finally {
    for (const subscription of subscriptions) subscription.unsubscribe();
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
