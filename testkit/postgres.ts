import { execFileSync, spawn, spawnSync, type ChildProcess } from "node:child_process";
import { chmodSync, chownSync, existsSync, readdirSync, rmSync, writeFileSync, appendFileSync } from "node:fs";
import { join } from "node:path";
import { freePort } from "./ports";
import { tempDir } from "./temp";

/** The PostgreSQL JDBC driver as Debian installs it (package libpostgresql-jdbc-java). */
export const jdbcJar = "/usr/share/java/postgresql.jar";

/**
 * Who PostgreSQL's programs (postgres, pgbouncer) run as: the `postgres` system user when this
 * process is root (they refuse root), else this process's own user (undefined). The files
 * they own are chowned to it.
 */
export function postgresSystemUser(ownedPaths: readonly string[]): { uid: number; gid: number } | undefined {
  if (process.getuid?.() !== 0) return undefined;
  const user = {
    uid: Number(execFileSync("id", ["-u", "postgres"], { encoding: "utf8" })),
    gid: Number(execFileSync("id", ["-g", "postgres"], { encoding: "utf8" })),
  };
  for (const path of ownedPaths) chownSync(path, user.uid, user.gid);
  return user;
}

/** Directory of PostgreSQL's server programs (Debian keeps them out of PATH). */
export function postgresBinDir(): string {
  const fromPath = spawnSync("pg_config", ["--bindir"], { encoding: "utf8" });
  if (fromPath.status === 0 && existsSync(join(fromPath.stdout.trim(), "initdb"))) return fromPath.stdout.trim();
  const debian = "/usr/lib/postgresql";
  const versions = existsSync(debian)
    ? readdirSync(debian)
        .filter((v) => existsSync(join(debian, v, "bin", "initdb")))
        .sort((a, b) => Number(b) - Number(a))
    : [];
  if (versions.length === 0) throw new Error("PostgreSQL server programs not found: run 'npm test' (it installs them) or apt-get install postgresql");
  return join(debian, versions[0]!, "bin");
}

export interface PostgresServerOptions {
  /** Extra pg_hba.conf lines, before the default scram-sha-256 line for everyone. */
  hba?: string[];
  /** Extra postgresql.conf settings. */
  settings?: Record<string, string>;
}

/**
 * A throwaway PostgreSQL server on a free loopback port, in a temporary directory: superuser
 * `postgres` with password `postgres`, scram-sha-256 for TCP connections. Runs as the
 * `postgres` system user when the tests run as root (the server refuses root).
 */
export class PostgresServer {
  private constructor(
    readonly port: number,
    readonly dir: string,
    private readonly child: ChildProcess,
  ) {}

  static async start(options: PostgresServerOptions = {}): Promise<PostgresServer> {
    const bin = postgresBinDir();
    const dir = tempDir("pg");
    const data = join(dir, "data");
    const pwfile = join(dir, "pw");
    writeFileSync(pwfile, "postgres\n");
    const runAs = postgresSystemUser([dir, pwfile]);
    chmodSync(dir, 0o700);
    const init = spawnSync(
      join(bin, "initdb"),
      ["-D", data, "-U", "postgres", `--pwfile=${pwfile}`, "--auth-local=trust", "--auth-host=scram-sha-256", "-E", "UTF8", "--locale=C", "--no-sync"],
      { encoding: "utf8", ...(runAs ?? {}) },
    );
    if (init.status !== 0) throw new Error(`initdb failed: ${init.stderr}`);
    const hba = join(data, "pg_hba.conf");
    writeFileSync(hba, `${[...(options.hba ?? []), "local all all trust", "host all all 127.0.0.1/32 scram-sha-256"].join("\n")}\n`);
    const port = await freePort();
    const settings = {
      listen_addresses: "'127.0.0.1'",
      port: String(port),
      unix_socket_directories: `'${dir}'`,
      fsync: "off",
      synchronous_commit: "off",
      full_page_writes: "off",
      max_connections: "100",
      ...(options.settings ?? {}),
    };
    appendFileSync(
      join(data, "postgresql.conf"),
      `${Object.entries(settings)
        .map(([k, v]) => `${k} = ${v}`)
        .join("\n")}\n`,
    );
    const child = spawn(join(bin, "postgres"), ["-D", data], { stdio: ["ignore", "ignore", "pipe"], ...(runAs ?? {}) });
    let log = "";
    child.stderr!.on("data", (chunk: Buffer) => (log = (log + chunk.toString()).slice(-8000)));
    const server = new PostgresServer(port, dir, child);
    const until = Date.now() + 30_000;
    for (;;) {
      const ready = spawnSync(join(bin, "pg_isready"), ["-h", "127.0.0.1", "-p", String(port), "-q"]);
      if (ready.status === 0) break;
      if (child.exitCode !== null || Date.now() > until) {
        await server.stop();
        throw new Error(`PostgreSQL did not start: ${log}`);
      }
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    return server;
  }

  /** Runs SQL as the superuser over the server's Unix socket (psql, stopping at the first error). */
  sql(sql: string, database = "postgres"): string {
    const result = spawnSync(
      "psql",
      ["-h", this.dir, "-p", String(this.port), "-U", "postgres", "-d", database, "-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-c", sql],
      { encoding: "utf8" },
    );
    if (result.status !== 0) throw new Error(`psql failed: ${result.stderr}`);
    return result.stdout;
  }

  async stop(): Promise<void> {
    if (this.child.exitCode === null) {
      const exited = new Promise((resolve) => this.child.once("exit", resolve));
      this.child.kill("SIGINT");
      await Promise.race([exited, new Promise((resolve) => setTimeout(resolve, 10_000))]);
      if (this.child.exitCode === null) this.child.kill("SIGKILL");
    }
    rmSync(this.dir, { recursive: true, force: true });
  }
}
