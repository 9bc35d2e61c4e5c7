import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import type { NatsConnection } from "@nats-io/transport-node";
import { compilePolicy } from "../../decision/compiled-policy";
import { decide } from "../../decision/engine";
import type { DecisionRequest } from "../../decision/types";
import type { AuditRecord } from "../../actors/runtime/event-log";
import type { NatsServerProcess } from "../../service/nats-server";
import { realisticPolicy } from "../../testkit/policy";
import { connectTo, startNats } from "../../testkit/nats";
import { call, type Body } from "../../testkit/http";
import { NodeProcess } from "../../testkit/node-process";

describe("/user and /decision over HTTP, two nodes", () => {
  let nats: NatsServerProcess;
  let a: NodeProcess;
  let b: NodeProcess;
  let nc: NatsConnection;
  const traces: Array<{ subject: string; record: Body }> = [];
  const audits: AuditRecord[] = [];
  const childDob = `${new Date().getUTCFullYear() - 9}-01-01`;

  before(async () => {
    nats = await startNats();
    [a, b] = await NodeProcess.startAll(["ud-a", "ud-b"].map((nodeId) => ({ nodeId, natsUrl: nats.url })));
    nc = await connectTo(nats);
    // Each trace message carries one or more records, one per line.
    nc.subscribe("warden.trace.>", {
      callback: (_error, msg) => {
        for (const line of msg.string().split("\n")) traces.push({ subject: msg.subject, record: JSON.parse(line) });
      },
    });
    nc.subscribe("warden.audit.user.>", {
      callback: (_error, msg) => {
        audits.push(msg.json<AuditRecord>());
      },
    });
    assert.equal((await call(a, "PUT", "/config", realisticPolicy())).status, 200);
  });

  after(async () => {
    await nc?.close();
    await Promise.all([a?.stop(), b?.stop()]);
    await nats?.stop();
  });

  test("onboarding: create once, personalized terms, acceptance; a child needs a guardian", async () => {
    assert.equal((await call(a, "PUT", "/user", { userId: "alice", attributes: { dob: "1990-01-01", location: "US-NY" } })).status, 200);
    const again = await call(b, "PUT", "/user", { userId: "alice" });
    assert.equal(again.status, 409);
    assert.equal(again.body.error.code, "ERR_USER_EXISTS");

    const defaults = await call(a, "PUT", "/user/terms/query", {});
    assert.deepEqual(
      defaults.body.platformUse.map((p: { stableId: string }) => p.stableId),
      ["service", "personalization", "analytics"],
    );
    assert.match(defaults.body.hash, /^[0-9a-f]{64}$/);
    const childTerms = await call(a, "PUT", "/user/terms/query", { attributes: { dob: childDob } });
    assert.deepEqual(
      childTerms.body.platformUse.map((p: { stableId: string }) => p.stableId),
      ["service"],
    );

    const accepted = await call(b, "PUT", "/user/terms?userId=alice");
    assert.equal(accepted.status, 200);
    assert.equal((await call(a, "GET", "/user/alice")).body.acceptance.termsHash, accepted.body.termsHash);
    assert.deepEqual((await call(a, "GET", "/user/alice/reaccept")).body, {
      userId: "alice",
      reacceptRequired: false,
      acceptedTermsHash: accepted.body.termsHash,
      currentTermsHash: accepted.body.termsHash,
    });

    // Acceptance of the version shown: a termsHash that is no longer the user's current one is refused (409), nothing stored.
    await call(a, "PUT", "/user", { userId: "carol", attributes: { dob: "1991-02-02", location: "US-NY" } });
    const shown = (await call(a, "GET", "/user/carol/reaccept")).body.currentTermsHash as string;
    const stale = "0".repeat(64);
    const refused = await call(b, "PUT", `/user/terms?userId=carol&termsHash=${stale}`);
    assert.equal(refused.status, 409);
    assert.equal(refused.body.error.code, "ERR_USER_TERMS_CHANGED");
    assert.equal((await call(a, "GET", "/user/carol")).body.acceptance ?? null, null, "nothing was accepted");
    assert.equal((await call(b, "PUT", "/user/terms?userId=carol&termsHash=not-a-hash")).status, 400);
    const ofShown = await call(b, "PUT", `/user/terms?userId=carol&termsHash=${shown}`);
    assert.equal(ofShown.status, 200);
    assert.equal(ofShown.body.termsHash, shown);

    await call(a, "PUT", "/user", { userId: "kid", attributes: { dob: childDob, location: "US" } });
    const alone = await call(a, "PUT", "/user/terms?userId=kid");
    assert.equal(alone.status, 403);
    assert.equal(alone.body.error.code, "ERR_USER_GUARDIAN_REQUIRED");
    // A refused acceptance changes nothing on either side: a stale termsHash from an acceptor left the acceptor's record
    // naming the child among their children (the link was made before the version was checked).
    const staleForKid = await call(b, "PUT", `/user/terms?userId=kid&acceptorId=carol&termsHash=${stale}`);
    assert.equal(staleForKid.status, 409);
    assert.equal(staleForKid.body.error.code, "ERR_USER_TERMS_CHANGED");
    assert.deepEqual((await call(a, "GET", "/user/carol")).body.children, [], "the refused acceptor is linked to no child");
    assert.deepEqual((await call(a, "GET", "/user/kid")).body.guardians, []);
    assert.equal((await call(a, "PUT", "/user/terms?userId=kid&acceptorId=alice")).status, 200);
    assert.deepEqual((await call(b, "GET", "/user/kid")).body.guardians, ["alice"]);
    assert.equal((await call(a, "PUT", "/user", { userId: "bob", contractualRelationship: { purposeId: "reseller", termsId: "reseller-2026" } })).status, 200);
  });

  test("the same decisions through /decision and directly through the engine agree", async () => {
    const revision = Number((await fetch(`${a.url}/config`)).headers.get("x-config-revision"));
    const compiled = compilePolicy(realisticPolicy(), revision);
    const requests: DecisionRequest[] = [
      { type: "platformUse", purposeId: "service" },
      { type: "platformUse", purposeId: "analytics" },
      { type: "platformUse", purposeId: "personalization" },
      { type: "platformSharing", purposeId: "payments", thirdPartyId: "payco" },
      { type: "platformSharing", purposeId: "ads-sharing", thirdPartyId: "adco" },
      { type: "contractualExchange", purposeId: "reseller" },
      { type: "consentedSharing", purposeId: "research", termsId: "research-study-1" },
      { type: "platformUse", purposeId: "no-such-purpose" },
    ];
    for (const userId of ["alice", "kid", "bob", "nobody"]) {
      const stored = await call(a, "GET", `/user/${userId}`);
      const state = stored.status === 200 ? stored.body : undefined;
      for (const request of requests) {
        const answer = await call(b, "PUT", "/decision", { userId, ...request });
        assert.equal(answer.status, 200);
        const direct = decide(compiled, state, request, new Date());
        const what = `${userId} ${request.type} ${request.purposeId}`;
        assert.deepEqual(
          {
            allowed: answer.body.allowed,
            flow: answer.body.flow,
            categoryIds: answer.body.categoryIds,
            reasons: answer.body.reasons,
            summary: answer.body.summary,
            revision: answer.body.revision,
          },
          {
            allowed: direct.allowed,
            flow: direct.flow,
            categoryIds: direct.categoryIds,
            reasons: direct.reasons,
            summary: direct.summary,
            revision: direct.revision,
          },
          what,
        );
        assert.match(answer.body.traceId, /^[0-9a-f-]{36}$/);
      }
    }
  });

  test("a subscriber on the trace subjects receives a record for each decision, with its flow", async () => {
    const asked: Array<[string, DecisionRequest, string]> = [
      ["alice", { type: "platformUse", purposeId: "service" }, "platform"],
      ["bob", { type: "platformUse", purposeId: "service" }, "contractual"],
      ["bob", { type: "contractualExchange", purposeId: "reseller" }, "contractual"],
      ["alice", { type: "consentedSharing", purposeId: "research", termsId: "research-study-1" }, "consent"],
    ];
    const traceIds: string[] = [];
    for (const [userId, request] of asked) traceIds.push((await call(a, "PUT", "/decision", { userId, ...request })).body.traceId);
    await new Promise((resolve) => setTimeout(resolve, 200));
    for (const [i, traceId] of traceIds.entries()) {
      const trace = traces.find((t) => t.record.traceId === traceId);
      assert.ok(trace, `trace ${i} received`);
      assert.equal(trace.record.flow, asked[i][2]);
      assert.equal(trace.subject, `warden.trace.decision.${asked[i][2]}`);
      assert.equal(trace.record.userId, asked[i][0]);
      assert.ok(Array.isArray(trace.record.reasons) && trace.record.reasons.length > 0);
    }
  });

  test("a consent written through one node changes the next decision made through the other within a second", async () => {
    const question = { userId: "alice", type: "consentedSharing", purposeId: "research", termsId: "research-study-1" };
    assert.equal((await call(b, "PUT", "/decision", question)).body.allowed, false);
    const written = await call(a, "PUT", "/user/consent", {
      userId: "alice",
      consents: { affirmativeConsents: [{ purposeId: "research", termsId: "research-study-1", categoryIds: ["usage"] }] },
    });
    assert.equal(written.status, 200);
    const started = Date.now();
    let answer: Body;
    do {
      answer = (await call(b, "PUT", "/decision", question)).body;
    } while (!answer.allowed && Date.now() - started < 1000);
    assert.equal(answer.allowed, true, `within ${Date.now() - started} ms`);
    assert.deepEqual(answer.categoryIds, ["usage"]);
  });

  test("fields per mapping group, the batch form, and clear errors", async () => {
    const answer = await call(a, "PUT", "/decision", { userId: "bob", type: "platformUse", purposeId: "service", mappingGroup: "users-table" });
    assert.deepEqual(answer.body.fields, { "users.id": false, "users.email": true, "users.login": false, "users.name": false, "users.clicks": false });
    const batch = await call(b, "PUT", "/decision/batch", {
      queries: [
        { userId: "alice", type: "platformUse", purposeId: "service" },
        { userId: "nobody", type: "platformUse", purposeId: "service" },
      ],
    });
    assert.deepEqual(
      batch.body.decisions.map((d: { allowed: boolean }) => d.allowed),
      [true, false],
    );
    assert.equal((await call(a, "PUT", "/decision", { userId: "alice", type: "platformUse", purposeId: "service", mappingGroup: "nope" })).status, 404);
    assert.equal((await call(a, "PUT", "/decision", { userId: "alice", type: "sharing", purposeId: "x" })).body.error.code, "ERR_REQUEST_INVALID");
    const loneSurrogate = await fetch(`${a.url}/user`, { method: "PUT", headers: { "content-type": "application/json" }, body: '{"userId": "x\\ud800"}' });
    assert.equal(loneSurrogate.status, 400, "an id that is not well-formed Unicode would share a key with another");
    assert.equal(((await loneSurrogate.json()) as Body).error.code, "ERR_REQUEST_INVALID");
  });

  test("a guardian the policy no longer counts as an adult (the threshold raised past their age) acts for the child no more", async () => {
    const year = new Date().getUTCFullYear();
    assert.equal((await call(a, "PUT", "/user", { userId: "sis", attributes: { dob: `${year - 17}-01-01`, location: "US" } })).status, 200);
    assert.equal((await call(a, "PUT", "/user", { userId: "kid2", attributes: { dob: childDob, location: "US" } })).status, 200);
    assert.equal((await call(a, "PUT", "/user/terms?userId=kid2&acceptorId=sis")).status, 200, "at 17 sis is an adult under a threshold of 13");
    const consent = {
      userId: "kid2",
      grantorId: "sis",
      consents: { affirmativeConsents: [{ purposeId: "research", termsId: "research-study-1", categoryIds: ["usage"] }] },
    };
    assert.equal((await call(a, "PUT", "/user/consent", consent)).status, 200);
    // A 14-year-old, an adult under a threshold of 13, accepts, opts in and consents themself.
    assert.equal((await call(a, "PUT", "/user", { userId: "teen", attributes: { dob: `${year - 14}-01-01`, location: "US" } })).status, 200);
    assert.equal((await call(a, "PUT", "/user", { userId: "mom", attributes: { dob: "1980-01-01", location: "US" } })).status, 200);
    assert.equal((await call(a, "PUT", "/user/terms?userId=teen")).status, 200);
    const teenOwn = {
      userId: "teen",
      consents: { affirmativeConsents: [{ purposeId: "personalization" }, { purposeId: "research", termsId: "research-study-1" }] },
    };
    assert.equal((await call(a, "PUT", "/user/consent", teenOwn)).status, 200);
    const teenDecides = async (query: Record<string, string>) => (await call(b, "PUT", "/decision", { userId: "teen", ...query })).body;
    assert.equal((await teenDecides({ type: "platformUse", purposeId: "personalization" })).allowed, true, "an adult's own opt-in");
    const raised = { ...realisticPolicy().guardian!, thresholdAge: 18 };
    assert.equal((await call(a, "PUT", "/config/user-access/guardian", raised)).status, 200);
    try {
      // Now a child: their own acceptance counts for nothing, so a guardian must accept again, and the reacceptance check says so.
      assert.equal((await call(b, "GET", "/user/teen/reaccept")).body.reacceptRequired, true);
      assert.equal((await call(a, "PUT", "/user/terms?userId=teen&acceptorId=mom")).status, 200);
      assert.equal((await call(b, "GET", "/user/teen/reaccept")).body.reacceptRequired, false, "accepted by a guardian");
      // What the teen gave themself counts for nothing either (policy-semantics 5).
      for (const query of <Array<Record<string, string>>>[
        { type: "platformUse", purposeId: "personalization" },
        { type: "consentedSharing", purposeId: "research", termsId: "research-study-1" },
      ]) {
        const decision = await teenDecides(query);
        assert.equal(decision.allowed, false, JSON.stringify(decision));
        assert.ok(
          decision.reasons.some((r: { code: string }) => r.code === "CHILD_CONSENTED_WITHOUT_GUARDIAN"),
          JSON.stringify(decision.reasons),
        );
      }
      const refusals = [
        await call(b, "PUT", "/user/consent", consent),
        await call(b, "PUT", "/user/kid2/flows", { guardianId: "sis", purposeId: "ads-sharing", thirdPartyId: "adco", disabled: true }),
        await call(b, "GET", "/user/kid2/report?actorId=sis"),
      ];
      for (const refused of refusals) {
        assert.equal(refused.status, 403, JSON.stringify(refused.body));
        assert.equal(refused.body.error.code, "ERR_USER_GUARDIAN_INVALID");
        assert.match(refused.body.error.message, /no longer known to be an adult/);
      }
      // While the teen is a child, mom turns a flow off.
      assert.equal(
        (await call(a, "PUT", "/user/teen/flows", { guardianId: "mom", purposeId: "ads-sharing", thirdPartyId: "adco", disabled: true })).status,
        200,
      );
    } finally {
      assert.equal((await call(a, "PUT", "/config/user-access/guardian", realisticPolicy().guardian)).status, 200);
    }
    assert.equal((await call(b, "PUT", "/user/consent", consent)).status, 200, "an adult again under the old threshold");
    // An adult again, the teen turns the flow back on themself (not off: that is a guardian's switch), and no one else can.
    const flow = { purposeId: "ads-sharing", thirdPartyId: "adco" };
    assert.equal((await call(a, "PUT", "/user/teen/flows", { guardianId: "mom", ...flow, disabled: false })).status, 403);
    assert.equal((await call(a, "PUT", "/user/teen/flows", { guardianId: "teen", ...flow, disabled: true })).status, 403);
    const turnedOn = await call(a, "PUT", "/user/teen/flows", { guardianId: "teen", ...flow, disabled: false });
    assert.equal(turnedOn.status, 200, JSON.stringify(turnedOn.body));
    assert.deepEqual((await call(b, "GET", "/user/teen")).body.disabledFlows, []);
  });

  test("guardian options, a guardian turning a flow off, revoking a consent, and erasure (audited)", async () => {
    const options = await call(a, "GET", "/user/kid/guardian-options");
    assert.deepEqual(
      options.body.map((o: { thirdPartyId: string }) => o.thirdPartyId),
      ["adco", "geoads"],
    );
    assert.equal(
      (await call(a, "PUT", "/user/kid/flows", { guardianId: "alice", purposeId: "ads-sharing", thirdPartyId: "adco", disabled: true })).status,
      200,
    );
    const notGuardian = await call(a, "PUT", "/user/kid/flows", { guardianId: "bob", purposeId: "ads-sharing", thirdPartyId: "adco", disabled: false });
    assert.equal(notGuardian.body.error.code, "ERR_USER_GUARDIAN_INVALID");
    assert.equal((await call(b, "PUT", "/user/consent/revoke", { userId: "alice", purposeId: "research", termsId: "research-study-1" })).status, 200);

    const erasure = (await call(a, "DELETE", "/user/kid")).body;
    assert.equal(erasure.erased, "kid");
    assert.deepEqual(erasure.unlinked, ["alice"]);
    assert.equal((await call(b, "GET", "/user/kid")).status, 404);
    assert.deepEqual((await call(b, "GET", "/user/alice")).body.children, [], "the guardian's side of the link is gone too");
    assert.ok(
      audits.some((r) => r.event === "guardian.linked" && (r.details as { childId: string }).childId === "kid"),
      "the link was audited when made",
    );
    await new Promise((resolve) => setTimeout(resolve, 200));
    assert.ok(audits.some((r) => r.event === "user.erased" && (r.details as { userId: string }).userId === "kid"));
    const after = await call(b, "PUT", "/decision", { userId: "kid", type: "platformUse", purposeId: "service" });
    assert.equal(after.body.reasons.at(-1).code, "UNKNOWN_USER");
  });
});
