import { test } from "node:test";
import assert from "node:assert/strict";
import type { AccessReport } from "../../api/subject-rights";
import { parseIdentityMapping, userIdOf } from "../../auth/identity-mapping";
import { SecurityConfigError } from "../../auth/types";
import { decisionOf, emptyEntry, fold, foldMessages, recentEvents } from "../../rights/decision-index";
import { reportCsv } from "../../rights/report-csv";

const record = (n: number, extra: Record<string, unknown> = {}) => ({
  traceId: `t${n}`,
  time: `2026-11-2${n % 3}T10:00:00.000Z`,
  door: "decision",
  userId: "ann",
  type: "platformUse",
  purposeId: "service",
  flow: "platform",
  allowed: n % 2 === 0,
  categoryIds: ["contact"],
  ...extra,
});

test("a message folded twice counts once; counts group by day, door and outcome; recent events are bounded", () => {
  const now = new Date("2026-11-24T12:00:00Z");
  const events = [0, 1, 2, 3].map((n) => decisionOf(record(n))!);
  const once = fold(emptyEntry(), 7, events, now);
  assert.equal(fold(once, 7, events, now), once, "the same stream sequence again changes nothing");
  assert.equal(fold(once, 6, events, now), once, "nor an older one");
  const counted = Object.values(once.days)
    .flat()
    .reduce((sum, c) => sum + c.count, 0);
  assert.equal(counted, 4);
  assert.deepEqual(
    once.days["2026-11-20"]!.map((c) => [c.allowed, c.count]),
    [
      [true, 1],
      [false, 1],
    ],
    "records 0 and 3 fall on the 20th, one allowed and one denied",
  );
  let many = once;
  for (let seq = 8; seq < 8 + recentEvents; seq++) many = fold(many, seq, [decisionOf(record(seq))!], now);
  assert.equal(many.recent.length, recentEvents);
  assert.equal(many.recent.at(-1)!.traceId, `t${7 + recentEvents}`, "the newest is kept");
  assert.equal(decisionOf({ kind: "export.connection", exportId: "x" }), undefined, "a connection summary is no decision about a user");
  assert.equal(decisionOf(record(1, { userId: null })), undefined, "nor a record without a user");
});

test("a user's messages folded at once (as the indexer does per batch) give the entry folded message by message, and leave the entry given as it was", () => {
  const now = new Date("2026-11-24T12:00:00Z");
  const messages = Array.from({ length: 40 }, (_, m) => ({
    seq: 10 + m,
    events: Array.from({ length: 1 + (m % 5) }, (_, e) => decisionOf(record(m * 5 + e, { door: m % 3 ? "decision" : "export" }))!),
  }));
  const start = fold(emptyEntry(), 12, messages[0]!.events, now);
  const before = structuredClone(start);
  const oneByOne = messages.reduce((entry, message) => fold(entry, message.seq, message.events, now), start);
  const atOnce = foldMessages(start, messages, now);
  assert.deepEqual(atOnce, oneByOne, "messages up to 12 skipped as folded already, the rest counted alike, the same recent events");
  assert.deepEqual(start, before, "the entry given is not changed (the indexer folds it again when its write loses)");
  assert.equal(foldMessages(atOnce, messages, now), atOnce, "all folded already: the entry itself");
  const few = messages.slice(0, 15);
  assert.deepEqual(
    foldMessages(start, few, now),
    few.reduce((entry, message) => fold(entry, message.seq, message.events, now), start),
    "fewer new events than the recent list holds: the older recent events stay",
  );
});

test("CSV cells: quoted when needed, and an id that looks like a formula is made inert", () => {
  const report = {
    period: { from: "2026-11-01T00:00:00.000Z", to: "2026-11-24T00:00:00.000Z" },
    decisions: {
      byPurposeAndDoor: [{ door: "decision", type: "platformUse", purposeId: '=HYPERLINK("x")', flow: "platform", allowed: 2, denied: 1 }],
      byDay: [],
      latest: { events: [] },
    },
  } as unknown as AccessReport;
  const lines = reportCsv(report).split("\r\n");
  assert.equal(lines[1], 'count,2026-11-01T00:00:00.000Z,decision,,platformUse,"\'=HYPERLINK(""x"")",,,platform,2,1,,');
});

test("the identity mapping: LDAP uid, a named OAuth claim; anything else is no user; bad sections are refused", () => {
  const mapping = parseIdentityMapping({ ldap: { from: "uid" }, oauth: { claim: "email" } });
  assert.equal(userIdOf(mapping, "ldap", { subject: "alice", assertions: [] }), "alice");
  assert.equal(userIdOf(mapping, "oauth", { subject: "sub-1", assertions: [], claims: { email: "ann@example.org" } }), "ann@example.org");
  assert.equal(userIdOf(mapping, "oauth", { subject: "sub-1", assertions: [], claims: { email: ["a", "b"] } }), undefined);
  assert.equal(userIdOf(mapping, "cloud", { subject: "AKID", assertions: [] }), undefined);
  assert.equal(userIdOf(undefined, "ldap", { subject: "alice", assertions: [] }), undefined);
  for (const bad of [[], { ldap: { from: "cn" } }, { oauth: {} }, { saml: {} }])
    assert.throws(() => parseIdentityMapping(bad), SecurityConfigError, JSON.stringify(bad));
});
