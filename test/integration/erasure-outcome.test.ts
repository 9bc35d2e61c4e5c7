import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { setTimeout as sleep } from "node:timers/promises";
import { pausableNode } from "../helpers/pausable-node";

const callTimeoutMs = 1000;

describe("an erasure whose erase call loses its answer is finished all the same", () => {
  const { world, call } = pausableNode("erasure-outcome-1", callTimeoutMs);

  test("nats-server paused once the user's state is deleted: DELETE answers 200 when it wakes, the guardian's link and the decision index entry are gone", async () => {
    for (let i = 0; i < 5; i++) assert.equal((await call("PUT", "/decision", { userId: "child", type: "platformUse", purposeId: "service" })).status, 200);
    const guardianBefore = await call("GET", "/user/guardian");
    assert.ok((guardianBefore.body.children as string[]).includes("child"), "the fixture's guardian is linked to the child");
    await until(async () => (await call("GET", "/user/child/report")).body?.decisions?.total === 5);

    // The erase's delete marker is stored; its answer is then held by the paused server past the call's deadline.
    let paused = false;
    const sub = world.nc.subscribe("$KV.warden_state.user.child", {
      callback: (_error, message) => {
        if (paused || message.headers?.get("KV-Operation") !== "DEL") return;
        paused = true;
        world.nats.signal("SIGSTOP");
      },
    });
    await world.nc.flush();
    let answer: Awaited<ReturnType<typeof call>>;
    try {
      const erasing = call("DELETE", "/user/child");
      for (let i = 0; i < 400 && !paused; i++) await sleep(5);
      assert.ok(paused, "the server was paused on the erase's delete marker");
      await sleep(callTimeoutMs * 2.5);
      world.nats.signal("SIGCONT");
      answer = await erasing;
    } finally {
      if (paused) world.nats.signal("SIGCONT");
      sub.unsubscribe();
    }
    assert.equal(answer.status, 200, JSON.stringify(answer.body));
    assert.equal(answer.body.erased, "child");
    assert.deepEqual(answer.body.unlinked, ["guardian"], "the other side of the link was read before the erase");
    assert.equal((await call("GET", "/user/child")).status, 404);
    const guardian = await call("GET", "/user/guardian");
    assert.ok(!(guardian.body.children as string[]).includes("child"), `the guardian's side is gone: ${JSON.stringify(guardian.body.children)}`);
    // A new user of the same id does not inherit the erased person's decisions.
    assert.equal((await call("PUT", "/user", { userId: "child", attributes: { dob: "1990-01-01", location: "US" } })).status, 200);
    const report = await call("GET", "/user/child/report");
    assert.equal(report.status, 200, JSON.stringify(report.body));
    assert.equal(report.body.decisions.total, 0, `the new user's report: ${JSON.stringify(report.body.decisions)}`);
  });
});

async function until(check: () => Promise<boolean>, ms = 10_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error("timed out");
    await sleep(100);
  }
}
