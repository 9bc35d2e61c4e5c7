import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { request as httpRequest } from "node:http";
import { setTimeout as sleep } from "node:timers/promises";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { parse } from "csv-parse/sync";
import { compilePolicy } from "../../decision/compiled-policy";
import { decide } from "../../decision/engine";
import type { Decision } from "../../decision/types";
import type { NatsServerProcess } from "../../service/nats-server";
import { realisticPolicy } from "../../testkit/policy";
import { createPopulation, populationIds } from "../fixtures/population";
import { startNats, storedTraceRecords } from "../../testkit/nats";
import { call as request, type Body } from "../../testkit/http";
import { NodeProcess } from "../../testkit/node-process";

const columns = ["users.id", "users.email", "users.login", "users.name", "users.clicks", "users.secret"];
const categoryOf: Record<string, string | undefined> = {
  "users.email": "contact",
  "users.login": "credentials",
  "users.name": "identity",
  "users.clicks": "usage",
};
const query = (purposeId: string) => `purposeId=${purposeId}&type=platformUse&mappingGroup=users-table`;

/** A row for a user, with values that would show if they leaked: commas, quotes and newlines included. */
function valuesFor(userId: string, n: number): string[] {
  return [userId, `${userId}@example.com`, `login,${userId}`, `Name "${userId}"\nsecond line`, String(n), `secret-${n}`];
}

