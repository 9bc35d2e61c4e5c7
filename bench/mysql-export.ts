// Benchmarks of a MySQL export (issue 21), against baselines in the same run:
// 1. A mysql2 point-select load with prepared statements (8 connections, each one statement at a
//    time): directly against MariaDB, through a Node.js proxy that only copies bytes (the floor for
//    any proxy on Node's loop), through the export. Interleaved rounds, medians.
// 2. Rows per second of a large SELECT read with mysql2 through the export vs directly.
import { fork, type ChildProcess } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import mysql from "mysql2/promise";
import { MariaDbServer } from "../testkit/mariadb";
import { freePort } from "../testkit/ports";
import { firstSuccess } from "../testkit/wait";
import { startBenchNode } from "./http-load";
import { reportFigure } from "./report";

const seconds = Number(process.env.BENCH_SECONDS ?? 10);
const rows = Number(process.env.BENCH_ROWS ?? 1_000_000);
const tableRows = 10_000;
const connections = 8;
const rounds = Number(process.env.BENCH_ROUNDS ?? 3);
const warmUpSeconds = Number(process.env.BENCH_WARMUP_SECONDS ?? 3);
const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

/** The byte-copying Node.js proxy (bench/tcp-pipe-proxy.ts) in a process of its own, in front of `targetPort`. */
async function startPipeProxy(targetPort: number): Promise<{ port: number; child: ChildProcess }> {
  const port = await freePort();
  const child = fork(join(__dirname, "tcp-pipe-proxy.js"), [String(port), String(targetPort)], { stdio: "ignore" });
  await new Promise((resolve, reject) => child.once("message", resolve).once("exit", reject));
  return { port, child };
}

/** Prepared point selects per second over `connections` mysql2 connections for `duration` seconds. */
async function pointSelects(options: mysql.ConnectionOptions, duration: number): Promise<number> {
  const pool = await Promise.all(Array.from({ length: connections }, () => mysql.createConnection(options)));
  let done = 0;
  let kept = 0;
  const until = Date.now() + duration * 1000;
  await Promise.all(
    pool.map(async (c) => {
      while (Date.now() < until) {
        const [result] = await c.execute("SELECT id, email, name FROM users WHERE pk = ?", [1 + Math.floor(Math.random() * tableRows)]);
        kept += (result as unknown[]).length;
        done++;
      }
    }),
  );
  await Promise.all(pool.map((c) => c.end()));
  if (kept !== done) throw new Error(`${done - kept} point selects returned no row: the bench would measure dropped rows`);
  return done / duration;
}

/** Rows per second of reading `sql` whole with mysql2 (rows streamed, not kept). */
async function readAll(options: mysql.ConnectionOptions, sql: string): Promise<{ perSecond: number; count: number }> {
  const c = await mysql.createConnection(options);
  const started = process.hrtime.bigint();
  let count = 0;
  // The callback API's query stream: rows one by one, none kept.
  const raw = (c as unknown as { connection: import("mysql2").Connection }).connection;
  await new Promise<void>((resolve, reject) => {
    raw
      .query(sql)
      .stream()
      .on("data", () => count++)
      .on("end", resolve)
      .on("error", reject);
  });
  const elapsed = Number(process.hrtime.bigint() - started) / 1e9;
  await c.end();
  return { perSecond: count / elapsed, count };
}

/** A process's resident set, in MiB (VmRSS from /proc). */
function rssMiB(pid: number): number {
  const line = readFileSync(`/proc/${pid}/status`, "utf8").match(/^VmRSS:\s+(\d+) kB/m);
  return line ? Number(line[1]) / 1024 : Number.NaN;
}

/**
 * A client that reads a large result slowly (a pause of 50 ms every 2,000 rows) through the
 * export for `duration` seconds, then hangs up: the RSS before and its peak meanwhile (sampled
 * every 100 ms) of this process, which runs the node (startBenchNode) and the client. The
 * proxy's backpressure should keep it flat.
 */
async function slowReader(
  options: mysql.ConnectionOptions,
  sql: string,
  pid: number,
  duration: number,
): Promise<{ before: number; peak: number; rows: number }> {
  const before = rssMiB(pid);
  let peak = before;
  const sampler = setInterval(() => (peak = Math.max(peak, rssMiB(pid))), 100);
  const c = await mysql.createConnection(options);
  const raw = (c as unknown as { connection: import("mysql2").Connection }).connection;
  let count = 0;
  await new Promise<void>((resolve) => {
    const stream = raw.query(sql).stream();
    const stop = setTimeout(() => {
      stream.destroy();
      resolve();
    }, duration * 1000);
    stream.on("data", () => {
      if (++count % 2000 !== 0) return;
      stream.pause();
      setTimeout(() => stream.resume(), 50);
    });
    stream.on("end", () => (clearTimeout(stop), resolve()));
    stream.on("error", () => (clearTimeout(stop), resolve()));
  });
  clearInterval(sampler);
  c.destroy();
  return { before, peak, rows: count };
}

