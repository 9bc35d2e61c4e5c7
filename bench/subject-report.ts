import "reflect-metadata";
import pino from "pino";
import type { NatsConnection } from "@nats-io/transport-node";
import { loadConfig } from "../service/config";
import { startServiceNode, type RunningNode } from "../service/node";
import type { NatsServerProcess } from "../service/nats-server";
import type { IndexedEvent } from "../api/subject-rights";
import { emptyEntry, fold } from "../rights/decision-index";
import { IndexBucket } from "../rights/index-bucket";
import { realisticPolicy } from "../testkit/policy";
import { connectTo, startNats } from "../testkit/nats";
import { freePort } from "../testkit/ports";
import { tempDir } from "../testkit/temp";
import { benchRounds, load, type LoadResult } from "./http-load";
import { reportFigure, reqPerSecond } from "./report";

/**
 * The access report over a full decision index, and what keeping the index costs the decision
 * door (issue 25). The index is filled straight into its bucket (not through HTTP): for each of
 * USERS users, RECORDS_PER_USER trace records spread over the last 30 days are folded with the
 * indexer's own `fold` and written as that user's entry, so the bucket holds what the indexer
 * would have made of USERS x RECORDS_PER_USER trace records. Then one user's 30-day report is
 * asked REPORTS times, one at a time, of random users, through HTTP (p99 target < 200 ms); and
 * /decision is loaded on that node (indexer on) and on a second node whose DECISION_INDEX is off,
 * interleaved in BENCH_ROUNDS rounds (target: within 10 %).
 */
const users = Number(process.env.USERS ?? 100_000);
const recordsPerUser = Number(process.env.RECORDS_PER_USER ?? 100);
const reports = Number(process.env.REPORTS ?? 2000);
/** Users with a user record (the report reads the user's state too): the reports pick among them. */
const reportUsers = 1000;
const writeConcurrency = 256;
const dayMs = 86_400_000;

const purposes = [
  { door: "decision", type: "platformUse", purposeId: "service", flow: "platform", categoryIds: ["contact", "identity", "usage"] },
  { door: "redact", type: "platformUse", purposeId: "analytics", flow: "platform", categoryIds: ["usage"] },
  { door: "export", type: "platformUse", purposeId: "personalization", flow: "platform", categoryIds: ["usage", "location"] },
  { door: "decision", type: "platformSharing", purposeId: "payments", thirdPartyId: "payco", flow: "platform", categoryIds: ["contact"] },
];

/** A deterministic generator: the same index every run. */
function random(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state * 1664525 + 1013904223) >>> 0;
    return state / 2 ** 32;
  };
}

function eventsOf(user: number, now: number): IndexedEvent[] {
  const next = random(user + 1);
  const events: IndexedEvent[] = [];
  for (let i = 0; i < recordsPerUser; i++) {
    const purpose = purposes[Math.floor(next() * purposes.length)]!;
    const allowed = next() < 0.85;
    events.push({
      ...purpose,
      ...(purpose.door === "export" ? { exportId: "orders-export" } : {}),
      time: new Date(now - Math.floor(next() * 30 * dayMs)).toISOString(),
      allowed,
      categoryIds: allowed ? purpose.categoryIds : [],
      traceId: `${user.toString(16)}-${i.toString(16)}-0000-0000-000000000000`,
    });
  }
  return events.sort((a, b) => (a.time < b.time ? -1 : 1));
}

async function fillIndex(nc: NatsConnection): Promise<void> {
  const bucket = await IndexBucket.open(nc, 1);
  const now = Date.now();
  const started = performance.now();
  let bytes = 0;
  for (let first = 0; first < users; first += writeConcurrency) {
    await Promise.all(
      Array.from({ length: Math.min(writeConcurrency, users - first) }, async (_, i) => {
        const user = first + i;
        const entry = fold(emptyEntry(), 1, eventsOf(user, now), new Date(now));
        const text = JSON.stringify(entry);
        bytes += text.length;
        await bucket.kv.put(`u.u-${user}`, text);
      }),
    );
    if (first % 10_000 === 0) process.stdout.write(`index: ${first} users written\n`);
  }
  process.stdout.write(
    `index: ${users} users, ${users * recordsPerUser} records folded, ${(bytes / 1024 ** 2).toFixed(0)} MiB of entries, written in ${((performance.now() - started) / 1000).toFixed(1)} s\n`,
  );
}

