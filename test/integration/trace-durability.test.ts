import { after, test } from "node:test";
import assert from "node:assert/strict";
import { jetstreamManager } from "@nats-io/jetstream";
import { NatsServerProcess } from "../../service/nats-server";
import { realisticPolicy } from "../../testkit/policy";
import { call } from "../../testkit/http";
import { connectTo, startNats, startNatsCluster, storedTraceRecords } from "../../testkit/nats";
import { NodeProcess } from "../../testkit/node-process";
import { freePort } from "../../testkit/ports";

const servers: NatsServerProcess[] = [];
const nodes: NodeProcess[] = [];

after(async () => {
  await Promise.all(nodes.map((node) => node.stop()));
  await Promise.all(servers.map((server) => server.stop()));
});

interface Outcome {
  status: number;
  code?: string;
  traceId?: string;
  endedAt: number;
}

const question = JSON.stringify({ userId: "durable-user", type: "platformUse", purposeId: "service" });

/** `total` /decision requests, `inFlight` at a time; `midway` runs once, when a quarter of them are answered. */
async function decisionsUnderFailure(
  node: NodeProcess,
  total: number,
  inFlight: number,
  midway: () => Promise<void>,
): Promise<{ outcomes: Outcome[]; failureAt: number; recoveredAt: number }> {
  const outcomes: Outcome[] = [];
  let sent = 0;
  let failureAt = 0;
  let recoveredAt = 0;
  let failing: Promise<void> | undefined;
  const worker = async () => {
    while (sent < total) {
      sent++;
      let outcome: Outcome;
      try {
        const response = await fetch(`${node.url}/decision`, {
          method: "PUT",
          headers: { "content-type": "application/json" },
          body: question,
          signal: AbortSignal.timeout(30_000),
        });
        const body = (await response.json()) as { traceId?: string; error?: { code: string } };
        outcome = { status: response.status, traceId: body.traceId, code: body.error?.code, endedAt: Date.now() };
      } catch (error) {
        outcome = { status: 0, code: (error as Error).name, endedAt: Date.now() };
      }
      outcomes.push(outcome);
      if (!failing && outcomes.length >= total / 4) {
        failureAt = Date.now();
        failing = midway().then(() => void (recoveredAt = Date.now()));
      }
    }
  };
  await Promise.all(Array.from({ length: inFlight }, worker));
  await failing;
  return { outcomes, failureAt, recoveredAt };
}

/** A cluster that just lost a server may time out a consumer's creation while it settles: the read is tried again for up to a minute. */
async function readWhileElecting<T>(read: () => Promise<T>): Promise<T> {
  const until = Date.now() + 60_000;
  for (;;) {
    try {
      return await read();
    } catch (error) {
      if (Date.now() > until) throw error;
      await new Promise((resolve) => setTimeout(resolve, 1000));
    }
  }
}

async function prepare(node: NodeProcess): Promise<void> {
  assert.equal((await call(node, "PUT", "/config", realisticPolicy())).status, 200);
  assert.equal((await call(node, "PUT", "/user", { userId: "durable-user", attributes: { dob: "1990-01-01", location: "US" } })).status, 200);
  assert.equal((await call(node, "PUT", "/user/terms?userId=durable-user")).status, 200);
}

/** Every answered decision's trace record is in WARDEN_TRACE, once; failures are only the fail-closed kinds. */
async function checkTraced(natsUrl: string, outcomes: Outcome[], recoveredAt: number): Promise<void> {
  const answered = outcomes.filter((o) => o.status === 200);
  const refused = outcomes.filter((o) => o.status !== 200);
  for (const o of refused) assert.ok(o.status === 503 || o.status === 504, `a decision not answered fails closed with 503/504, got ${o.status} ${o.code}`);
  assert.ok(answered.length >= outcomes.length / 2, `most decisions are answered (${answered.length} of ${outcomes.length})`);
  assert.ok(
    answered.some((o) => o.endedAt > recoveredAt),
    "answers resume after the failure",
  );
  const nc = await connectTo(natsUrl);
  try {
    const stored = new Map<string, number>();
    for (const { record } of await readWhileElecting(() => storedTraceRecords<{ traceId: string }>(nc, "warden.trace.decision.>")))
      stored.set(record.traceId, (stored.get(record.traceId) ?? 0) + 1);
    const missing = answered.filter((o) => !stored.has(o.traceId!));
    assert.equal(missing.length, 0, `every answered decision is traced (${missing.length} of ${answered.length} answered are missing from WARDEN_TRACE)`);
    const twice = [...stored.values()].filter((count) => count > 1).length;
    assert.equal(twice, 0, "a batch sent again is stored once");
  } finally {
    await nc.close();
  }
  process.stdout.write(`# answered ${answered.length}, refused ${refused.length} (${[...new Set(refused.map((o) => `${o.status} ${o.code}`))].join(", ")})\n`);
}

test("4,000 decisions at 48 in flight while the nats-server is SIGKILLed and restarted on the same store: every answered decision is traced, and answers resume", async () => {
  const server = await startNats();
  servers.push(server);
  const node = await NodeProcess.start({ nodeId: "durable-a", natsUrl: server.url });
  nodes.push(node);
  await prepare(node);
  const { outcomes, recoveredAt } = await decisionsUnderFailure(node, 4000, 48, async () => {
    server.signal("SIGKILL");
    await new Promise((resolve) => setTimeout(resolve, 1000));
    servers.push(await NatsServerProcess.start(server.options));
  });
  await checkTraced(server.url, outcomes, recoveredAt);
});

