import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import type { NatsConnection } from "@nats-io/transport-node";
import type { AuditRecord } from "../../actors/runtime/event-log";
import type { NatsServerProcess } from "../../service/nats-server";
import { realisticPolicy } from "../../testkit/policy";
import { connectTo, startNats } from "../../testkit/nats";
import { call, type Body } from "../../testkit/http";
import { NodeProcess } from "../../testkit/node-process";

const decision = (node: NodeProcess, userId: string, purposeId: string, type = "platformUse", extra: Record<string, string> = {}) =>
  call(node, "PUT", "/decision", { userId, type, purposeId, ...extra });
const redact = (node: NodeProcess, userId: string, purposeId: string) =>
  call(node, "PUT", `/redact/record?purposeId=${purposeId}&type=platformUse&mappingGroup=users-table`, {
    "users.id": userId,
    "users.email": `${userId}@example.com`,
    "users.clicks": "12",
  });
const count = (report: Body, door: string, purposeId: string, outcome: "allowed" | "denied") =>
  (report.decisions.byPurposeAndDoor as Body[]).filter((g) => g.door === door && g.purposeId === purposeId).reduce((sum, g) => sum + g[outcome], 0);

describe("data-subject rights over HTTP, two nodes (issue 25)", () => {
  let nats: NatsServerProcess;
  let a: NodeProcess;
  let b: NodeProcess;
  let nc: NatsConnection;
  /** The node left running after the SIGKILL test. */
  let survivor: NodeProcess;
  const audits: AuditRecord[] = [];
  const childDob = `${new Date().getUTCFullYear() - 9}-01-01`;

  before(async () => {
    nats = await startNats();
    [a, b] = await NodeProcess.startAll(["sr-a", "sr-b"].map((nodeId) => ({ nodeId, natsUrl: nats.url })));
    nc = await connectTo(nats);
    nc.subscribe("warden.audit.user.>", {
      callback: (_error, msg) => {
        audits.push(msg.json<AuditRecord>());
      },
    });
    assert.equal((await call(a, "PUT", "/config", realisticPolicy())).status, 200);
    for (const [userId, attributes] of [
      ["alice", { dob: "1990-01-01", location: "US-NY" }],
      ["gina", { dob: "1980-01-01", location: "US" }],
      ["kid", { dob: childDob, location: "US" }],
    ] as const)
      assert.equal((await call(a, "PUT", "/user", { userId, attributes })).status, 200);
    assert.equal((await call(a, "PUT", "/user/terms?userId=alice")).status, 200);
    assert.equal((await call(a, "PUT", "/user/terms?userId=kid&acceptorId=gina")).status, 200);
    const consent = await call(b, "PUT", "/user/consent", {
      userId: "alice",
      consents: { affirmativeConsents: [{ purposeId: "personalization" }, { purposeId: "research", termsId: "research-study-1" }] },
    });
    assert.equal(consent.status, 200);
  });

  after(async () => {
    await nc?.close();
    await Promise.all([a?.stop(), b?.stop()]);
    await nats?.stop();
  });

  test("the report counts every decision made at /decision and /redact on either node, by purpose and door, and pages the latest", async () => {
    for (const node of [a, a, b]) assert.equal((await decision(node, "alice", "service")).body.allowed, true);
    for (const node of [a, b]) assert.equal((await decision(node, "alice", "personalization")).body.allowed, true);
    assert.equal((await decision(b, "alice", "ads-sharing", "platformSharing", { thirdPartyId: "payco" })).body.allowed, false);
    for (const node of [b, a]) assert.equal((await redact(node, "alice", "service")).status, 200);

    const answer = await call(b, "GET", "/user/alice/report?limit=3");
    assert.equal(answer.status, 200, JSON.stringify(answer.body));
    const report = answer.body;
    assert.equal(report.userId, "alice");
    assert.equal(report.decisions.total, 8);
    assert.equal(count(report, "decision", "service", "allowed"), 3);
    assert.equal(count(report, "decision", "personalization", "allowed"), 2);
    assert.equal(count(report, "decision", "ads-sharing", "denied"), 1);
    assert.equal(count(report, "redact", "service", "allowed"), 2);
    assert.deepEqual(
      report.categories.map((c: Body) => c.categoryId),
      ["contact", "identity"],
    );
    // Fields outside the user-access categories are not listed: usage and location never show.
    for (const event of report.decisions.latest.events) assert.ok(event.categoryIds.every((c: string) => ["contact", "identity"].includes(c)));
    assert.equal(report.decisions.latest.total, 8);
    assert.equal(report.decisions.latest.events.length, 3);
    assert.equal(report.decisions.latest.events[0].door, "redact", "newest first");
    const second = await call(a, "GET", "/user/alice/report?limit=3&offset=3");
    assert.notDeepEqual(
      second.body.decisions.latest.events.map((e: Body) => e.traceId),
      report.decisions.latest.events.map((e: Body) => e.traceId),
    );
    const contactUses = report.uses.find((u: Body) => u.categoryId === "contact").uses.map((u: Body) => u.purposeId);
    assert.ok(contactUses.includes("service") && !contactUses.includes("personalization"), JSON.stringify(contactUses));
    assert.deepEqual(
      report.state.consents.map((c: Body) => [c.purposeId, c.categoryIds]),
      [["research", []]],
      "consents listed, their categories only within user access",
    );
    assert.equal(report.state.terms.accepted, true);
    assert.ok(report.decisions.byDay.some((d: Body) => d.purposeId === "service" && d.allowed === 5));
    assert.ok(audits.some((r) => r.event === "report.read" && (r.details as Body).userId === "alice"));

    const csv = await call(a, "GET", "/user/alice/report?format=csv");
    assert.equal(csv.status, 200);
    const lines = (csv.body as string).trim().split("\r\n");
    assert.equal(lines[0], "section,time,door,exportId,type,purposeId,thirdPartyId,termsId,flow,allowed,denied,categoryIds,traceId");
    assert.ok(lines.some((line) => line.startsWith("count,") && line.includes(",decision,,platformUse,service,,,platform,3,0,")));
    assert.equal(lines.filter((line) => line.startsWith("event,")).length, 8);

    const bad = await call(a, "GET", "/user/alice/report?from=yesterday");
    assert.equal(bad.status, 400);
    assert.equal((await call(a, "GET", "/user/nobody/report")).status, 404);
  });

  test("a guardian reads a linked child's report within the guardian categories only; anyone else is refused", async () => {
    await decision(a, "kid", "service");
    const asGuardian = await call(a, "GET", "/user/kid/report?actorId=gina");
    assert.equal(asGuardian.status, 200, JSON.stringify(asGuardian.body));
    assert.equal(asGuardian.body.guardianId, "gina");
    assert.equal(asGuardian.body.decisions.total, 1);
    const notGuardian = await call(a, "GET", "/user/kid/report?actorId=alice");
    assert.equal(notGuardian.status, 403);
    assert.equal(notGuardian.body.error.code, "ERR_USER_GUARDIAN_INVALID");
    const adult = await call(b, "GET", "/user/alice/report?actorId=gina");
    assert.equal(adult.status, 403);
  });

  test("a guardian acts on the guardian categories only: a consent beyond them is refused and changes nothing", async () => {
    const within = await call(a, "PUT", "/user/consent", {
      userId: "kid",
      grantorId: "gina",
      consents: { affirmativeConsents: [{ purposeId: "research", termsId: "research-study-1", categoryIds: ["usage"] }] },
    });
    assert.equal(within.status, 200, JSON.stringify(within.body));
    const beyond = await call(a, "PUT", "/user/consent", {
      userId: "kid",
      grantorId: "gina",
      consents: { affirmativeConsents: [{ purposeId: "research", termsId: "research-study-1", categoryIds: ["usage", "location"] }] },
    });
    assert.equal(beyond.status, 403);
    assert.equal(beyond.body.error.code, "ERR_USER_GUARDIAN_CATEGORIES");
    assert.deepEqual((await call(b, "GET", "/user/kid")).body.consents, { "research/research-study-1": { categoryIds: ["usage"], grantorId: "gina" } });
    const stranger = await call(a, "PUT", "/user/kid/restriction", { actorId: "alice" });
    assert.equal(stranger.status, 403);
  });

  test("restriction turns opt-ins and consents off in one call; the next decision at every door sees it", async () => {
    assert.equal((await decision(a, "alice", "personalization")).body.allowed, true);
    assert.equal((await decision(b, "alice", "research", "consentedSharing", { termsId: "research-study-1" })).body.allowed, true);
    const restricted = await call(b, "PUT", "/user/alice/restriction", {});
    assert.equal(restricted.status, 200, JSON.stringify(restricted.body));
    assert.deepEqual(restricted.body.restricted.map((r: Body) => r.purposeId).sort(), ["personalization", "research"]);
    for (const node of [a, b]) {
      assert.equal((await decision(node, "alice", "personalization")).body.allowed, false);
      assert.equal((await decision(node, "alice", "research", "consentedSharing", { termsId: "research-study-1" })).body.allowed, false);
    }
    const redacted = await call(a, "PUT", "/redact/record?purposeId=personalization&type=platformUse&mappingGroup=users-table", {
      "users.id": "alice",
      "users.clicks": "1",
    });
    assert.equal(redacted.body.dropped, true);
    assert.ok(audits.some((r) => r.event === "user.restricted" && (r.details as Body).userId === "alice"));

    const byGuardian = await call(a, "PUT", "/user/kid/restriction", { actorId: "gina" });
    assert.equal(byGuardian.status, 200, JSON.stringify(byGuardian.body));
    assert.deepEqual(
      byGuardian.body.restricted.map((r: Body) => r.purposeId),
      ["research"],
    );
    assert.deepEqual(
      byGuardian.body.disabledFlows.map((f: Body) => f.thirdPartyId),
      ["adco", "geoads"],
    );
    const history = (await call(a, "GET", "/user/alice/report")).body.state.consentHistory;
    assert.ok(
      history.some((h: Body) => h.purposeId === "research" && h.categoryIds === null),
      "restriction is recorded as revocations",
    );
  });

  test("after the indexing node is SIGKILLed, every answered decision is in the report", async () => {
    const indexer = [a, b].find((node) => node.logged(/this node indexes the decision trace/))!;
    survivor = indexer === a ? b : a;
    assert.ok(indexer, "one node runs the indexer");
    const before = (await call(survivor, "GET", "/user/alice/report")).body.decisions.total;
    const answered = await Promise.all(Array.from({ length: 40 }, () => decision(indexer, "alice", "service")));
    assert.ok(answered.every((r) => r.status === 200));
    await indexer.kill();
    const more = await Promise.all(Array.from({ length: 10 }, () => decision(survivor, "alice", "service")));
    assert.ok(more.every((r) => r.status === 200));
    const report = await call(survivor, "GET", "/user/alice/report");
    assert.equal(report.status, 200, JSON.stringify(report.body));
    assert.equal(report.body.decisions.total, before + 50);
    assert.ok(survivor.logged(/this node indexes the decision trace/), "the survivor took over the indexer");
  });

  test("erasure says what went and what stays; the erased past does not come back", async () => {
    const erased = await call(survivor, "DELETE", "/user/alice");
    assert.equal(erased.status, 200, JSON.stringify(erased.body));
    assert.equal(erased.body.erased, "alice");
    assert.deepEqual(
      erased.body.kept.map((k: Body) => k.where),
      ["stream WARDEN_TRACE", "stream WARDEN_AUDIT"],
    );
    assert.equal((await call(survivor, "GET", "/user/alice/report")).status, 404);
    assert.equal((await call(survivor, "PUT", "/user", { userId: "alice" })).status, 200);
    assert.equal((await call(survivor, "GET", "/user/alice/report")).body.decisions.total, 0);
  });
});
