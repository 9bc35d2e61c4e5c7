// What more than one event loop would give a PostgreSQL export (issue 6): pgbench select-only,
// 8 clients, through one proxy process, then through two proxy processes with 4 clients each at
// the same time, alternating. The proxy is PostgresExportServer alone, each in its own process,
// with a decider that allows every account (no node, no NATS): only the proxy's event loop
// differs between the two. Prints TPS and the proxy processes' CPU per transaction.
// BENCH_SECONDS (default 10) per run, BENCH_ROUNDS (default 3).
import { reportFigure } from "./report";
import { fork, type ChildProcess } from "node:child_process";
import { readFileSync } from "node:fs";
import { PostgresExportServer } from "../proxies/postgres/server";
import { defaultProxyLimits } from "../proxies/postgres/types";
import type { MappedField, RowDecider, RowVerdict } from "../exports/row-decider";
import { freePort } from "../testkit/ports";
import { pgbench, selectScript, startPgbenchDatabase } from "./pgbench";

const seconds = Number(process.env.BENCH_SECONDS ?? 10);
const rounds = Number(process.env.BENCH_ROUNDS ?? 3);
const accounts = 10_000;

/** Every account allowed `usage`: `aid` names the user, `abalance` is in `usage`. */
function allowEveryAccount(): RowDecider {
  const field = (recordField: string, resourceOrder: number): [string, MappedField] => [recordField, { recordField, category: "usage", resourceOrder }];
  const mapping = { key: "bench", fields: new Map([field("pgbench_accounts.aid", 0), field("pgbench_accounts.abalance", -1)]) };
  const allowed: RowVerdict = { allowed: true, reason: "BENCH", categories: new Set(["usage"]) };
  return { mapping: () => mapping, verdict: () => allowed, expiresAt: () => Number.POSITIVE_INFINITY, load: () => Promise.resolve() };
}

/** A proxy process: `serve <port> <backend port>`; tells its parent when it listens. */
async function serve(port: number, backendPort: number): Promise<void> {
  await PostgresExportServer.listen({
    exportId: "bench",
    host: "127.0.0.1",
    port,
    backend: { host: "127.0.0.1", port: backendPort },
    decider: allowEveryAccount(),
    audit: () => undefined,
    storedAudit: async () => true,
    limits: defaultProxyLimits,
    policy: { allowWrites: false, strict: false },
  });
  process.send?.("listening");
}

/** User and system CPU of a process so far, in microseconds (clock ticks of 10 ms). */
function cpuMicros(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ");
  return (Number(fields[11]) + Number(fields[12])) * 10_000;
}

async function startProxy(backendPort: number): Promise<{ port: number; child: ChildProcess }> {
  const port = await freePort();
  const child = fork(__filename, ["serve", String(port), String(backendPort)]);
  await new Promise((resolve, reject) => child.once("message", resolve).once("exit", reject));
  return { port, child };
}

/** Runs pgbench on each `[port, clients]` at once; returns the TPS of each and the proxies' CPU per transaction. */
async function measure(runs: Array<[port: number, clients: number]>, proxies: ChildProcess[]): Promise<{ tps: number[]; cpuPerTransaction: number }> {
  const script = selectScript(accounts);
  const before = proxies.reduce((sum, p) => sum + cpuMicros(p.pid!), 0);
  const tps = await Promise.all(runs.map(([port, clients]) => pgbench(port, script, { seconds, clients, threads: clients / 4 })));
  const used = proxies.reduce((sum, p) => sum + cpuMicros(p.pid!), 0) - before;
  return { tps, cpuPerTransaction: used / (tps.reduce((a, b) => a + b, 0) * seconds) };
}

async function main(): Promise<void> {
  const pg = await startPgbenchDatabase();
  const proxies: ChildProcess[] = [];
  try {
    const one = await startProxy(pg.port);
    const two = await startProxy(pg.port);
    proxies.push(one.child, two.child);
    console.log(`pgbench select-only, -M prepared, ${seconds} s per run, through the export proxy alone (every account allowed)`);
    for (let round = 0; round < rounds; round++) {
      const single = await measure([[one.port, 8]], [one.child]);
      const split = await measure(
        [
          [one.port, 4],
          [two.port, 4],
        ],
        [one.child, two.child],
      );
      const total = split.tps.reduce((a, b) => a + b, 0);
      console.log(`  one loop, 8 clients:         ${single.tps[0]!.toFixed(0)} TPS, proxy ${single.cpuPerTransaction.toFixed(1)} us CPU per transaction`);
      console.log(
        `  two loops, 4 clients each:   ${split.tps.map((t) => t.toFixed(0)).join(" + ")} = ${total.toFixed(0)} TPS, proxies ${split.cpuPerTransaction.toFixed(1)} us CPU per transaction (${(total / single.tps[0]!).toFixed(2)}x)`,
      );
      // Recorded, no target: how much a second event loop gives the export proxy on this machine.
      if (round === rounds - 1)
        reportFigure({
          figure: "export proxy: two event loops vs one (pgbench, 8 clients)",
          measured: `${total.toFixed(0)} TPS`,
          baseline: `${single.tps[0]!.toFixed(0)} TPS`,
          ratio: total / single.tps[0]!,
          target: "-",
        });
    }
  } finally {
    for (const proxy of proxies) proxy.kill();
    await pg.stop();
  }
}

const [mode, port, backendPort] = process.argv.slice(2);
(mode === "serve" ? serve(Number(port), Number(backendPort)) : main()).catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