test("the same on a 3-server NATS cluster (replicas 3) losing the trace stream's leader", async () => {
  const cluster = await startNatsCluster(3);
  servers.push(...cluster);
  const natsUrl = cluster.map((server) => server.url).join(",");
  const node = await NodeProcess.start({ nodeId: "durable-c", natsUrl, env: { JS_REPLICAS: "3", HEARTBEAT_MS: "1000", LEASE_TTL_MS: "4000" } });
  nodes.push(node);
  await prepare(node);
  const nc = await connectTo(natsUrl);
  const leaderName = (await (await jetstreamManager(nc)).streams.info("WARDEN_TRACE")).cluster?.leader;
  await nc.close();
  const leader = cluster.find((server) => server.options.serverName === leaderName);
  assert.ok(leader, `the trace stream's leader (${leaderName}) is one of the cluster's servers`);
  const { outcomes, recoveredAt } = await decisionsUnderFailure(node, 4000, 48, async () => {
    leader.signal("SIGKILL");
  });
  // Read through the survivors: the killed leader's URL is first in no list.
  await checkTraced(
    cluster
      .filter((server) => server !== leader)
      .map((server) => server.url)
      .join(","),
    outcomes,
    recoveredAt,
  );
});

test("while JetStream does not acknowledge trace records, /decision, /decision/batch and /redact/record fail closed with 503 ERR_TRACE_UNAVAILABLE, a pipeline export with ERR_PIPELINE_UNAVAILABLE, counted in the metrics", async () => {
  const server = await startNats();
  servers.push(server);
  const node = await NodeProcess.start({ nodeId: "durable-f", natsUrl: server.url, env: { CALL_TIMEOUT_MS: "1500" } });
  nodes.push(node);
  await prepare(node);
  const record = { "users.id": "durable-user", "users.name": "n" };
  assert.equal((await call(node, "PUT", "/decision", JSON.parse(question))).status, 200, "answered while JetStream acknowledges");
  const pipelinePort = await freePort();
  const created = await call(node, "PUT", "/export", {
    type: "pipeline",
    resolverGroup: "users-table",
    port: pipelinePort,
    metadata: { type: "platformUse", purposeId: "service" },
  });
  assert.equal(created.status, 200, JSON.stringify(created.body));
  const pipeline = () =>
    fetch(`http://127.0.0.1:${pipelinePort}/`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(record) });
  const until = Date.now() + 20_000;
  while (
    !(await pipeline().then(
      () => true,
      () => false,
    ))
  ) {
    if (Date.now() > until) throw new Error("the pipeline export's port did not open");
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  // The export decided the user above: a second user is one it has not decided yet.
  assert.equal((await call(node, "PUT", "/user", { userId: "durable-second", attributes: { dob: "1990-01-01", location: "US" } })).status, 200);
  const secondRecord = { "users.id": "durable-second", "users.name": "n" };
  // Without its stream JetStream acknowledges no trace record, while everything else (state, leases) goes on.
  const nc = await connectTo(server);
  const jsm = await jetstreamManager(nc);
  const { config } = await jsm.streams.info("WARDEN_TRACE");
  await jsm.streams.delete("WARDEN_TRACE");
  try {
    const [single, batch, redacted] = await Promise.all([
      call(node, "PUT", "/decision", JSON.parse(question)),
      call(node, "PUT", "/decision/batch", { queries: [JSON.parse(question), JSON.parse(question)] }),
      call(node, "PUT", "/redact/record?type=platformUse&purposeId=service&mappingGroup=users-table", record),
    ]);
    for (const [name, answer] of [
      ["/decision", single],
      ["/decision/batch", batch],
      ["/redact/record", redacted],
    ] as const) {
      assert.equal(answer.status, 503, `${name}: ${JSON.stringify(answer.body)}`);
      assert.equal(answer.body.error.code, "ERR_TRACE_UNAVAILABLE", name);
    }
    // A pipeline export hands out no verdict whose record is not stored: its door answers unavailable.
    const exported = await fetch(`http://127.0.0.1:${pipelinePort}/`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(secondRecord),
    });
    const exportedBody = (await exported.json()) as { error?: { code: string } };
    assert.equal(exported.status, 503, JSON.stringify(exportedBody));
    assert.equal(exportedBody.error?.code, "ERR_PIPELINE_UNAVAILABLE");
  } finally {
    await jsm.streams.add(config);
    await nc.close();
  }
  const metrics = await fetch(`${node.url}/metrics`).then((response) => response.text());
  const failed = Number(/^warden_trace_records_failed_total (\d+)/m.exec(metrics)?.[1]);
  assert.ok(failed >= 4, `failed trace records are counted (${failed})`);
  assert.equal((await call(node, "PUT", "/decision", JSON.parse(question))).status, 200, "answered again once JetStream is back");
  const again = await fetch(`http://127.0.0.1:${pipelinePort}/`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(secondRecord),
  });
  assert.equal(again.status, 200, "the pipeline export answers again once JetStream is back");
});
