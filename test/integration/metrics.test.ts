import "reflect-metadata";
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { readFileSync, readdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { promisify } from "node:util";
import { Registry } from "prom-client";
import { EventLog } from "../../actors/runtime/event-log";
import { defaultRuntimeOptions } from "../../actors/runtime/runtime";
import { defaultRetention, provision } from "../../actors/runtime/provision";
import { registerTraceMetrics } from "../../service/node-metrics";
import { NatsServerProcess } from "../../service/nats-server";
import { connectTo, silentLogger, startNats } from "../../testkit/nats";
import { NodeProcess } from "../../testkit/node-process";
import { freePort } from "../../testkit/ports";
import { tempDir } from "../../testkit/temp";

const run = promisify(execFile);
const signing = { id: "AKIDMETRICS", key: "metrics-signing-key", region: "eu-west-1" };
const json = { "content-type": "application/json" };

/** One sample's value from Prometheus text: the series named with exactly these labels (in the order prom-client writes them). */
function sample(text: string, series: string): number | undefined {
  const line = text.split("\n").find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

/** The pids of a process's direct children whose command line contains `needle`. */
function childrenOf(pid: number, needle: string): number[] {
  return readdirSync("/proc")
    .filter((entry) => /^\d+$/.test(entry))
    .filter((entry) => {
      try {
        const stat = readFileSync(`/proc/${entry}/stat`, "utf8");
        const parent = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
        return parent === pid && readFileSync(`/proc/${entry}/cmdline`, "utf8").includes(needle);
      } catch {
        return false;
      }
    })
    .map(Number);
}

async function until<T>(what: string, probe: () => Promise<T | undefined>, timeoutMs = 15_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

describe("metrics: every series of docs/metrics.md, scraped from a real node after real traffic", () => {
  let nats: NatsServerProcess;
  let node: NodeProcess;
  let natsDir: string;
  let natsPort: number;
  const scrape = async () => (await fetch(`${node.url}/metrics`)).text();
  const call = (method: string, path: string, body?: unknown) =>
    fetch(`${node.url}${path}`, { method, ...(body === undefined ? {} : { headers: json, body: JSON.stringify(body) }) });

  before(async () => {
    natsDir = tempDir("metrics-nats");
    nats = await startNats(natsDir);
    natsPort = nats.options.port;
    const dir = tempDir("metrics");
    const security = join(dir, "security.json");
    // The mapping API needs a signed request; everything else is open.
    writeFileSync(
      security,
      JSON.stringify({
        verifiers: [{ verifier: "cloud", profiles: [{ profile: "dev", configuration: signing }] }],
        credentials: [{ type: "cloudSigningCredentials", verifiers: [{ verifier: "cloud", profile: "dev" }] }],
        enforcedComponents: [{ componentName: "mapping" }],
      }),
    );
    node = await NodeProcess.start({ nodeId: "metrics-1", natsUrl: nats.url, env: { SECURITY_CONFIG: security, EXPORT_WORKERS: "2" } });
  });

  after(async () => {
    await node?.stop();
    await nats?.stop();
  });

  test("decisions by door, flow, allowed and reason; actor call latency by type; refusals by kind", async () => {
    assert.equal(
      (await call("PUT", "/config/categories", { categories: [{ stableId: "usage", name: "Usage", fields: [{ stableId: "usage.clicks", name: "Clicks" }] }] }))
        .status,
      200,
    );
    assert.equal((await call("PUT", "/config/platform-use", { purposes: [{ stableId: "service", name: "Service", categoryIds: ["usage"] }] })).status, 200);
    assert.equal((await call("PUT", "/user", { userId: "alice" })).status, 200);
    assert.equal((await call("PUT", "/user", { userId: "alice" })).status, 409, "the second create fails in the actor");
    assert.equal((await call("PUT", "/decision", { userId: "alice", type: "platformUse", purposeId: "service" })).status, 200);
    assert.equal((await call("PUT", "/user/terms?userId=alice")).status, 200);
    for (let i = 0; i < 3; i++) assert.equal((await call("PUT", "/decision", { userId: "alice", type: "platformUse", purposeId: "service" })).status, 200);
    assert.equal((await call("PUT", "/decision", { userId: "nobody", type: "platformUse", purposeId: "service" })).status, 200);
    assert.equal((await call("POST", "/user/alice")).status, 405);
    assert.equal((await call("GET", "/nowhere")).status, 404);

    const text = await scrape();
    assert.equal(sample(text, 'warden_decisions_total{door="decision",flow="platform",allowed="true",reason="ALLOWED_BY_TERMS"}'), 3);
    assert.equal(sample(text, 'warden_decisions_total{door="decision",flow="platform",allowed="false",reason="NO_TERMS_ACCEPTED"}'), 1);
    assert.equal(sample(text, 'warden_decisions_total{door="decision",flow="platform",allowed="false",reason="UNKNOWN_USER"}'), 1);
    assert.ok(sample(text, 'warden_actor_client_call_duration_seconds_count{type="user",outcome="ok"}')! >= 2, "user calls that answered");
    assert.equal(sample(text, 'warden_actor_client_call_duration_seconds_count{type="user",outcome="error"}'), 1, "the create that failed");
    assert.ok(sample(text, 'warden_actor_client_call_duration_seconds_count{type="policy",outcome="ok"}')! >= 2);
    assert.equal(sample(text, 'warden_refusals_total{kind="ERR_USER_EXISTS"}'), 1);
    assert.equal(sample(text, 'warden_refusals_total{kind="ERR_REQUEST_METHOD"}'), 1);
    assert.equal(sample(text, 'warden_refusals_total{kind="ERR_REQUEST_NOT_FOUND"}'), 1);
    assert.match(text, /^warden_build_info\{version="\d+\.\d+\.\d+"\} 1$/m);
  });

  test("authentication outcomes by component and verifier", async () => {
    const mapping = JSON.stringify({
      name: "events",
      fieldMappings: [
        { recordField: "user", resourceContext: true },
        { recordField: "clicks", categoryId: "usage" },
      ],
    });
    const signed = (key: string) =>
      run("curl", [
        "-s",
        "-o",
        "/dev/null",
        "-w",
        "%{http_code}",
        "-X",
        "PUT",
        "--aws-sigv4",
        `aws:amz:${signing.region}:warden`,
        "--user",
        `${signing.id}:${key}`,
        "-H",
        "content-type: application/json",
        "--data-binary",
        mapping,
        `${node.url}/mapping/groups`,
      ]);
    assert.equal((await signed(signing.key)).stdout, "200");
    assert.equal((await signed("wrong-key")).stdout, "401");
    const basic = await fetch(`${node.url}/mapping/groups`, { headers: { authorization: `Basic ${Buffer.from("ada:pw").toString("base64")}` } });
    assert.equal(basic.status, 401, "no verifier takes passwords here");
    assert.equal((await fetch(`${node.url}/mapping/groups`)).status, 401, "no credentials");

    const text = await scrape();
    assert.equal(sample(text, 'warden_authentication_total{component="mapping",verifier="cloud",outcome="verified"}'), 1);
    assert.equal(sample(text, 'warden_authentication_total{component="mapping",verifier="cloud",outcome="rejected"}'), 1);
    assert.equal(sample(text, 'warden_authentication_total{component="mapping",verifier="none",outcome="unsupported"}'), 1);
    assert.equal(sample(text, 'warden_refusals_total{kind="ERR_AUTH_REQUIRED"}'), 1);
  });

  test("redaction jobs by state, document bytes in and out", async () => {
    const csv = "user,clicks\nalice,42\nbob,7\n";
    const upload = await fetch(`${node.url}/redact/document?type=platformUse&purposeId=service&mappingGroup=events`, {
      method: "PUT",
      headers: { "content-type": "text/csv" },
      body: csv,
    });
    assert.equal(upload.status, 200);
    const { jobName } = (await upload.json()) as { jobName: string };
    await until("the job to complete", async () => ((await fetch(`${node.url}/redact/stats?jobName=${jobName}`)).status === 200 ? true : undefined));
    const redacted = await (await fetch(`${node.url}/redact/document?jobName=${jobName}`)).text();
    assert.equal(redacted, "user,clicks\n,42\n");

    const text = await scrape();
    assert.equal(sample(text, 'warden_redaction_jobs{state="complete"}'), 1);
    assert.equal(sample(text, 'warden_redaction_jobs{state="running"}'), 0);
    assert.equal(sample(text, 'warden_redaction_bytes_total{direction="in"}'), Buffer.byteLength(csv));
    assert.equal(sample(text, 'warden_redaction_bytes_total{direction="out"}'), Buffer.byteLength(redacted));
    assert.equal(sample(text, 'warden_decisions_total{door="redact",flow="platform",allowed="false",reason="UNKNOWN_USER"}'), 1, "bob, in the job");
  });

  test("export connections, rows kept and dropped, fields emptied, by export and type", async () => {
    const port = await freePort();
    const created = await call("PUT", "/export", { type: "pipeline", resolverGroup: "events", metadata: { type: "platformUse", purposeId: "service" }, port });
    assert.equal(created.status, 200);
    const { id } = (await created.json()) as { id: string };
    const records = '{"user":"alice","clicks":1}\n{"user":"bob","clicks":2}\n{"user":"alice","clicks":3}\n';
    // curl closes its connection when done (fetch would keep it open, and counted open).
    const answers = await until("the export's port", () =>
      run("curl", ["-sf", "-X", "POST", "-H", "content-type: application/x-ndjson", "--data-binary", records, `http://127.0.0.1:${port}/`]).then(
        (result) => result.stdout,
        () => undefined,
      ),
    );
    assert.equal(answers.trim().split("\n").length, 3);

    const labels = `export="${id}",type="pipeline"`;
    // curl has closed its connection; the export notices a moment later.
    const text = await until("the connection closed", async () => {
      const current = await scrape();
      return sample(current, `warden_export_connections_open{${labels}}`) === 0 ? current : undefined;
    });
    assert.equal(sample(text, `warden_export_connections_total{${labels}}`), 1);
    assert.equal(sample(text, `warden_export_connections_refused_total{${labels}}`), 0);
    assert.equal(sample(text, `warden_export_rows_total{${labels},outcome="kept"}`), 2);
    assert.equal(sample(text, `warden_export_rows_total{${labels},outcome="dropped"}`), 1);
    assert.equal(sample(text, `warden_export_fields_emptied_total{${labels}}`), 2, "alice's user field, twice");
    assert.equal(
      sample(text, 'warden_decisions_total{door="export",flow="platform",allowed="true",reason="ALLOWED_BY_TERMS"}'),
      1,
      "alice, decided once for the export",
    );
  });

  test("proxy worker count and restarts: workers start with the first PostgreSQL export; one killed is counted and started again", async () => {
    assert.equal(sample(await scrape(), "warden_proxy_workers"), 0, "none before a PostgreSQL export");
    // The backend is never reached: no client connects. Serving the export starts the workers.
    const created = await call("PUT", "/export", {
      type: "postgres",
      endpoint: `127.0.0.1:${await freePort()}`,
      resolverGroup: "events",
      metadata: { type: "platformUse", purposeId: "service" },
      port: await freePort(),
    });
    assert.equal(created.status, 200);
    await until("two proxy workers", async () => (sample(await scrape(), "warden_proxy_workers") === 2 ? true : undefined));
    const [victim] = childrenOf(node.child.pid!, "proxy-worker.js");
    assert.ok(victim, "a worker process");
    process.kill(victim, "SIGKILL");
    await until("the restart counted and the worker back", async () => {
      const text = await scrape();
      return sample(text, "warden_proxy_worker_restarts_total") === 1 && sample(text, "warden_proxy_workers") === 2 ? true : undefined;
    });
  });

  test("lease renewals and partitions owned; NATS connection state and reconnects across a nats-server restart", async () => {
    let text = await scrape();
    assert.ok(sample(text, 'warden_lease_renewals_total{outcome="ok"}')! >= 1);
    assert.equal(sample(text, "warden_partitions_owned"), sample(text, "warden_partitions"));
    assert.equal(sample(text, "warden_partitions"), 64);
    assert.equal(sample(text, "warden_nats_connected"), 1);
    assert.equal(sample(text, "warden_nats_reconnects_total"), 0);

    await nats.stop();
    nats = await NatsServerProcess.start({ ...nats.options, dir: natsDir, port: natsPort });
    text = await until("the node to reconnect", async () => {
      const current = await scrape();
      return sample(current, "warden_nats_reconnects_total") === 1 ? current : undefined;
    });
    assert.equal(sample(text, "warden_nats_disconnects_total"), 1);
    assert.equal(sample(text, "warden_nats_connected"), 1);
  });

  test("docs/metrics.md lists exactly the warden_ metrics a node serves", async () => {
    const served = new Set([...(await scrape()).matchAll(/^# TYPE (warden_\w+) /gm)].map((m) => m[1]!));
    const documented = new Set(
      [...readFileSync(join(__dirname, "..", "..", "..", "docs", "metrics.md"), "utf8").matchAll(/^\| `(warden_\w+)` \|/gm)].map((m) => m[1]!),
    );
    assert.deepEqual([...served].sort(), [...documented].sort());
  });
});

test("trace batches pending and failed, read from a real event log on a real nats-server", async () => {
  const nats = await startNats();
  try {
    const nc = await connectTo(nats);
    await provision(nc, { replicas: 1, partitions: 4, auditRetention: defaultRetention.audit, traceRetention: defaultRetention.trace });
    const registry = new Registry();
    // A short deadline: a batch JetStream does not acknowledge fails after it.
    const events = new EventLog(nc, { ...defaultRuntimeOptions, nodeId: "t", callTimeoutMs: 500 }, silentLogger, registry);
    registerTraceMetrics(registry, events);
    const stored = [events.trace("decision", "platform", { n: 1 }), events.trace("export", "platform", { n: 2 })];
    let text = await registry.metrics();
    assert.equal(sample(text, "warden_trace_batches_pending"), 2, "two subjects, one batch each, until the turn ends");
    await Promise.all(stored);
    text = await registry.metrics();
    assert.equal(sample(text, "warden_trace_batches_pending"), 0);
    assert.equal(sample(text, "warden_trace_records_stored_total"), 2);
    assert.equal(sample(text, "warden_trace_records_failed_total"), 0);
    await nc.close();
    const failing = [events.trace("decision", "platform", { n: 3 }), events.trace("decision", "platform", { n: 4 })];
    await events.flushTraces();
    assert.deepEqual(
      (await Promise.allSettled(failing)).map((r) => r.status),
      ["rejected", "rejected"],
      "fail closed",
    );
    assert.equal(sample(await registry.metrics(), "warden_trace_records_failed_total"), 2, "a closed connection stores nothing");
  } finally {
    await nats.stop();
  }
});