async function startNode(natsUrl: string, nodeId: string, decisionIndex: "on" | "off"): Promise<{ node: RunningNode; base: string }> {
  const config = loadConfig([], {
    ...process.env,
    PORT: String(await freePort()),
    NATS_URL: natsUrl,
    DATA_DIR: tempDir("bench-rights"),
    NODE_ID: nodeId,
    LOG_LEVEL: "warn",
    DECISION_INDEX: decisionIndex,
  });
  const node = await startServiceNode(config, pino({ level: "warn" }));
  const base = `http://127.0.0.1:${node.gatewayPort}`;
  const put = async (path: string, body?: unknown) => {
    const response = await fetch(`${base}${path}`, {
      method: "PUT",
      ...(body === undefined ? {} : { headers: { "content-type": "application/json" }, body: JSON.stringify(body) }),
    });
    if (!response.ok) throw new Error(`PUT ${path}: ${response.status} ${await response.text()}`);
  };
  await put("/config", realisticPolicy());
  await put("/user", { userId: "bench-user", attributes: { dob: "1990-01-01", location: "US" } });
  await put("/user/terms?userId=bench-user");
  return { node, base };
}

const percentile = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))]!;
const median = (values: number[]) => [...values].sort((a, b) => a - b)[values.length >> 1]!;

async function reportLatency(base: string): Promise<void> {
  for (let user = 0; user < reportUsers; user++) {
    const response = await fetch(`${base}/user`, {
      method: "PUT",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ userId: `u-${user * Math.floor(users / reportUsers)}` }),
    });
    if (!response.ok) throw new Error(`PUT /user: ${response.status}`);
  }
  const next = random(42);
  const ask = async () => {
    const userId = `u-${Math.floor(next() * reportUsers) * Math.floor(users / reportUsers)}`;
    const started = performance.now();
    const response = await fetch(`${base}/user/${userId}/report`);
    const body = (await response.json()) as { decisions?: { total: number } };
    const ms = performance.now() - started;
    if (!response.ok || !body.decisions || body.decisions.total === 0) throw new Error(`report of ${userId}: ${response.status} ${JSON.stringify(body)}`);
    return ms;
  };
  for (let i = 0; i < 100; i++) await ask(); // warm-up
  const samples: number[] = [];
  for (let i = 0; i < reports; i++) samples.push(await ask());
  samples.sort((a, b) => a - b);
  const p99 = percentile(samples, 0.99);
  process.stdout.write(
    `report: ${reports} reports of random users: median ${percentile(samples, 0.5).toFixed(1)} ms, p99 ${p99.toFixed(1)} ms, max ${samples.at(-1)!.toFixed(1)} ms\n`,
  );
  reportFigure({
    figure: `one user's 30-day access report, p99 (index of ${users.toLocaleString("en")} users, ${(users * recordsPerUser).toLocaleString("en")} records)`,
    measured: `${p99.toFixed(1)} ms`,
    baseline: "-",
    ratio: p99 / 200,
    target: "< 200 ms",
    met: p99 < 200,
  });
}

async function decisionCost(withIndex: string, withoutIndex: string): Promise<void> {
  const body = JSON.stringify({ userId: "bench-user", type: "platformUse", purposeId: "service" });
  await load(`${withIndex}/decision`, body);
  await load(`${withoutIndex}/decision`, body);
  const on: LoadResult[] = [];
  const off: LoadResult[] = [];
  for (let round = 1; round <= benchRounds; round++) {
    const order = round % 2 ? [true, false] : [false, true];
    for (const indexed of order) (indexed ? on : off).push(await load(`${indexed ? withIndex : withoutIndex}/decision`, body));
    process.stdout.write(`round ${round}: index on ${Math.round(on.at(-1)!.requests)} req/s, off ${Math.round(off.at(-1)!.requests)} req/s\n`);
  }
  const [rateOn, rateOff] = [median(on.map((r) => r.requests)), median(off.map((r) => r.requests))];
  const failures = on.concat(off).reduce((n, r) => n + r.errors + r.non2xx, 0);
  process.stdout.write(
    `decision: median with the index ${Math.round(rateOn)} req/s, without ${Math.round(rateOff)} req/s, ratio ${(rateOn / rateOff).toFixed(3)} (failures ${failures})\n`,
  );
  reportFigure({
    figure: "/decision throughput with the decision index vs without (same run, 50 connections)",
    measured: reqPerSecond(rateOn),
    baseline: reqPerSecond(rateOff),
    ratio: rateOn / rateOff,
    target: ">= 0.9x",
    met: failures === 0 && rateOn / rateOff >= 0.9,
  });
}

async function main(): Promise<void> {
  const servers: NatsServerProcess[] = [await startNats(), await startNats()];
  const nc = await connectTo(servers[0]!);
  await fillIndex(nc);
  await nc.close();
  const indexed = await startNode(servers[0]!.url, "bench-index-on", "on");
  const plain = await startNode(servers[1]!.url, "bench-index-off", "off");
  try {
    await reportLatency(indexed.base);
    await decisionCost(indexed.base, plain.base);
  } finally {
    await indexed.node.stop();
    await plain.node.stop();
    for (const server of servers) await server.stop();
  }
}

main().catch((error: unknown) => {
  process.stderr.write(`bench failed: ${(error as Error).stack ?? String(error)}\n`);
  process.exit(1);
});
