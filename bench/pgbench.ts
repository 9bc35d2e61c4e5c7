// pgbench and its database, for the PostgreSQL export benchmarks.
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { freePort } from "../testkit/ports";
import { PostgresServer, postgresSystemUser } from "../testkit/postgres";
import { tempDir } from "../testkit/temp";

/** The role every benchmark path logs in as (trusted: authentication is not measured). */
export const benchRole = "benchuser";

/** A throwaway PostgreSQL with database `app` initialised by `pgbench -i -s 1`, readable by `benchRole`. */
export async function startPgbenchDatabase(): Promise<PostgresServer> {
  const pg = await PostgresServer.start({ hba: [`host all ${benchRole} 127.0.0.1/32 trust`], settings: { shared_buffers: "'256MB'" } });
  pg.sql("CREATE DATABASE app");
  pg.sql(`CREATE ROLE ${benchRole} LOGIN`);
  const init = spawnSync("pgbench", ["-i", "-q", "-s", "1", "-h", "127.0.0.1", "-p", String(pg.port), "-U", "postgres", "app"], {
    encoding: "utf8",
    env: { ...process.env, PGPASSWORD: "postgres" },
  });
  if (init.status !== 0) throw new Error(init.stderr);
  pg.sql(`GRANT SELECT ON ALL TABLES IN SCHEMA public TO ${benchRole}`, "app");
  return pg;
}

/** PgBouncer in session mode in front of the server, run as the postgres user (it refuses root). */
export async function startPgBouncer(pgPort: number): Promise<{ port: number; child: ChildProcess }> {
  const dir = tempDir("pgbouncer");
  const port = await freePort();
  const ini = join(dir, "pgbouncer.ini");
  const users = join(dir, "users.txt");
  writeFileSync(users, `"${benchRole}" ""\n`);
  writeFileSync(
    ini,
    [
      "[databases]",
      `app = host=127.0.0.1 port=${pgPort} dbname=app`,
      "[pgbouncer]",
      "listen_addr = 127.0.0.1",
      `listen_port = ${port}`,
      `unix_socket_dir = ${dir}`,
      "auth_type = trust",
      `auth_file = ${users}`,
      "pool_mode = session",
      "max_client_conn = 100",
      "default_pool_size = 20",
      `logfile = ${join(dir, "log")}`,
      "",
    ].join("\n"),
  );
  const runAs = postgresSystemUser([dir, ini, users]);
  const child = spawn("pgbouncer", [ini], { stdio: "ignore", ...(runAs ?? {}) });
  await new Promise((resolve) => setTimeout(resolve, 500));
  return { port, child };
}

/** The custom select-only script: `aid, abalance` of a random aid in 1..accounts. Returns its path. */
export function selectScript(accounts: number): string {
  const script = join(tempDir("bench-pgbench"), "select.sql");
  writeFileSync(script, `\\set aid random(1, ${accounts})\nSELECT aid, abalance FROM pgbench_accounts WHERE aid = :aid;\n`);
  return script;
}

/** TPS of pgbench with `script` (-M prepared unless `run.mode` says otherwise), in its own process (asynchronously: what it measures may run in this one). */
export function pgbench(
  port: number,
  script: string,
  run: { seconds: number; clients: number; threads: number; mode?: "prepared" | "simple"; env?: Record<string, string> },
): Promise<number> {
  return new Promise((resolve, reject) => {
    const child = spawn(
      "pgbench",
      [
        "-n",
        "-h",
        "127.0.0.1",
        "-p",
        String(port),
        "-U",
        benchRole,
        "-f",
        script,
        "-M",
        run.mode ?? "prepared",
        "-c",
        String(run.clients),
        "-j",
        String(run.threads),
        "-T",
        String(run.seconds),
        "app",
      ],
      { stdio: ["ignore", "pipe", "pipe"], env: { ...process.env, ...run.env } },
    );
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
    child.once("error", reject);
    child.once("exit", (code) => {
      const tps = /tps = ([\d.]+) \(without initial connection time\)/.exec(stdout);
      if (code !== 0 || !tps) reject(new Error(`pgbench on port ${port} failed (${code}): ${stderr.slice(-500)}`));
      else resolve(Number(tps[1]));
    });
  });
}
