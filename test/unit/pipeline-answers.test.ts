import { test } from "node:test";
import assert from "node:assert/strict";
import { correlationId, maxCorrelationIdBytes } from "../../proxies/pipeline/pipeline-stream";
import { nestsDeeperThan, planRecords, userIdOf } from "../../decision/record-redaction";
import { compilePolicy } from "../../decision/compiled-policy";
import { encodedAnswer } from "../../proxies/pipeline/nats-answer";
import { realisticPolicy } from "../../testkit/policy";
import { PipelineRedactor } from "../../proxies/pipeline/pipeline-redactor";
import type { ExportDecider } from "../../exports/export-decider";
import type { Decision } from "../../decision/types";
import { nestedIdsGroup } from "../fixtures/user-id-groups";

test("an answer that would not fit in a NATS message becomes a refusal that carries none of the record's values", () => {
  const answer = {
    dropped: false as const,
    record: { "users.email": "secret@example.com".repeat(100) },
    advice: [{ id: "urn:service:attribute:message:summary" as const, value: "Kept." }] as [never],
  };
  assert.equal(encodedAnswer(answer, 1024 * 1024).toString("utf8"), JSON.stringify(answer), "small enough: sent as it is");
  const refused = JSON.parse(encodedAnswer(answer, 2048).toString("utf8")) as { dropped: boolean; error: { code: string; message: string } };
  assert.equal(refused.dropped, true);
  assert.equal(refused.error.code, "ERR_PIPELINE_RECORD_INVALID");
  assert.match(refused.error.message, /larger than the NATS server's max_payload \(2048 bytes\)/);
  assert.ok(!JSON.stringify(refused).includes("secret@example.com"));
});

test("nesting is measured without recursion, arrays and objects alike", () => {
  let value: unknown = 1;
  for (let level = 0; level < 32; level++) value = level % 2 ? { a: value } : [value];
  assert.equal(nestsDeeperThan(value, 32), false, "32 levels are allowed");
  assert.equal(nestsDeeperThan([value], 32), true, "33 are not");
  let deep: unknown = null;
  for (let level = 0; level < 200_000; level++) deep = [deep];
  assert.equal(nestsDeeperThan(deep, 32), true, "a pathological value does not overflow the stack");
});

test("a resource-context value names a user only if a user id could be it: at most 200 characters, no control characters", () => {
  const compiled = compilePolicy(realisticPolicy(), 1);
  const plan = planRecords(compiled, compiled.config.mappingGroups.find((g) => g.name === "users-table")!);
  assert.equal(userIdOf({ "users.id": "u".repeat(200) }, plan), "u".repeat(200));
  assert.equal(userIdOf({ "users.id": "u".repeat(201) }, plan), undefined);
  assert.equal(userIdOf({ "users.id": "a\nb" }, plan), undefined);
  assert.equal(userIdOf({ "users.id": 42 }, plan), "42");
});

test("an input's Nats-Msg-Id is copied onto its answer only up to 256 bytes: a longer one would leave the answer too large to publish", () => {
  assert.equal(correlationId("order-17"), "order-17");
  assert.equal(correlationId("x".repeat(maxCorrelationIdBytes)), "x".repeat(maxCorrelationIdBytes));
  assert.equal(correlationId("x".repeat(maxCorrelationIdBytes + 1)), undefined);
  assert.equal(correlationId("é".repeat(129)), undefined, "bytes, not characters");
  assert.equal(correlationId(undefined), undefined);
  // What fits: an answer at the edge of max_payload plus the headers the stream sets must stay under it.
  const headersBytes = "Warden-Input-Seq: 18446744073709551615\r\nWarden-Input-Msg-Id: \r\nNats-Msg-Id: \r\n".length + maxCorrelationIdBytes + 36 + 21;
  assert.ok(headersBytes < 1024, `${headersBytes} bytes of headers fit the room kept for them`);
});

test("pipeline records: the user is found as the record is walked, the first user-id value decides, a field reached two ways is refused undecided", async () => {
  const compiled = compilePolicy(realisticPolicy(), 1);
  const plan = planRecords(compiled, nestedIdsGroup);
  const loaded: string[] = [];
  const decisionOf = (userId: string): Decision =>
    userId === "me"
      ? { allowed: true, flow: "platform", categoryIds: ["contact"], reasons: [], summary: "Kept.", revision: 1 }
      : {
          allowed: false,
          flow: "platform",
          categoryIds: [],
          reasons: [{ code: "UNKNOWN_USER", text: "unknown" }],
          summary: "Dropped: unknown user.",
          revision: 1,
        };
  const decider = {
    hasPolicy: () => true,
    warm: async () => undefined,
    recordPlan: () => plan,
    decision: () => undefined,
    // The real decider decides and traces here: a refused record's user must never reach it.
    load: async (userIds: readonly string[]) => {
      loaded.push(...userIds);
      return new Map(userIds.map((userId) => [userId, decisionOf(userId)]));
    },
    traceUndecided: async (dropped: Record<string, number>) => void undecided.push(dropped),
  } as unknown as ExportDecider;
  const undecided: Array<Record<string, number>> = [];
  const answers = await new PipelineRedactor(decider, "nested-ids").redactAll([
    { "a.b": { id: "victim", email: "victim-secret@x" }, author: "me" },
    JSON.parse('{"a": {"b": {"id": 12345678901234567890, "email": "patient-secret@x"}}, "author": "me"}'),
    { "a.b": { id: true, email: "bool-secret@x" }, author: "me" },
    { "a.b": { email: "x@x" }, a: { b: { email: "y@x" } }, author: "refused-user" },
    { "a.b": { id: "", email: "mine@x" }, author: "me" },
  ]);
  assert.deepEqual(loaded.sort(), ["me", "victim"], "the refused record's user was never decided");
  assert.deepEqual(
    answers.map((answer) => (answer.dropped ? ("error" in answer ? answer.error.code : "dropped") : answer.record)),
    ["dropped", "dropped", "dropped", "ERR_PIPELINE_RECORD_INVALID", { "a.b": { id: null, email: "mine@x" }, author: null }],
  );
  assert.ok(!JSON.stringify(answers).includes("secret"));
  // Two records named no user (a number no user id can be, true): dropped with their reason in one trace record, before the answers.
  assert.deepEqual(undecided, [{ NO_USER_ID: 2 }]);
});

test("pipeline records dropped without a decision are traced by reason before they are answered; a trace that cannot be stored answers nothing", async () => {
  const compiled = compilePolicy(realisticPolicy(), 1);
  const plan = planRecords(compiled, compiled.config.mappingGroups.find((g) => g.name === "users-table")!);
  let storing = true;
  const traced: Array<Record<string, number>> = [];
  const decider = {
    hasPolicy: () => true,
    warm: async () => undefined,
    recordPlan: () => plan,
    decision: () => undefined,
    load: async () => new Map(),
    traceUndecided: async (dropped: Record<string, number>) => {
      if (!storing) throw new Error("JetStream did not store the trace records");
      traced.push(dropped);
    },
  } as unknown as ExportDecider;
  const redactor = new PipelineRedactor(decider, "users-table");
  const answers = await redactor.redactAll([{ "users.email": "a@x" }, { "users.id": "" }]);
  assert.ok(answers.every((answer) => answer.dropped));
  assert.deepEqual(traced, [{ NO_USER_ID: 2 }]);
  storing = false;
  await assert.rejects(redactor.redactAll([{ "users.email": "b@x" }]), /did not store/);
});
