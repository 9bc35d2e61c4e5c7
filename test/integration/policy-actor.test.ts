import "reflect-metadata";
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import type { NatsConnection } from "@nats-io/transport-node";
import { builtInActors } from "../../actors/catalog";
import { policy } from "../../actors/policy/policy-actor";
import { policyRevision } from "../../actors/policy/revision-actor";
import type { RuntimeError } from "../../actors/runtime/errors";
import { startNode, type ActorRuntime } from "../../actors/runtime/runtime";
import type { NatsServerProcess } from "../../service/nats-server";
import { eventually } from "../helpers/client";
import { connectTo, silentLogger, startNats } from "../../testkit/nats";
import { realisticPolicy } from "../../testkit/policy";

describe("the policy actor", () => {
  let nats: NatsServerProcess;
  let nc: NatsConnection;
  let runtime: ActorRuntime;
  const by = "operator@example";

  before(async () => {
    nats = await startNats();
    nc = await connectTo(nats);
    ({ runtime } = await startNode({ nc, logger: silentLogger, options: { nodeId: "policy-test" } }, builtInActors));
    await eventually("partitions owned", () => runtime.placement.ownedCount() === 64);
  });

  after(async () => {
    await runtime.stop();
    await nc.close();
    await nats.stop();
  });

  const ref = () => runtime.client.ref(policy, "default");
  const rejection = (code: string, check?: (error: RuntimeError) => void) => (error: RuntimeError) => {
    assert.equal(error.code, code);
    check?.(error);
    return true;
  };

  test("a complete configuration is stored as revision 1; the same write again changes nothing", async () => {
    assert.equal((await ref().get()).revision, 0);
    assert.deepEqual(await ref().replace({ config: realisticPolicy(), by }), { revision: 1, changed: true });
    assert.deepEqual(await ref().replace({ config: realisticPolicy(), by }), { revision: 1, changed: false });
    const state = await ref().get();
    assert.deepEqual(state.config, realisticPolicy());
    assert.equal(state.updatedBy, by);
  });

  test("an invalid write lists its problems and changes nothing", async () => {
    const broken = realisticPolicy();
    broken.platformUse.purposes[0].categoryIds.push("ghost");
    await assert.rejects(
      ref().replace({ config: broken, by }),
      rejection("CONFIG_INVALID", (e) => assert.deepEqual(e.details, [{ path: "/platformUse/purposes/0/categoryIds/4", problem: "unknown category 'ghost'" }])),
    );
    assert.equal((await ref().get()).revision, 1);
  });

  test("If-Match: a stale expected revision is refused; of two concurrent writes from the same revision exactly one wins", async () => {
    await assert.rejects(ref().write({ write: { section: "userAccess", categoryIds: ["contact"] }, expectedRevision: 0, by }), rejection("REVISION_MISMATCH"));
    const outcomes = await Promise.allSettled([
      ref().write({ write: { section: "userAccess", categoryIds: ["contact"] }, expectedRevision: 1, by }),
      ref().write({ write: { section: "userAccess", categoryIds: ["identity"] }, expectedRevision: 1, by }),
    ]);
    assert.equal(outcomes.filter((o) => o.status === "fulfilled").length, 1);
    assert.equal(((outcomes.find((o) => o.status === "rejected") as PromiseRejectedResult).reason as RuntimeError).code, "REVISION_MISMATCH");
    assert.equal((await ref().get()).revision, 2);
  });

  test("section writes upsert by stable id, and a mapping group is redefined by name", async () => {
    const before = (await ref().get()).config;
    const result = await ref().write({
      write: {
        section: "categories",
        items: [
          { stableId: "usage", name: "Product usage", fields: [{ stableId: "usage.clicks", name: "Clicks" }] },
          { stableId: "billing", name: "Billing", fields: [] },
        ],
      },
      by,
    });
    assert.equal(result.changed, true);
    const after = (await ref().get()).config;
    assert.deepEqual(
      after.categories.map((c) => c.stableId),
      [...before.categories.map((c) => c.stableId), "billing"],
    );
    assert.equal(after.categories.find((c) => c.stableId === "usage")!.name, "Product usage");

    await ref().write({
      write: { section: "mappingGroup", group: { name: "events-csv", fieldMappings: [{ recordField: "uid", resourceContext: true }] } },
      by,
    });
    const groups = (await ref().get()).config.mappingGroups;
    assert.deepEqual(
      groups.find((g) => g.name === "events-csv"),
      { name: "events-csv", fieldMappings: [{ recordField: "uid", resourceContext: true }] },
    );
    assert.equal(groups.length, 2);
  });

  test("deleting an item that is still referenced is refused with the references; an unreferenced one goes", async () => {
    const { revision, config } = await ref().get();
    // Which of the two racing If-Match writes won decides whether user access names 'identity'.
    const userAccessReference = config.userAccess.categoryIds.includes("identity")
      ? [{ path: "/userAccess/categoryIds/0", problem: "unknown category 'identity'" }]
      : [];
    await assert.rejects(
      ref().remove({ kind: "category", id: "identity", by }),
      rejection("CONFIG_REFERENCED", (e) =>
        assert.deepEqual(e.details, [
          { path: "/platformUse/purposes/0/categoryIds/2", problem: "unknown category 'identity'" },
          { path: "/platformSharing/purposes/1/categoryCeilingIds/1", problem: "unknown category 'identity'" },
          ...userAccessReference,
          { path: "/guardian/categoryIds/1", problem: "unknown category 'identity'" },
          { path: "/mappingGroups/0/fieldMappings/3/categoryId", problem: "unknown category 'identity'" },
          { path: "/mappingGroups/0/fieldMappings/3/fieldId", problem: "unknown field 'identity.name'" },
        ]),
      ),
    );
    assert.equal((await ref().get()).revision, revision, "nothing changed");
    await assert.rejects(ref().remove({ kind: "mappingGroup", id: "nope", by }), rejection("NOT_FOUND"));
    assert.deepEqual(await ref().remove({ kind: "category", id: "billing", by }), { revision: revision + 1, changed: true });
  });

  test("every revision is kept in the history: what changed, when and by whom", async () => {
    const current = (await ref().get()).revision;
    const records = await Promise.all(Array.from({ length: current }, (_, i) => runtime.client.ref(policyRevision, `default.${i + 1}`).get()));
    assert.deepEqual(
      records.map((r) => [r!.revision, r!.change, r!.by]),
      [
        [1, "replaced the whole configuration", by],
        [2, "wrote userAccess", by],
        [3, "wrote categories", by],
        [4, "wrote mappingGroup", by],
        [5, "removed category 'billing'", by],
      ],
    );
    assert.deepEqual(records[4]!.config, (await ref().get()).config);
  });
});
