import "reflect-metadata";
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import type { NatsConnection } from "@nats-io/transport-node";
import { builtInActors } from "../../actors/catalog";
import { compilePolicy } from "../../decision/compiled-policy";
import { decide } from "../../decision/engine";
import { policy } from "../../actors/policy/policy-actor";
import type { RuntimeError } from "../../actors/runtime/errors";
import { startNode, type ActorRuntime } from "../../actors/runtime/runtime";
import { user } from "../../actors/user/user-actor";
import type { NatsServerProcess } from "../../service/nats-server";
import { realisticPolicy } from "../../testkit/policy";
import { eventually } from "../helpers/client";
import { connectTo, silentLogger, startNats } from "../../testkit/nats";

const code = (expected: string) => (error: RuntimeError) => {
  assert.equal(error.code, expected, error.message);
  return true;
};

describe("the user actor with the policy actor", () => {
  let nats: NatsServerProcess;
  let nc: NatsConnection;
  let runtime: ActorRuntime;
  const refOf = (id: string) => runtime.client.ref(user, id);
  // A child today: under the guardian threshold (13) of the realistic policy.
  const childDob = `${new Date().getUTCFullYear() - 9}-01-01`;

  before(async () => {
    nats = await startNats();
    nc = await connectTo(nats);
    ({ runtime } = await startNode({ nc, logger: silentLogger, options: { nodeId: "user-test" } }, builtInActors));
    await eventually("partitions owned", () => runtime.placement.ownedCount() === 64);
    await runtime.client.ref(policy, "default").replace({ config: realisticPolicy(), by: "test" });
  });

  after(async () => {
    await runtime.stop();
    await nc.close();
    await nats.stop();
  });

  test("create once: a second create is USER_EXISTS; a bad dob or unknown contract is refused", async () => {
    const created = await refOf("alice").create({ attributes: { dob: "1990-01-01", location: "US" } });
    assert.equal(created.userId, "alice");
    await assert.rejects(refOf("alice").create({}), code("USER_EXISTS"));
    await assert.rejects(refOf("bad-dob").create({ attributes: { dob: "1990-13-01" } }), code("USER_INVALID"));
    for (const location of ["Deutschland", "DEU", "US_CA", ""])
      await assert.rejects(refOf("bad-location").create({ attributes: { location } }), code("USER_INVALID"), location);
    await assert.rejects(refOf("bad-contract").create({ contractualRelationship: { purposeId: "reseller", termsId: "nope" } }), code("USER_INVALID"));
    await assert.rejects(refOf("nobody").get(), code("NOT_FOUND"));
  });

  test("an adult accepts their own terms; the acceptance is what decisions use", async () => {
    const accepted = await refOf("alice").accept({});
    const state = await refOf("alice").get();
    assert.equal(state.acceptance!.termsHash, accepted.termsHash);
    const decision = decide(compilePolicy(realisticPolicy(), 1), state, { type: "platformUse", purposeId: "service" }, new Date());
    assert.equal(decision.allowed, true);
    const status = await refOf("alice").terms();
    assert.equal(status.reacceptRequired, false);
    assert.equal(status.acceptedTermsHash, accepted.termsHash);
  });

  test("a child alone is refused; a guardian accepts for the child and becomes linked on both sides", async () => {
    await refOf("kid").create({ attributes: { dob: childDob, location: "US" } });
    await assert.rejects(refOf("kid").accept({}), code("GUARDIAN_REQUIRED"));
    await refOf("kid2").create({ attributes: { dob: childDob, location: "US" } });
    await assert.rejects(refOf("kid").accept({ acceptorId: "kid2" }), code("GUARDIAN_INVALID"));
    await assert.rejects(refOf("kid").accept({ acceptorId: "ghost" }), code("GUARDIAN_INVALID"));
    const accepted = await refOf("kid").accept({ acceptorId: "alice" });
    assert.equal(accepted.acceptorId, "alice");
    assert.deepEqual((await refOf("kid").get()).guardians, ["alice"]);
    assert.deepEqual((await refOf("alice").get()).children, ["kid"]);
    await assert.rejects(refOf("alice").accept({ acceptorId: "kid" }), code("GUARDIAN_INVALID"), "an adult accepts for themselves");
  });

  test("a guardian is a known adult, and once a child has one, a stranger cannot make themself another by accepting", async () => {
    await refOf("nodob").create({ attributes: { location: "US" } });
    await refOf("stranger").create({ attributes: { dob: "1985-05-05", location: "US" } });
    await refOf("kid5").create({ attributes: { dob: childDob, location: "US" } });
    // No dob: not known to be a child, not known to be an adult either.
    await assert.rejects(refOf("kid5").accept({ acceptorId: "nodob" }), code("GUARDIAN_INVALID"));
    await assert.rejects(refOf("kid5").addGuardian({ guardianId: "nodob" }), code("GUARDIAN_INVALID"));
    // The first acceptance creates the link (policy-semantics 5); after it only a guardian accepts.
    await refOf("kid5").accept({ acceptorId: "alice" });
    await assert.rejects(refOf("kid5").accept({ acceptorId: "stranger" }), code("NOT_A_GUARDIAN"));
    assert.deepEqual((await refOf("kid5").get()).guardians, ["alice"], "the stranger was not linked");
    assert.deepEqual((await refOf("stranger").get()).children, []);
    // Nor by adding the stranger as a guardian first: a child with a guardian gets another only from one of them.
    await assert.rejects(refOf("kid5").addGuardian({ guardianId: "stranger" }), code("GUARDIAN_REQUIRED"));
    await assert.rejects(refOf("kid5").addGuardian({ guardianId: "stranger", grantorId: "stranger" }), code("NOT_A_GUARDIAN"));
    assert.deepEqual((await refOf("kid5").get()).guardians, ["alice"]);
    assert.deepEqual(
      (await refOf("kid5").addGuardian({ guardianId: "stranger", grantorId: "alice" })).guardians,
      ["alice", "stranger"],
      "alice adds a second guardian",
    );
    await refOf("kid5").accept({ acceptorId: "alice" });
  });

  test("a guardian's opt-in is stored with the categories it covers now: widening the purpose later does not widen it", async () => {
    // Analytics as an opt-in purpose of usage only, within the guardian categories.
    const optInAnalytics = realisticPolicy();
    optInAnalytics.platformUse.purposes.find((p) => p.stableId === "analytics")!.optIn = true;
    await runtime.client.ref(policy, "default").replace({ config: optInAnalytics, by: "test" });
    try {
      await refOf("kid5").consent({ grantorId: "alice", consents: [{ purposeId: "analytics" }] });
      assert.deepEqual((await refOf("kid5").get()).optIns.analytics, { categoryIds: ["usage"], grantorId: "alice" }, "not {}, which would follow the purpose");
      // The user's own opt-in without categories still follows the purpose (theirs to give).
      await refOf("alice").consent({ consents: [{ purposeId: "analytics" }] });
      assert.deepEqual((await refOf("alice").get()).optIns.analytics, {});
    } finally {
      await runtime.client.ref(policy, "default").replace({ config: realisticPolicy(), by: "test" });
    }
  });

  test("a child's consent needs a guardian as grantor; consents narrow, are kept as history, and can be revoked", async () => {
    await assert.rejects(
      refOf("kid").consent({ consents: [{ purposeId: "research", termsId: "research-study-1", categoryIds: ["usage"] }] }),
      code("GUARDIAN_REQUIRED"),
    );
    await assert.rejects(
      refOf("kid").consent({ grantorId: "kid2", consents: [{ purposeId: "research", termsId: "research-study-1" }] }),
      code("NOT_A_GUARDIAN"),
    );
    await refOf("kid").consent({ grantorId: "alice", consents: [{ purposeId: "research", termsId: "research-study-1", categoryIds: ["usage"] }] });
    await assert.rejects(
      refOf("alice").consent({ consents: [{ purposeId: "research", termsId: "research-study-1", categoryIds: ["contact"] }, { purposeId: "nope" }] }),
      (error: RuntimeError) => error.code === "CONSENT_INVALID" && (error.details as unknown[]).length === 2,
    );
    const kid = await refOf("kid").get();
    assert.deepEqual(kid.consents, { "research/research-study-1": { categoryIds: ["usage"], grantorId: "alice" } }, "marked as the guardian's");
    await refOf("kid").revoke({ grantorId: "alice", purposeId: "research", termsId: "research-study-1" });
    const after = await refOf("kid").get();
    assert.deepEqual(after.consents, {});
    assert.deepEqual(
      after.consentHistory.map((h) => [h.purposeId, h.categoryIds, h.by]),
      [
        ["research", ["usage"], "alice"],
        ["research", null, "alice"],
      ],
    );
  });

  test("opting in and out of an opt-in purpose", async () => {
    const compiled = compilePolicy(realisticPolicy(), 1);
    await refOf("alice").consent({ consents: [{ purposeId: "personalization", categoryIds: ["usage"] }] });
    assert.deepEqual(decide(compiled, await refOf("alice").get(), { type: "platformUse", purposeId: "personalization" }, new Date()).categoryIds, ["usage"]);
    await assert.rejects(refOf("alice").consent({ consents: [{ purposeId: "personalization", categoryIds: ["contact"] }] }), code("CONSENT_INVALID"));
    await refOf("alice").revoke({ purposeId: "personalization" });
    assert.equal(decide(compiled, await refOf("alice").get(), { type: "platformUse", purposeId: "personalization" }, new Date()).allowed, false);
  });

  test("guardian options and turning a flow off and on again", async () => {
    const options = await refOf("kid").guardianOptions();
    assert.deepEqual(
      options.map((o) => [o.purposeId, o.thirdPartyId, o.disabled]),
      [
        ["ads-sharing", "adco", false],
        ["ads-sharing", "geoads", false],
      ],
    );
    await refOf("kid").setFlow({ guardianId: "alice", purposeId: "ads-sharing", thirdPartyId: "adco", disabled: true });
    assert.deepEqual((await refOf("kid").get()).disabledFlows, [{ purposeId: "ads-sharing", thirdPartyId: "adco" }]);
    await assert.rejects(
      refOf("kid").setFlow({ guardianId: "alice", purposeId: "payments", thirdPartyId: "payco", disabled: true }),
      code("FLOW_NOT_DISABLEABLE"),
    );
    await assert.rejects(refOf("kid").setFlow({ guardianId: "kid2", purposeId: "ads-sharing", thirdPartyId: "adco", disabled: true }), code("NOT_A_GUARDIAN"));
    await refOf("kid").setFlow({ guardianId: "alice", purposeId: "ads-sharing", thirdPartyId: "adco", disabled: false });
    assert.deepEqual((await refOf("kid").get()).disabledFlows, []);
  });

  test("reacceptance is required once the terms grant more than was accepted", async () => {
    const widened = realisticPolicy();
    widened.platformUse.purposes[2].categoryIds.push("location");
    await runtime.client.ref(policy, "default").replace({ config: widened, by: "test" });
    assert.equal((await refOf("alice").terms()).reacceptRequired, true);
    await refOf("alice").accept({});
    assert.equal((await refOf("alice").terms()).reacceptRequired, false);
  });

  test("a guardian link that only one side records confers nothing; an adult cannot name another grantor", async () => {
    await refOf("kid3").create({ attributes: { dob: childDob, location: "US" } });
    await refOf("kid3").accept({ acceptorId: "alice" });
    await refOf("alice").unlink("kid3"); // as after an erasure half done
    await assert.rejects(
      refOf("kid3").consent({ grantorId: "alice", consents: [{ purposeId: "research", termsId: "research-study-1" }] }),
      code("NOT_A_GUARDIAN"),
    );
    await assert.rejects(
      refOf("alice").consent({ grantorId: "kid3", consents: [{ purposeId: "research", termsId: "research-study-1" }] }),
      code("GUARDIAN_INVALID"),
    );
    await refOf("kid3").accept({ acceptorId: "alice" }); // accepting again repairs the guardian's side
    assert.ok((await refOf("alice").get()).children.includes("kid3"));
  });

  test("erasure removes the user at once and names the linked users, whose side is removed with unlink", async () => {
    assert.deepEqual(await refOf("kid").erase(), { erased: "kid", linked: ["alice"] });
    await assert.rejects(refOf("kid").get(), code("NOT_FOUND"));
    await refOf("alice").unlink("kid");
    assert.ok(!(await refOf("alice").get()).children.includes("kid"));
    await refOf("kid").create({ attributes: {} });
    assert.deepEqual((await refOf("kid").get()).guardians, [], "a new user with the same id starts clean");
  });
});
