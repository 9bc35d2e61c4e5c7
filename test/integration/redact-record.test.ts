import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { connect } from "@nats-io/transport-node";
import { compilePolicy } from "../../decision/compiled-policy";
import { decide } from "../../decision/engine";
import type { NatsServerProcess } from "../../service/nats-server";
import { realisticPolicy } from "../../testkit/policy";
import { createPopulation, populationIds } from "../fixtures/population";
import { nestedIdsGroup, twoIdsGroup } from "../fixtures/user-id-groups";
import { startNats } from "../../testkit/nats";
import { call as request } from "../../testkit/http";
import { NodeProcess } from "../../testkit/node-process";

describe("PUT /redact/record", () => {
  let nats: NatsServerProcess;
  let node: NodeProcess;
  const call = (method: string, path: string, body?: unknown) => request(node, method, path, body);

  before(async () => {
    nats = await startNats();
    node = await NodeProcess.start({ nodeId: "redact-1", natsUrl: nats.url });
    assert.equal((await call("PUT", "/config", realisticPolicy())).status, 200);
    await createPopulation(call);
  });

  after(async () => {
    await node?.stop();
    await nats?.stop();
  });

  test("a mixed population, record by record, against the decision engine", async () => {
    const revision = Number((await fetch(`${node.url}/config`)).headers.get("x-config-revision"));
    const compiled = compilePolicy(realisticPolicy(), revision);
    const categoryOf: Record<string, string | undefined> = {
      "users.email": "contact",
      "users.login": "credentials",
      "users.name": "identity",
      "users.clicks": "usage",
    };
    for (const purposeId of ["service", "analytics"]) {
      for (const userId of populationIds) {
        const record = {
          "users.id": userId,
          "users.email": `${userId}@example.com`,
          "users.login": `login-${userId}`,
          "users.name": `Name ${userId}`,
          "users.clicks": 7.25,
          "users.secret": "s3cret",
        };
        const answer = await call("PUT", `/redact/record?purposeId=${purposeId}&type=platformUse&mappingGroup=users-table`, record);
        assert.equal(answer.status, 200);
        const stored = userId ? await call("GET", `/user/${userId}`) : { status: 404, body: undefined };
        const decision = userId ? decide(compiled, stored.status === 200 ? stored.body : undefined, { type: "platformUse", purposeId }, new Date()) : undefined;
        const what = `${purposeId} / ${userId || "(empty id)"}`;
        assert.equal(answer.body.advice[0].id, "urn:service:attribute:message:summary", what);
        if (!decision?.allowed) {
          assert.equal(answer.body.dropped, true, what);
          assert.equal(answer.body.record, undefined, what);
          assert.equal(answer.body.advice[0].value, decision ? decision.summary : "Dropped: the record names no user (mapping group 'users-table').", what);
          for (const value of Object.values(record))
            if (value !== "") assert.ok(!JSON.stringify(answer.body).includes(String(value)), `${what}: no value of the dropped record (${value})`);
          continue;
        }
        assert.equal(answer.body.dropped, false, what);
        const expected = Object.fromEntries(
          Object.entries(record).map(([field, value]) => [field, categoryOf[field] && decision.categoryIds.includes(categoryOf[field]!) ? value : null]),
        );
        assert.deepEqual(answer.body.record, expected, what);
        const emptied = Object.keys(record).filter((field) => expected[field] === null);
        assert.ok(answer.body.advice[0].value.startsWith(decision.summary.replace(/\.$/, "")), `${what}: the advice opens with the decision's reason`);
        for (const field of emptied) assert.ok(answer.body.advice[0].value.includes(field), `${what}: the advice names emptied field ${field}`);
      }
    }
  });

  test("an unknown purpose, mapping group or type is a 4xx before any work; the service stays healthy", async () => {
    const record = { "users.id": "accepted" };
    const cases: Array<[string, number, string]> = [
      ["purposeId=mining&type=platformUse&mappingGroup=users-table", 400, "ERR_REDACT_INVALID"],
      ["purposeId=service&type=platformUse&mappingGroup=nope", 400, "ERR_REDACT_INVALID"],
      ["purposeId=service&type=sharing&mappingGroup=users-table", 400, "ERR_REQUEST_INVALID"],
      ["purposeId=service&type=platformUse", 400, "ERR_REQUEST_INVALID"],
    ];
    for (const [query, status, code] of cases) {
      const answer = await call("PUT", `/redact/record?${query}`, record);
      assert.equal(answer.status, status, query);
      assert.equal(answer.body.error.code, code, query);
    }
    const notObject = await fetch(`${node.url}/redact/record?purposeId=service&type=platformUse&mappingGroup=users-table`, {
      method: "PUT",
      headers: { "content-type": "application/json" },
      body: "[1,2]",
    });
    assert.equal(notObject.status, 400);
    // Nesting past 32 levels is refused before the user is decided, as the pipeline doors refuse it (under a mapped
    // object it was kept whole, and thousands of levels failed only when the answer was written, after the trace).
    for (const levels of [33, 5000]) {
      const deep = `${'{"a":'.repeat(levels)}1${"}".repeat(levels)}`;
      const answer = await fetch(`${node.url}/redact/record?purposeId=service&type=platformUse&mappingGroup=users-table`, {
        method: "PUT",
        headers: { "content-type": "application/json" },
        body: `{"users.id":"accepted","users.name":${deep}}`,
      });
      assert.equal(answer.status, 400, `${levels} levels`);
      const body = (await answer.json()) as { error: { code: string; message: string } };
      assert.deepEqual([body.error.code, /nests deeper than 32 levels/.test(body.error.message)], ["ERR_REDACT_RECORD_INVALID", true], `${levels} levels`);
    }
    assert.equal(
      (
        await call("PUT", "/redact/record?purposeId=service&type=platformUse&mappingGroup=users-table", {
          "users.id": "accepted",
          "users.name": { a: { b: 1 } },
        })
      ).status,
      200,
    );
    assert.equal((await call("GET", "/readyz")).status, 200);
  });

  test("whose value a value is: the user id is read where the redaction reads its e-mail; the first user-id value decides; a field reached two ways is refused untraced", async () => {
    for (const group of [nestedIdsGroup, twoIdsGroup]) assert.equal((await call("PUT", "/mapping/groups", group)).status, 200, group.name);
    const redact = async (group: string, body: string) => {
      const answer = await fetch(`${node.url}/redact/record?purposeId=service&type=platformUse&mappingGroup=${group}`, {
        method: "PUT",
        headers: { "content-type": "application/json" },
        body,
      });
      return { status: answer.status, text: await answer.text() };
    };
    // The control: a record of the accepted user keeps its e-mail.
    const control = await redact("nested-ids", '{"a.b":{"email":"accepted-own@example.com"},"author":"accepted"}');
    assert.equal(control.status, 200);
    assert.ok(control.text.includes("accepted-own@example.com"), control.text);

    // Key "a.b" then "id": the e-mail beside it is unknown-user's, decided under unknown-user (dropped), not the author's.
    for (const body of [
      '{"a.b":{"id":"unknown-user","email":"victim-secret@example.com"},"author":"accepted"}',
      '{"a":{"b":{"id":"unknown-user","email":"victim-secret@example.com"}},"author":"accepted"}',
    ]) {
      const answer = await redact("nested-ids", body);
      assert.equal(answer.status, 200, body);
      assert.equal(JSON.parse(answer.text).dropped, true, body);
      assert.ok(!answer.text.includes("victim-secret"), answer.text);
    }
    // A first user-id value that cannot name a user drops the record; the author is not consulted.
    for (const first of ["12345678901234567890", "1.5", "true", '{"id":"x"}', '"bad\\u0001id"']) {
      const answer = await redact("two-ids", `{"patient":${first},"author":"accepted","email":"patient-secret@example.com"}`);
      assert.equal(answer.status, 200, first);
      assert.deepEqual([JSON.parse(answer.text).dropped, answer.text.includes("patient-secret")], [true, false], `patient ${first}: ${answer.text}`);
    }

    // A field reached two ways: 400, and no decision traced for it (the shape is checked before deciding).
    const nc = await connect({ servers: nats.url });
    try {
      const traced: string[] = [];
      const subscription = nc.subscribe("warden.trace.redact.>", { callback: (_error, message) => void traced.push(message.string()) });
      await nc.flush();
      const marker = `shape-${Date.now()}`;
      assert.equal((await call("PUT", "/user", { userId: marker, attributes: { dob: "1990-01-01", location: "US" } })).status, 200);
      // Allowed, so the record would be redacted: the refusal must not come only then, after the decision was traced.
      assert.equal((await call("PUT", `/user/terms?userId=${marker}`)).status, 200);
      for (const body of [
        `{"a.b":{"email":"x@example.com"},"a":{"b":{"email":"y@example.com"}},"author":"${marker}"}`,
        `{"a":{"b":{"id":"${marker}","email":"y@example.com"}},"a.b":{"id":"accepted"}}`,
      ]) {
        const refused = await redact("nested-ids", body);
        assert.equal(refused.status, 400, body);
        assert.equal(JSON.parse(refused.text).error.code, "ERR_REDACT_RECORD_INVALID");
        assert.match(JSON.parse(refused.text).error.message, /the field 'a\.b' twice/);
      }
      // A record that is answered is traced before its answer: once the marker's is seen, the refused ones would have been too.
      const answered = await redact("nested-ids", `{"author":"${marker}","a.b":{"email":"marker@example.com"}}`);
      assert.deepEqual([answered.status, answered.text.includes("marker@example.com")], [200, true], answered.text);
      const deadline = Date.now() + 5000;
      while (!traced.some((text) => text.includes(marker)) && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50));
      await nc.flush();
      const records = traced.flatMap((text) => text.split("\n")).filter((line) => line.includes(marker));
      assert.equal(records.length, 1, `only the answered record's decision: ${records.join("\n")}`);
      subscription.unsubscribe();
    } finally {
      await nc.close();
    }
  });
});
