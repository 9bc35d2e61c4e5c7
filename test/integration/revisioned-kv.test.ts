import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { Kvm, type KV } from "@nats-io/kv";
import type { NatsConnection } from "@nats-io/transport-node";
import { StaleRevisionError } from "../../actors/runtime/errors";
import { RevisionedKv } from "../../actors/runtime/revisioned-kv";
import type { NatsServerProcess } from "../../service/nats-server";
import { connectTo, startNats } from "../../testkit/nats";

describe("revision-checked writes on a real nats-server", () => {
  let nats: NatsServerProcess;
  let nc: NatsConnection;
  let kv: KV;
  let store: RevisionedKv<{ v: number }>;

  before(async () => {
    nats = await startNats();
    nc = await connectTo(nats);
    kv = await new Kvm(nc).create("revisioned_test", { history: 1 });
    store = new RevisionedKv(kv);
  });

  after(async () => {
    await nc.close();
    await nats.stop();
  });

  test("a key never written reads as revision 0 and is created only once", async () => {
    assert.deepEqual(await store.read("fresh"), { value: undefined, revision: 0 });
    const revision = await store.write("fresh", { v: 1 }, 0);
    assert.ok(revision > 0);
    await assert.rejects(store.write("fresh", { v: 2 }, 0), StaleRevisionError);
    assert.deepEqual(await store.read("fresh"), { value: { v: 1 }, revision });
  });

  test("a write based on an old revision is rejected and changes nothing", async () => {
    const r1 = await store.write("k", { v: 1 }, 0);
    const r2 = await store.write("k", { v: 2 }, r1);
    await assert.rejects(
      store.write("k", { v: 99 }, r1),
      (error: StaleRevisionError) => error instanceof StaleRevisionError && error.expectedRevision === r1 && error.retryable,
    );
    assert.deepEqual(await store.read("k"), { value: { v: 2 }, revision: r2 });
  });

  test("a delete is revision-checked too, and a write after it must name the delete marker", async () => {
    const r1 = await store.write("d", { v: 1 }, 0);
    const r2 = await store.write("d", { v: 2 }, r1);
    await assert.rejects(store.remove("d", r1), StaleRevisionError);
    const marker = await store.remove("d", r2);
    assert.deepEqual(await store.read("d"), { value: undefined, revision: marker });
    await assert.rejects(store.write("d", { v: 3 }, r2), StaleRevisionError, "a writer that missed the delete is refused");
    const r4 = await store.write("d", { v: 4 }, marker);
    assert.deepEqual(await store.read("d"), { value: { v: 4 }, revision: r4 });
  });

  test("of two writers racing from the same revision exactly one wins", async () => {
    const base = await store.write("race", { v: 0 }, 0);
    const outcomes = await Promise.allSettled(Array.from({ length: 10 }, (_, i) => store.write("race", { v: i + 1 }, base)));
    assert.equal(outcomes.filter((o) => o.status === "fulfilled").length, 1);
    assert.ok(outcomes.filter((o) => o.status === "rejected").every((o) => (o as PromiseRejectedResult).reason instanceof StaleRevisionError));
  });
});