function csvField(value: string): string {
  return /[",\r\n]/.test(value) ? `"${value.replaceAll('"', '""')}"` : value;
}

describe("document redaction (PUT /redact/document, /redact/stats, /redact/document)", () => {
  let nats: NatsServerProcess;
  let node: NodeProcess;
  let nc: NatsConnection;
  const call = (method: string, path: string, body?: unknown) => request(node, method, path, body);
  const decisions = new Map<string, Decision | undefined>();

  async function upload(purposeId: string, contentType: string, body: string | Buffer): Promise<{ status: number; body: Body }> {
    const response = await fetch(`${node.url}/redact/document?${query(purposeId)}`, { method: "PUT", headers: { "content-type": contentType }, body });
    return { status: response.status, body: await response.json() };
  }

  async function finished(jobName: string): Promise<Body> {
    for (let i = 0; i < 600; i++) {
      const progress = await call("GET", `/redact/progress?jobName=${jobName}`);
      assert.equal(progress.status, 200);
      if (progress.body.status !== "running") return (await call("GET", `/redact/stats?jobName=${jobName}`)).body;
      await sleep(50);
    }
    assert.fail(`job ${jobName} did not finish`);
  }

  /** The decision the engine makes for each user of the population, from the users' stored state. */
  async function decisionsFor(purposeId: string): Promise<Map<string, Decision | undefined>> {
    const revision = Number((await fetch(`${node.url}/config`)).headers.get("x-config-revision"));
    const compiled = compilePolicy(realisticPolicy(), revision);
    const out = new Map<string, Decision | undefined>();
    for (const userId of populationIds) {
      if (!userId) continue;
      const stored = await call("GET", `/user/${userId}`);
      out.set(userId, decide(compiled, stored.status === 200 ? stored.body : undefined, { type: "platformUse", purposeId }, new Date()));
    }
    return out;
  }

  /** The rows the redacted document must hold, in order, as field values. */
  function expectedRows(rows: string[][], purposeId: string): string[][] {
    return rows.flatMap((row) => {
      const decision = row[0] ? decisions.get(`${purposeId}/${row[0]}`) : undefined;
      if (!decision?.allowed) return [];
      return [row.map((value, c) => (categoryOf[columns[c]] && decision.categoryIds.includes(categoryOf[columns[c]]!) ? value : ""))];
    });
  }

  before(async () => {
    nats = await startNats();
    node = await NodeProcess.start({ nodeId: "documents-1", natsUrl: nats.url });
    nc = await connect({ servers: nats.url });
    assert.equal((await call("PUT", "/config", realisticPolicy())).status, 200);
    await createPopulation(call);
    for (const purposeId of ["service", "analytics"])
      for (const [userId, decision] of await decisionsFor(purposeId)) decisions.set(`${purposeId}/${userId}`, decision);
  });

  after(async () => {
    await nc?.close();
    await node?.stop();
    await nats?.stop();
  });

  test("CSV, the spec's flow: 200 with jobName, 404 while running, 200 stats when done, the redacted CSV row by row", async () => {
    // Large enough that the job is still running when stats are first asked for.
    const rows: string[][] = [];
    for (let n = 0; n < 120_000; n++) rows.push(valuesFor(populationIds[n % populationIds.length], n));
    const text = `\ufeff${columns.join(",")}\r\n${rows.map((row) => row.map(csvField).join(",")).join("\r\n")}\r\n`;
    const traces: Body[] = [];
    const subscription = nc.subscribe("warden.trace.redact.>", {
      callback: (_error, message) =>
        void traces.push(
          ...message
            .string()
            .split("\n")
            .filter(Boolean)
            .map((line) => JSON.parse(line) as Body),
        ),
    });

    const accepted = await upload("service", "text/csv", text);
    assert.equal(accepted.status, 200, JSON.stringify(accepted.body));
    const { jobName } = accepted.body;
    assert.match(jobName, /^[0-9a-f-]{36}$/);
    assert.equal(accepted.body.status, "running");
    assert.equal(accepted.body.inputBytes, Buffer.byteLength(text));
    const early = await call("GET", `/redact/stats?jobName=${jobName}`);
    assert.equal(early.status, 404);
    assert.equal(early.body.error.code, "ERR_REDACT_JOB_RUNNING");
    const early404 = await call("GET", `/redact/document?jobName=${jobName}`);
    assert.equal(early404.status, 404);

    const stats = await finished(jobName);
    assert.equal(stats.status, "complete");
    const expected = expectedRows(rows, "service");
    assert.equal(stats.rows.in, rows.length);
    assert.equal(stats.rows.kept, expected.length);
    assert.equal(stats.rows.dropped, rows.length - expected.length);
    const droppedBy: Record<string, number> = {};
    for (const [userId] of rows) {
      const decision = userId ? decisions.get(`service/${userId}`) : undefined;
      const reason = !userId ? "NO_USER_ID" : decision!.allowed ? undefined : decision!.reasons[decision!.reasons.length - 1].code;
      if (reason) droppedBy[reason] = (droppedBy[reason] ?? 0) + 1;
    }
    assert.deepEqual(stats.droppedBy, droppedBy);
    assert.ok(Object.keys(droppedBy).length >= 3, "the population is dropped for several reasons");
    assert.equal(stats.users.seen, populationIds.length - 1);
    assert.equal(stats.fields["users.secret"].why, "not in the mapping group");
    assert.equal(stats.fields["users.secret"].emptied, expected.length);
    assert.equal(stats.fields["users.id"].why, "mapped to no category");
    assert.equal(stats.revision, Number((await fetch(`${node.url}/config`)).headers.get("x-config-revision")));
    assert.equal(stats.bytes.in, Buffer.byteLength(text));
    assert.ok(stats.timings.runMs >= 0 && stats.timings.totalMs >= stats.timings.runMs);

    const download = await fetch(`${node.url}/redact/document?jobName=${jobName}`, { headers: { accept: "application/octet-stream" } });
    assert.equal(download.status, 200);
    assert.match(download.headers.get("content-type") ?? "", /^text\/csv/);
    const body = Buffer.from(await download.arrayBuffer());
    assert.equal(body.length, stats.bytes.out);
    assert.ok(body.subarray(0, 3).equals(Buffer.from([0xef, 0xbb, 0xbf])), "the BOM is kept");
    const [header, ...out] = parse(body, { bom: true }) as string[][];
    assert.deepEqual(header, columns, "the header row is kept");
    assert.deepEqual(out, expected, "every kept row, in order, with exactly the allowed fields");

    await sleep(700); // trace batches are flushed within half a second
    subscription.unsubscribe();
    const mine = traces.filter((t) => t.jobName === jobName);
    const jobTrace = mine.filter((t) => t.kind === "document.job");
    assert.equal(jobTrace.length, 1);
    assert.equal(jobTrace[0].rowsIn, rows.length);
    const userTraces = mine.filter((t) => t.kind === "document.user");
    assert.deepEqual(userTraces.map((t) => t.userId).sort(), populationIds.filter(Boolean).sort(), "one trace record per user, not per row");
    const traceText = JSON.stringify(mine);
    assert.ok(!traceText.includes("@example.com") && !traceText.includes("secret-"), "no record values in the trace");
  });

  test("JSON array and NDJSON: the same decisions, nested fields by dotted path, output in the input's format", async () => {
    // biome-ignore lint/correctness/noPrecisionLoss: a number past 2^53 on purpose: it must pass through unchanged
    const pastSafeInteger = 12345678901234567890;
    const records = populationIds.map((userId, n) => ({
      users: { id: userId, email: `${userId}@example.com`, login: `l-${userId}`, name: `N ${userId}`, clicks: pastSafeInteger },
      "users.secret": `secret-${n}`,
    }));
    const rawRecords = records.map((r) => JSON.stringify(r).replace('"clicks":12345678901234567000', '"clicks":12345678901234567890'));
    for (const [contentType, text, read] of [
      ["application/json", `[${rawRecords.join(",\n")}]`, (out: string) => JSON.parse(out) as Body[]],
      [
        "application/x-ndjson",
        `${rawRecords.join("\n")}\n`,
        (out: string) =>
          out
            .trim()
            .split("\n")
            .map((line) => JSON.parse(line) as Body),
      ],
    ] as const) {
      const accepted = await upload("analytics", contentType, text);
      assert.equal(accepted.status, 200, JSON.stringify(accepted.body));
      const stats = await finished(accepted.body.jobName);
      assert.equal(stats.status, "complete", JSON.stringify(stats));
      const download = await fetch(`${node.url}/redact/document?jobName=${accepted.body.jobName}`);
      assert.match(download.headers.get("content-type") ?? "", new RegExp(`^${contentType}`));
      const outText = await download.text();
      const expected = populationIds.flatMap((userId, n) => {
        const decision = userId ? decisions.get(`analytics/${userId}`) : undefined;
        if (!decision?.allowed) return [];
        const keep = (category: string, value: unknown) => (decision.categoryIds.includes(category) ? value : null);
        return [
          {
            users: {
              id: null,
              email: keep("contact", `${userId}@example.com`),
              login: keep("credentials", `l-${userId}`),
              name: keep("identity", `N ${userId}`),
              clicks: keep("usage", pastSafeInteger),
            },
            "users.secret": null,
            n,
          },
        ];
      });
      assert.deepEqual(
        read(outText),
        expected.map(({ n: _n, ...record }) => record),
        contentType,
      );
      assert.ok(expected.length > 0);
      if (expected.some((r) => r.users.clicks !== null)) assert.ok(outText.includes("12345678901234567890"), "numbers keep every digit");
    }
  });

  test("bad input: unknown purpose, group or type and unsupported media types are refused before any work", async () => {
    const before = (await call("GET", "/redact/jobs")).body.jobs.length;
    const cases: Array<[string, string, number, string]> = [
      ["purposeId=mining&type=platformUse&mappingGroup=users-table", "text/csv", 400, "ERR_REDACT_INVALID"],
      ["purposeId=service&type=platformUse&mappingGroup=nope", "text/csv", 400, "ERR_REDACT_INVALID"],
      ["purposeId=service&type=sharing&mappingGroup=users-table", "text/csv", 400, "ERR_REQUEST_INVALID"],
      ["purposeId=service&type=platformUse&mappingGroup=users-table", "application/xml", 415, "ERR_REQUEST_CONTENT_TYPE"],
      ["purposeId=service&type=platformUse&mappingGroup=users-table", "text/plain", 415, "ERR_REQUEST_CONTENT_TYPE"],
    ];
    for (const [q, contentType, status, code] of cases) {
      const response = await fetch(`${node.url}/redact/document?${q}`, {
        method: "PUT",
        headers: { "content-type": contentType },
        body: "users.id\naccepted\n",
      });
      assert.equal(response.status, status, q);
      assert.equal(((await response.json()) as Body).error.code, code, `${q} ${contentType}`);
    }
    assert.equal((await call("GET", "/redact/jobs")).body.jobs.length, before, "no job was created");
    assert.equal((await call("GET", "/redact/stats?jobName=no-such-job")).body.error.code, "ERR_REDACT_JOB_NOT_FOUND");
  });

  test("a broken document fails its job with the line, and the service stays healthy", async () => {
    const cases: Array<[string, string, string, Record<string, number>]> = [
      ["text/csv", "users.id,users.email\naccepted,a\naccepted,a,extra\n", "CSV_RAGGED_ROW", { line: 3 }],
      ["text/csv", 'users.id,users.email\naccepted,"never closed\n', "CSV_UNTERMINATED_QUOTE", { line: 2 }],
      ["application/json", '[{"users": {"id": "accepted"}}, {"users": nope}]', "JSON_INVALID", { record: 2 }],
      ["application/x-ndjson", `{"users":{"id":"accepted"}}\n{"x":${"[".repeat(64)}${"]".repeat(64)}}\n`, "RECORD_TOO_DEEP", { line: 2 }],
      // Messages that quote the document: a key name, V8's excerpt of a line.
      ["application/x-ndjson", '{"users":{"id":"accepted","k-secret-key@example.com":1,"k-secret-key@example.com":2}}\n', "JSON_DUPLICATE_KEY", { line: 1 }],
      ["application/x-ndjson", '{"users":{"id":"accepted","email":secret-value@example.com}}\n', "JSON_INVALID", { line: 1 }],
    ];
    for (const [contentType, text, code, where] of cases) {
      const accepted = await upload("service", contentType, text);
      assert.equal(accepted.status, 200);
      const stats = await finished(accepted.body.jobName);
      assert.equal(stats.status, "failed");
      assert.equal(stats.error.code, code, JSON.stringify(stats.error));
      for (const [key, value] of Object.entries(where)) assert.equal(stats.error[key], value, `${code} ${key}`);
      const download = await call("GET", `/redact/document?jobName=${accepted.body.jobName}`);
      assert.equal(download.status, 409);
      assert.equal(download.body.error.code, "ERR_REDACT_JOB_FAILED");
    }
    assert.equal((await call("GET", "/readyz")).status, 200);
    // The job's trace record names the failure by code and place only: no message, which could quote the document's values.
    const traces = await storedTraceRecords<{ kind?: string; error?: Record<string, unknown> }>(nc);
    const failedJobs = traces.filter((m) => m.record.kind === "document.job" && m.record.error);
    assert.ok(failedJobs.length >= cases.length, `${failedJobs.length} failed job traces`);
    for (const { record } of failedJobs)
      assert.deepEqual(
        Object.keys(record.error!).filter((key) => !["code", "line", "record"].includes(key)),
        [],
        JSON.stringify(record.error),
      );
    const text = JSON.stringify(traces);
    for (const secret of ["k-secret-key@example.com", "secret-value@example.com"]) assert.ok(!text.includes(secret), `'${secret}' is in the trace stream`);
  });

  test("a job decides under the configuration current when it runs: a narrowing made during the upload applies to its rows", async () => {
    const revisionNow = async () => Number((await fetch(`${node.url}/config`)).headers.get("x-config-revision"));
    const before = await revisionNow();
    const chunked = new Promise<{ status: number; body: Body }>((resolve, reject) => {
      const outgoing = httpRequest(
        `${node.url}/redact/document?${query("service")}`,
        { method: "PUT", headers: { "content-type": "text/csv", "transfer-encoding": "chunked" } },
        (response) => {
          let text = "";
          response.setEncoding("utf8").on("data", (chunk) => (text += chunk));
          response.on("end", () => resolve({ status: response.statusCode ?? 0, body: JSON.parse(text) as Body }));
        },
      );
      outgoing.on("error", reject);
      outgoing.write(`${columns.join(",")}\n`);
      // While the upload goes on: contact is no longer usable for service (a narrowing takes effect at once, policy-semantics 2).
      void (async () => {
        await sleep(300);
        const narrowed = realisticPolicy().platformUse.purposes.map((p) =>
          p.stableId === "service" ? { ...p, categoryIds: p.categoryIds.filter((c) => c !== "contact") } : p,
        );
        const written = await call("PUT", "/config/platform-use", { purposes: narrowed });
        assert.equal(written.status, 200, JSON.stringify(written.body));
        outgoing.end(`${valuesFor("accepted", 7).map(csvField).join(",")}\n`);
      })().catch(reject);
    });
    try {
      const uploaded = await chunked;
      assert.equal(uploaded.status, 200, JSON.stringify(uploaded.body));
      const stats = await finished(uploaded.body.jobName);
      assert.equal(stats.status, "complete");
      assert.ok(stats.revision > before, `decided under the revision after the narrowing (${stats.revision} > ${before})`);
      const output = (await (await fetch(`${node.url}/redact/document?jobName=${uploaded.body.jobName}`)).text()).split("\n");
      assert.ok(output[1]!.startsWith(",,"), `the email (contact) is emptied: ${output[1]}`);
      assert.ok(!output.join("\n").includes("accepted@example.com"));
    } finally {
      assert.equal((await call("PUT", "/config/platform-use", { purposes: realisticPolicy().platformUse.purposes })).status, 200);
    }
  });

  test("a configuration that changes during every attempt fails the job after 5 restarts in a row (CONFIG_CHANGED), instead of starting it over forever", async () => {
    const rows: string[][] = [];
    // Long enough (some 15 MB) that every attempt reads several chunks, each of which looks for a new revision.
    for (let n = 0; n < 150_000; n++) rows.push(valuesFor(populationIds[n % populationIds.length], n));
    const text = `${columns.join(",")}\n${rows.map((row) => row.map(csvField).join(",")).join("\n")}\n`;
    // A new revision every few milliseconds, none of them touching what the job decides: any change starts an attempt over.
    let churning = true;
    let revisions = 0;
    const churn = (async () => {
      for (let n = 0; churning; n++) {
        const purposes = realisticPolicy().platformUse.purposes.map((p) => (p.stableId === "analytics" ? { ...p, name: `${p.name} ${n % 2}` } : p));
        const written = await call("PUT", "/config/platform-use", { purposes });
        assert.equal(written.status, 200, JSON.stringify(written.body));
        revisions++;
      }
    })();
    try {
      const uploaded = await upload("service", "text/csv", text);
      assert.equal(uploaded.status, 200, JSON.stringify(uploaded.body));
      let progress: Body = { status: "running" };
      for (let i = 0; i < 900 && progress.status === "running"; i++) {
        await sleep(100);
        progress = (await call("GET", `/redact/progress?jobName=${uploaded.body.jobName}`)).body;
      }
      const stats = (await call("GET", `/redact/stats?jobName=${uploaded.body.jobName}`)).body;
      assert.equal(stats.status, "failed", `after ${revisions} revisions: ${JSON.stringify(stats).slice(0, 300)}`);
      assert.equal(stats.error.code, "CONFIG_CHANGED");
      assert.match(stats.error.message, /changed during 6 attempts/);
      assert.equal(stats.attempts, 6, "the first attempt and 5 restarts");
    } finally {
      churning = false;
      await churn;
      assert.equal((await call("PUT", "/config/platform-use", { purposes: realisticPolicy().platformUse.purposes })).status, 200);
    }
  });

  test("jobs are listed newest first, and DELETE removes a job and its documents", async () => {
    const accepted = await upload("service", "text/csv", "users.id,users.email\naccepted,a@x\n");
    await finished(accepted.body.jobName);
    const listed = (await call("GET", "/redact/jobs?status=complete")).body.jobs as Body[];
    assert.ok(listed.some((job) => job.jobName === accepted.body.jobName));
    assert.ok(listed.every((job, i) => i === 0 || listed[i - 1].createdAt >= job.createdAt));
    assert.ok(listed[0].expiresAt > listed[0].finishedAt, "finished jobs carry their expiry");
    const removed = await call("DELETE", `/redact/document?jobName=${accepted.body.jobName}`);
    assert.deepEqual(removed.body, { jobName: accepted.body.jobName, deleted: true, status: "complete" });
    assert.equal((await call("GET", `/redact/stats?jobName=${accepted.body.jobName}`)).body.error.code, "ERR_REDACT_JOB_NOT_FOUND");
    assert.equal((await call("GET", `/redact/document?jobName=${accepted.body.jobName}`)).status, 404);
    assert.equal((await call("DELETE", `/redact/document?jobName=${accepted.body.jobName}`)).status, 404);
  });
});
