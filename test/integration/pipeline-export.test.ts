import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { DeliverPolicy, jetstream, jetstreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import type { AuditRecord } from "../../actors/runtime/event-log";
import type { NatsServerProcess } from "../../service/nats-server";
import { realisticPolicy } from "../../testkit/policy";
import { createPopulation, populationIds } from "../fixtures/population";
import { call as request, type Body } from "../../testkit/http";
import { connectTo, startNats, storedMessages } from "../../testkit/nats";
import { NodeProcess } from "../../testkit/node-process";
import { freePorts } from "../../testkit/ports";
import { listening, until } from "../../testkit/wait";

const cluster = { HEARTBEAT_MS: "1000", LEASE_TTL_MS: "4000" };
const advice = "urn:service:attribute:message:summary";

/** A record of the users-table mapping group for a user: every field the mapping knows, and one it does not. */
const recordOf = (userId: string, n = 0) => ({
  "users.id": userId,
  "users.email": `${userId}${n}@example.com`,
  "users.login": `login-${userId}`,
  "users.name": `Name ${userId}`,
  "users.clicks": n,
  "users.secret": `s3cret-${n}`,
});

/** What a pipeline answer must say, from PUT /redact/record for the same record. */
interface Expected {
  dropped: boolean;
  record?: Record<string, unknown>;
  advice: string;
}

function assertSame(answer: Body, expected: Expected, what: string): void {
  assert.equal(answer.dropped, expected.dropped, what);
  assert.equal(answer.advice.length, 1, what);
  assert.equal(answer.advice[0].id, advice, what);
  assert.equal(answer.advice[0].value, expected.advice, what);
  if (expected.dropped) assert.equal(answer.record, undefined, `${what}: a dropped record answers no values`);
  else assert.deepEqual(answer.record, expected.record, what);
}

describe("pipeline exports (spec 4.4 rule 5)", () => {
  let nats: NatsServerProcess;
  let nodes: NodeProcess[] = [];
  let nc: NatsConnection;
  let ports: number[];
  const dead = new Set<NodeProcess>();
  const live = () => nodes.find((n) => !dead.has(n))!;
  const call = (method: string, path: string, body?: unknown) => request(live(), method, path, body);
  const pipelineBody = (extra: Record<string, unknown> = {}) => ({
    type: "pipeline",
    resolverGroup: "users-table",
    metadata: { type: "platformUse", purposeId: "service" },
    ...extra,
  });
  const expectations = new Map<string, Expected>();

  const expectedFor = async (record: Record<string, unknown>): Promise<Expected> => {
    const key = JSON.stringify(record);
    let expected = expectations.get(key);
    if (!expected) {
      const answer = await call("PUT", "/redact/record?purposeId=service&type=platformUse&mappingGroup=users-table", record);
      assert.equal(answer.status, 200);
      expected = { dropped: answer.body.dropped, record: answer.body.record, advice: answer.body.advice[0].value };
      expectations.set(key, expected);
    }
    return expected;
  };

  const post = async (port: number, body: string, contentType: string) => {
    const response = await fetch(`http://127.0.0.1:${port}/`, { method: "POST", headers: { "content-type": contentType }, body });
    return { status: response.status, type: response.headers.get("content-type"), text: await response.text() };
  };

  before(async () => {
    nats = await startNats();
    ports = await freePorts(4);
    nodes = await NodeProcess.startAll(
      ["pipe-1", "pipe-2"].map((nodeId) => ({ nodeId, natsUrl: nats.url, env: { ...cluster, EXPORT_PORTS: `${ports[3]}-${ports[3]}` } })),
    );
    assert.equal((await call("PUT", "/config", realisticPolicy())).status, 200);
    await createPopulation(call);
    nc = await connectTo(nats.url);
  });

  after(async () => {
    await nc?.close();
    await Promise.all(nodes.filter((n) => !dead.has(n)).map((n) => n.kill()));
    await nats?.stop();
  });

  test("lifecycle: create (subjects and port shown), list, stop (port and subjects closed), start, delete; bad bodies change nothing", async () => {
    const refused: Array<[Record<string, unknown>, string]> = [
      [pipelineBody({ endpoint: "127.0.0.1:5432" }), "endpoint"],
      [pipelineBody({ credentials: { user: "u", password: "p" } }), "credentials"],
      // Fields of other export types: refused by the pipeline door's allow-list, not stored and ignored.
      [pipelineBody({ pushdown: true }), "pushdown"],
      [pipelineBody({ formats: { ".data": "csv" } }), "formats"],
      [pipelineBody({ resolverGroup: "nope" }), "resolverGroup"],
      [{ type: "postgres", resolverGroup: "users-table", metadata: { type: "platformUse", purposeId: "service" } }, "endpoint"],
    ];
    for (const [body, path] of refused) {
      const answer = await call("PUT", "/export", body);
      assert.equal(answer.status, 400, JSON.stringify(answer.body));
      assert.equal(answer.body.error.code, "ERR_EXPORT_INVALID");
      assert.equal(answer.body.error.details[0].path, path);
    }
    assert.deepEqual((await call("GET", "/export")).body.exports, [], "nothing was created by a refused body");

    const created = await call("PUT", "/export", pipelineBody({ port: ports[0] }));
    assert.equal(created.status, 200, JSON.stringify(created.body));
    const id: string = created.body.id;
    assert.equal(created.body.type, "pipeline");
    assert.equal(created.body.endpoint, undefined);
    assert.deepEqual(created.body.subjects, {
      request: `warden.pipeline.${id}.request`,
      input: `warden.pipeline.${id}.in`,
      output: `warden.pipeline.${id}.out`,
    });
    await until("the HTTP port answers", () => listening(ports[0]!));
    const one = await post(ports[0]!, JSON.stringify(recordOf("accepted")), "application/json");
    assert.equal(one.status, 200, one.text);
    const listed = (await call("GET", "/export")).body.exports.find((e: { id: string }) => e.id === id);
    assert.equal(listed.status, "active");
    assert.equal(listed.serving.rows.in, 1);
    assert.equal(listed.serving.rows.kept, 1);

    assert.equal((await call("PUT", `/export/stop?id=${id}`)).body.status, "inactive");
    await until("the HTTP port closes", async () => !(await listening(ports[0]!)));
    await assert.rejects(
      nc.request(`warden.pipeline.${id}.request`, JSON.stringify(recordOf("accepted")), { timeout: 1000 }),
      "no node answers a stopped export's requests",
    );
    assert.equal((await call("PUT", `/export/start?id=${id}`)).body.status, "active");
    await until("the HTTP port opens again", () => listening(ports[0]!));
    const reply = await nc.request(`warden.pipeline.${id}.request`, JSON.stringify(recordOf("accepted")), { timeout: 5000 });
    assert.equal(reply.json<Body>().dropped, false);

    assert.equal((await call("DELETE", `/export?id=${id}`)).status, 200);
    await until("the HTTP port closes for good", async () => !(await listening(ports[0]!)));
    assert.equal((await call("GET", `/export?id=${id}`)).status, 404);
  });

  test("HTTP (one record, NDJSON), NATS request/reply and NATS streaming answer what PUT /redact/record answers, with the advice naming the reason", async () => {
    const created = await call("PUT", "/export", pipelineBody({ port: ports[1] }));
    assert.equal(created.status, 200);
    const id: string = created.body.id;
    await until("the HTTP port answers", () => listening(ports[1]!));
    const records = populationIds.map((userId, n) => recordOf(userId, n));
    records.push({ "users.email": "nobody@example.com" } as never, { "users.id": "accepted", "users.name": { nested: "object" } } as never);
    const expected = await Promise.all(records.map((record) => expectedFor(record)));
    assert.ok(expected.some((e) => e.dropped) && expected.some((e) => !e.dropped), "the population has kept and dropped records");
    assert.ok(
      expected.some((e) => !e.dropped && /; emptied .*users\.secret \(not in the mapping group\)/.test(e.advice)),
      `the advice of a kept record names the emptied fields and why: ${JSON.stringify(expected)}`,
    );

    for (const [index, record] of records.entries()) {
      const single = await post(ports[1]!, JSON.stringify(record), "application/json");
      assert.equal(single.status, 200, single.text);
      assertSame(JSON.parse(single.text), expected[index]!, `HTTP record ${index}`);
      const reply = await nc.request(`warden.pipeline.${id}.request`, JSON.stringify(record), { timeout: 5000 });
      assertSame(reply.json<Body>(), expected[index]!, `NATS request ${index}`);
    }

    // The node answers with its own rights: a reply subject that is no inbox gets nothing, or a requester allowed only to
    // publish requests would have the node purge streams ($JS.API.STREAM.PURGE...) or publish on the export's .out.
    const jsm = await jetstreamManager(nc);
    const auditBefore = (await jsm.streams.info("WARDEN_AUDIT")).state.messages;
    assert.ok(auditBefore > 0);
    const victim = nc.subscribe("victim.subject");
    const delivered: string[] = [];
    void (async () => {
      for await (const message of victim) delivered.push(message.string());
    })();
    for (const reply of ["$JS.API.STREAM.PURGE.WARDEN_AUDIT", "victim.subject", `warden.pipeline.${id}.out`])
      nc.publish(`warden.pipeline.${id}.request`, JSON.stringify(records[0]), { reply });
    const answered = await nc.request(`warden.pipeline.${id}.request`, JSON.stringify(records[0]), { timeout: 5000 });
    assertSame(answered.json<Body>(), expected[0]!, "an _INBOX reply is answered");
    await new Promise((resolve) => setTimeout(resolve, 300));
    victim.unsubscribe();
    assert.deepEqual(delivered, [], "nothing published on a reply subject that is no inbox");
    assert.ok((await jsm.streams.info("WARDEN_AUDIT")).state.messages >= auditBefore, "the audit stream was not purged");
    await until("the refusal is audited", async () =>
      (await storedMessages<AuditRecord>(nc, "WARDEN_AUDIT")).some((m) => m.data.event === "request.refused" && m.data.details?.exportId === id),
    );

    // NDJSON: one answer per line, in order; a line that is not JSON is refused in its place, the others go on.
    const lines = records.map((record) => JSON.stringify(record));
    lines.splice(3, 0, "{not json");
    const stream = await post(ports[1]!, `${lines.join("\n")}\n`, "application/x-ndjson");
    assert.equal(stream.status, 200);
    assert.equal(stream.type, "application/x-ndjson");
    const answers = stream.text
      .trimEnd()
      .split("\n")
      .map((line) => JSON.parse(line) as Body);
    assert.equal(answers.length, records.length + 1);
    assert.deepEqual(answers[3], {
      dropped: true,
      error: { code: "ERR_PIPELINE_RECORD_INVALID", message: "line 4 is not JSON" },
      advice: [{ id: advice, value: "Refused: line 4 is not JSON." }],
    });
    answers.splice(3, 1);
    answers.forEach((answer, index) => assertSame(answer, expected[index]!, `NDJSON line ${index}`));

    const badType = await post(ports[1]!, "a,b\n", "text/csv");
    assert.equal(badType.status, 415);
    const notObject = await post(ports[1]!, "[1,2]", "application/json");
    assert.equal(notObject.status, 400);
    assert.equal(JSON.parse(notObject.text).error.code, "ERR_PIPELINE_RECORD_INVALID");

    // Hostile records: nested too deep, a user id no user can have (an answer too large for NATS: test/unit/pipeline-answers).
    let deep: unknown = "bottom";
    for (let level = 0; level < 40; level++) deep = { level: deep };
    const tooDeep = await nc.request(`warden.pipeline.${id}.request`, JSON.stringify({ ...recordOf("accepted"), "users.name": deep }), { timeout: 5000 });
    assert.deepEqual(tooDeep.json<Body>().error, { code: "ERR_PIPELINE_RECORD_INVALID", message: "the record nests deeper than 32 levels" });
    const longId = await post(ports[1]!, JSON.stringify(recordOf("a".repeat(5000))), "application/json");
    assert.equal(JSON.parse(longId.text).advice[0].value, "Dropped: the record names no user (mapping group 'users-table').");
    const stillServing = await nc.request(`warden.pipeline.${id}.request`, JSON.stringify(records[0]), { timeout: 5000 });
    assertSame(stillServing.json<Body>(), expected[0]!, "the node still answers after the hostile records");

    // Streaming: published to the input subject, answered on the output subject in order.
    const js = jetstream(nc);
    for (const record of records) await js.publish(`warden.pipeline.${id}.in`, JSON.stringify(record));
    await js.publish(`warden.pipeline.${id}.in`, "{not json");
    const consumer = await js.consumers.get("WARDEN_PIPELINE_OUT", { filter_subjects: `warden.pipeline.${id}.out`, deliver_policy: DeliverPolicy.All });
    const streamed: Body[] = [];
    const seqs: number[] = [];
    const messages = await consumer.consume();
    const timeout = setTimeout(() => messages.stop(), 20_000);
    for await (const msg of messages) {
      streamed.push(msg.json<Body>());
      seqs.push(Number(msg.headers?.get("Warden-Input-Seq")));
      if (streamed.length === records.length + 1) break;
    }
    clearTimeout(timeout);
    assert.equal(streamed.length, records.length + 1, "every published record is answered");
    assert.deepEqual(
      seqs,
      [...seqs].sort((a, b) => a - b),
      "answers in input order",
    );
    assert.equal(streamed[records.length].error.code, "ERR_PIPELINE_RECORD_INVALID");
    streamed.slice(0, records.length).forEach((answer, index) => assertSame(answer, expected[index]!, `streamed record ${index}`));

    // Audit (spec 6): the export's port and subjects, in the category pipeline.
    const audit = (await storedMessages<AuditRecord>(nc, "WARDEN_AUDIT", "warden.audit.pipeline.>")).filter(
      (m) => (m.data.details as { exportId?: string } | undefined)?.exportId === id,
    );
    assert.ok(audit.some((m) => m.data.event === "port.opened" && m.subject === "warden.audit.pipeline.info"));
    assert.ok(audit.some((m) => m.data.event === "subjects.opened" && m.subject === "warden.audit.pipeline.info"));
    assert.ok(audit.some((m) => m.data.event === "connection.unauthenticated" && m.subject === "warden.audit.pipeline.debug"));
    await call("DELETE", `/export?id=${id}`);
  });

  test("streaming through a SIGKILL of the serving node: every published record is answered exactly once, in order", async () => {
    const created = await call("PUT", "/export", pipelineBody({ port: ports[2] }));
    assert.equal(created.status, 200);
    const id: string = created.body.id;
    const js = jetstream(nc);
    const total = 6000;
    const users = populationIds.filter((userId) => userId !== "");
    const recordAt = (n: number) => recordOf(users[n % users.length]!, n);
    const expected = await Promise.all(users.map((userId) => expectedFor(recordOf(userId, 0))));

    const serving = async () => (await call("GET", `/export?id=${id}`)).body.serving?.nodeId as string | undefined;
    await until("a node serves the export", async () => (await serving()) !== undefined);
    const publishing = (async () => {
      for (let n = 0; n < total; n += 100) {
        await Promise.all(
          Array.from({ length: Math.min(100, total - n) }, (_, i) =>
            js.publish(`warden.pipeline.${id}.in`, JSON.stringify(recordAt(n + i)), { msgID: `record-${n + i}` }),
          ),
        );
      }
    })();
    const jsm = await jetstreamManager(nc);
    const answered = async () =>
      (await jsm.streams.info("WARDEN_PIPELINE_OUT", { subjects_filter: `warden.pipeline.${id}.out` })).state.subjects?.[`warden.pipeline.${id}.out`] ?? 0;
    await until("some records are answered", async () => (await answered()) > 200);
    const servingNode = await serving();
    const killed = nodes.find((n) => n.nodeId === servingNode);
    assert.ok(killed, `the serving node ${servingNode} is one of the test's`);
    await killed.kill();
    dead.add(killed);
    await publishing;
    await until("every record is answered after the failover", async () => (await answered()) >= total, 60_000);

    const out = await storedMessages<Body>(nc, "WARDEN_PIPELINE_OUT", `warden.pipeline.${id}.out`);
    assert.equal(out.length, total, "exactly one answer per published record");
    const consumer = await js.consumers.get("WARDEN_PIPELINE_OUT", { filter_subjects: `warden.pipeline.${id}.out`, deliver_policy: DeliverPolicy.All });
    const inputIds: string[] = [];
    const messages = await consumer.consume();
    for await (const msg of messages) {
      inputIds.push(msg.headers?.get("Warden-Input-Msg-Id") ?? "");
      if (inputIds.length === total) break;
    }
    assert.deepEqual(
      inputIds,
      Array.from({ length: total }, (_, n) => `record-${n}`),
      "each record once, in the order published",
    );
    out.forEach(({ data }, n) => {
      const base = expected[n % users.length]!;
      const record = recordAt(n);
      const want: Expected = base.dropped
        ? base
        : {
            ...base,
            record: Object.fromEntries(
              Object.entries(base.record!).map(([field, value]) => [field, value === null ? null : (record as Record<string, unknown>)[field]]),
            ),
          };
      assertSame(data, want, `record ${n}`);
    });
    assert.notEqual(await serving(), killed.nodeId, "the surviving node serves the export");

    // Every node down: records published meanwhile wait in JetStream; the next node answers them, once.
    const survivor = live();
    await survivor.stop();
    dead.add(survivor);
    const later = 100;
    for (let n = total; n < total + later; n++) await js.publish(`warden.pipeline.${id}.in`, JSON.stringify(recordAt(n)), { msgID: `record-${n}` });
    const [restarted] = await NodeProcess.startAll([{ nodeId: "pipe-3", natsUrl: nats.url, env: { ...cluster, EXPORT_PORTS: `${ports[3]}-${ports[3]}` } }]);
    nodes.push(restarted!);
    await until("the records published while no node ran are answered", async () => (await answered()) >= total + later, 30_000);
    const all = await storedMessages<Body>(nc, "WARDEN_PIPELINE_OUT", `warden.pipeline.${id}.out`);
    assert.equal(all.length, total + later, "after a restart of every node: still exactly one answer per record");
    assert.equal((await call("GET", `/export?id=${id}`)).body.status, "active", "the export is active again after the restart");
  });
});