async function main(): Promise<void> {
  const db = await MariaDbServer.start({ database: "bench" });
  // A failed run must not leave MariaDB, the node's embedded nats-server or the byte copier running: they outlive this process.
  let stopNode: (() => Promise<void>) | undefined;
  try {
    await measure(db, (stop) => (stopNode = stop));
  } finally {
    await stopNode?.();
    await db.stop();
  }
}

async function measure(db: MariaDbServer, onNodeStarted: (stop: () => Promise<void>) => void): Promise<void> {
  const admin = await mysql.createConnection({ ...db.connectionOptions, multipleStatements: true });
  // The point selects read the first rows, all the bench user's (allowed): the export keeps each, so the figures compare like with
  // like. Past them, every other row is nobody's: the large SELECT reads them all and the export drops those.
  await admin.query(`
    CREATE TABLE users (pk INT PRIMARY KEY, id VARCHAR(40), email VARCHAR(80), name VARCHAR(80), login VARCHAR(80), clicks DOUBLE);
    INSERT INTO users SELECT seq, IF(seq <= ${tableRows} OR seq % 2 = 0, 'bench-user', 'nobody'), CONCAT('user', seq, '@example.com'), CONCAT('Name ', seq), CONCAT('login', seq), seq / 3 FROM seq_1_to_${Math.max(rows, tableRows)};
  `);
  await admin.end();
  const { node, base } = await startBenchNode();
  onNodeStarted(() => node.stop());
  const exportPort = await freePort();
  const created = await fetch(`${base}/export`, {
    method: "PUT",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({
      type: "mysql",
      endpoint: `127.0.0.1:${db.port}`,
      resolverGroup: "users-table",
      metadata: { type: "platformUse", purposeId: "service" },
      port: exportPort,
    }),
  });
  if (created.status !== 200) throw new Error(`PUT /export: ${created.status} ${await created.text()}`);
  const pipe = await startPipeProxy(db.port);
  process.once("exit", () => pipe.child.kill());
  const options = (port: number): mysql.ConnectionOptions => ({ ...db.connectionOptions, port });
  await (await firstSuccess(() => mysql.createConnection(options(exportPort)), 10_000)).end();
  const paths = { direct: db.port, pipe: pipe.port, export: exportPort } as const;
  const measured: Record<keyof typeof paths, number[]> = { direct: [], pipe: [], export: [] };
  for (const [name, port] of Object.entries(paths)) {
    await pointSelects(options(port), warmUpSeconds);
    process.stdout.write(`warm-up ${name} done\n`);
  }
  for (let round = 0; round < rounds; round++) {
    for (const [name, port] of Object.entries(paths) as Array<[keyof typeof paths, number]>) {
      const qps = await pointSelects(options(port), seconds);
      measured[name].push(qps);
      process.stdout.write(`round ${round + 1} ${name}: ${Math.round(qps)} point selects/s\n`);
    }
  }
  const direct = median(measured.direct);
  const piped = median(measured.pipe);
  const exported = median(measured.export);
  const qps = (value: number) => `${Math.round(value).toLocaleString("en")} q/s`;
  reportFigure({
    figure: "mysql2 prepared point selects through a MySQL export vs directly (8 connections)",
    measured: qps(exported),
    baseline: qps(direct),
    ratio: exported / direct,
    target: ">= 0.6x",
    met: exported / direct >= 0.6,
  });
  reportFigure({
    figure: "mysql2 prepared point selects through a MySQL export vs a byte-copying Node proxy",
    measured: qps(exported),
    baseline: qps(piped),
    ratio: exported / piped,
    target: ">= 0.8x",
    met: exported / piped >= 0.8,
  });

  // About half the rows are the bench user's (kept), half nobody's (dropped).
  const sql = "SELECT id, email, name, login, clicks FROM users";
  const straight = await readAll(options(db.port), sql);
  const throughRows = await readAll(options(exportPort), sql);
  const rowsPerSecond = (value: number) => `${Math.round(value).toLocaleString("en")} rows/s`;
  process.stdout.write(`large SELECT: directly ${straight.count} rows, through the export ${throughRows.count} rows sent\n`);
  // Rows read from the backend per second (the export reads all, sends half).
  const exportRate = (throughRows.perSecond * straight.count) / Math.max(1, throughRows.count);
  reportFigure({
    figure: `${rows.toLocaleString("en")}-row SELECT through a MySQL export vs directly (rows read from MariaDB per second, half dropped)`,
    measured: rowsPerSecond(exportRate),
    baseline: rowsPerSecond(straight.perSecond),
    ratio: exportRate / straight.perSecond,
    target: ">= 0.5x",
    met: exportRate / straight.perSecond >= 0.5,
  });
  const slow = await slowReader(options(exportPort), sql, process.pid, seconds * 2);
  process.stdout.write(
    `slow reader: ${slow.rows} rows in ${seconds * 2} s; process RSS (node and client) ${slow.before.toFixed(0)} MiB before, ${slow.peak.toFixed(0)} MiB at most while it read\n`,
  );
  pipe.child.kill();
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    process.stderr.write(`${(error as Error).stack ?? error}\n`);
    process.exit(1);
  },
);
