import type { ChildProcess } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createConnection, createServer } from "node:net";
import { join } from "node:path";
import type { Logger } from "pino";
import { findExecutable } from "./find-executable";
import { spawnInOwnProcessGroup } from "./own-process-group";
import { StartupError } from "./startup-error";

export interface NatsServerOptions {
  host: string;
  port: number;
  /** Directory for the server's configuration, pid file and JetStream storage. */
  dir: string;
  serverName: string;
  /** Route to other servers to form a NATS cluster (JetStream replicas need three). */
  cluster?: { name: string; port: number; routes: string[] };
  /**
   * The one token clients must present; absent: no client authentication (tests' throwaway servers).
   * It reaches the server through its environment, never its configuration file.
   */
  token?: string;
  /** PEM certificate and key: clients must speak TLS (tests of NATS_TLS_CA_FILE). */
  tls?: { certFile: string; keyFile: string };
  log?: Logger;
}

/** The environment variable the server's configuration reads the client token from. */
const tokenVariable = "WARDEN_NATS_TOKEN";

export function findNatsServer(env: NodeJS.ProcessEnv = process.env): string | undefined {
  if (env.NATS_SERVER_BIN) return existsSync(env.NATS_SERVER_BIN) ? env.NATS_SERVER_BIN : undefined;
  return findExecutable("nats-server", env);
}

function portIsFree(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const probe = createServer();
    probe.once("error", () => resolve(false));
    probe.listen(port, host, () => probe.close(() => resolve(true)));
  });
}

function accepts(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = createConnection({ host, port });
    socket.once("connect", () => {
      socket.destroy();
      resolve(true);
    });
    socket.once("error", () => resolve(false));
  });
}

/** Whether a process with this pid exists and has not exited (a zombie waiting to be reaped by whoever adopted it has). */
export function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0); // signal 0 probes without signalling
  } catch {
    return false;
  }
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return stat[stat.lastIndexOf(")") + 2] !== "Z";
  } catch {
    return true; // no /proc: the probe above is all there is
  }
}

async function waitForExit(pid: number, ms: number): Promise<boolean> {
  const until = Date.now() + ms;
  while (Date.now() < until) {
    if (!isRunning(pid)) return true;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return !isRunning(pid);
}

/** nats-server configuration syntax accepts JSON values; quoting every string keeps paths safe. */
function configText(options: NatsServerOptions, storeDir: string): string {
  const lines = [
    `server_name: ${JSON.stringify(options.serverName)}`,
    `listen: ${JSON.stringify(`${options.host}:${options.port}`)}`,
    "max_payload: 8388608",
    `jetstream { store_dir: ${JSON.stringify(storeDir)} }`,
  ];
  if (options.token) lines.push(`authorization { token: $${tokenVariable} }`);
  if (options.tls) lines.push(`tls { cert_file: ${JSON.stringify(options.tls.certFile)}, key_file: ${JSON.stringify(options.tls.keyFile)} }`);
  if (options.cluster) {
    lines.push(
      `cluster { name: ${JSON.stringify(options.cluster.name)}, listen: ${JSON.stringify(`${options.host}:${options.cluster.port}`)}, routes: ${JSON.stringify(options.cluster.routes)} }`,
    );
  }
  return `${lines.join("\n")}\n`;
}

/**
 * A nats-server child process with JetStream: the embedded default of a node, and the
 * throwaway servers of tests and benchmarks.
 */
export class NatsServerProcess {
  private recentOutput: string[] = [];

  private constructor(
    private readonly child: ChildProcess,
    readonly options: NatsServerOptions,
    private readonly pidFile: string,
  ) {}

  get url(): string {
    return `nats://${this.options.host}:${this.options.port}`;
  }

  /** Where the client token of this start is kept while the server runs (mode 0600). */
  get tokenFile(): string {
    return join(this.options.dir, "client.token");
  }

  get pid(): number {
    return this.child.pid!;
  }

  static async start(options: NatsServerOptions): Promise<NatsServerProcess> {
    const binary = findNatsServer();
    if (!binary)
      throw new StartupError(
        "nats-server is not installed: run 'npm start' (it installs it) or 'sudo apt-get install nats-server', or set NATS_URL to join an existing NATS",
      );
    mkdirSync(options.dir, { recursive: true });
    const pidFile = join(options.dir, "nats-server.pid");
    await NatsServerProcess.stopOrphan(pidFile, options.log);
    if (!(await portIsFree(options.host, options.port))) {
      throw new StartupError(
        `port ${options.port} on ${options.host} is in use, so the embedded nats-server cannot start: set NATS_PORT to a free port, or NATS_URL to join the NATS already there`,
      );
    }
    if (options.cluster && !(await portIsFree(options.host, options.cluster.port))) {
      throw new StartupError(`cluster port ${options.cluster.port} on ${options.host} is in use`);
    }
    const configFile = join(options.dir, "nats-server.conf");
    writeFileSync(configFile, configText(options, join(options.dir, "jetstream")));
    // Its own process group: Ctrl-C at a terminal signals the whole foreground group, and the
    // server must outlive the node's drain (the node stops it last), not die beside it.
    const env = options.token ? { ...process.env, [tokenVariable]: options.token } : process.env;
    const child = spawnInOwnProcessGroup(binary, ["-c", configFile], { stdio: ["ignore", "pipe", "pipe"], env });
    const server = new NatsServerProcess(child, options, pidFile);
    const remember = (chunk: Buffer) => {
      for (const line of chunk.toString("utf8").split("\n").filter(Boolean)) {
        server.recentOutput.push(line);
        if (server.recentOutput.length > 20) server.recentOutput.shift();
        options.log?.debug({ natsServer: options.serverName }, line);
      }
    };
    child.stdout!.on("data", remember);
    child.stderr!.on("data", remember);
    writeFileSync(pidFile, String(child.pid));
    if (options.token) {
      // For the node's operator and tools (nats CLI) only: readable by the node's OS user alone.
      rmSync(server.tokenFile, { force: true });
      writeFileSync(server.tokenFile, options.token, { mode: 0o600 });
    }
    await server.waitUntilAccepting();
    return server;
  }

  /** A node killed with SIGKILL where perl is missing (no death signal, see own-process-group.ts) leaves its nats-server running; the next start stops it. */
  private static async stopOrphan(pidFile: string, log?: Logger): Promise<void> {
    if (!existsSync(pidFile)) return;
    const pid = Number(readFileSync(pidFile, "utf8"));
    rmSync(pidFile, { force: true });
    if (!Number.isInteger(pid) || pid <= 0 || !isRunning(pid)) return;
    let cmdline = "";
    try {
      cmdline = readFileSync(`/proc/${pid}/cmdline`, "utf8");
    } catch {
      return;
    }
    if (!cmdline.includes("nats-server")) return;
    log?.warn({ pid }, "stopping a nats-server left behind by an earlier run of this node");
    process.kill(pid, "SIGTERM");
    if (!(await waitForExit(pid, 10_000))) process.kill(pid, "SIGKILL");
  }

  private async waitUntilAccepting(): Promise<void> {
    const until = Date.now() + 20_000;
    let exited = false;
    this.child.once("exit", () => (exited = true));
    while (Date.now() < until) {
      if (exited) break;
      if (await accepts(this.options.host, this.options.port)) return;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    this.child.kill("SIGKILL");
    const last = this.recentOutput.filter((line) => /\[(ERR|FTL)\]|error/i.test(line)).pop() ?? this.recentOutput.at(-1) ?? "no output";
    throw new StartupError(`the embedded nats-server did not start (${last.trim()}); check ${this.options.dir}`);
  }

  /** Stops the server gracefully (it flushes JetStream), killing it if it does not exit in time. */
  async stop(): Promise<void> {
    if (this.child.exitCode !== null || this.child.signalCode !== null) return;
    const exited = new Promise<void>((resolve) => this.child.once("exit", () => resolve()));
    this.child.kill("SIGTERM");
    const timer = setTimeout(() => this.child.kill("SIGKILL"), 10_000);
    await exited;
    clearTimeout(timer);
    rmSync(this.pidFile, { force: true });
    rmSync(this.tokenFile, { force: true });
  }

  /** Sends a signal as-is (tests: SIGKILL, SIGSTOP, SIGCONT). */
  signal(signal: NodeJS.Signals): void {
    this.child.kill(signal);
  }
}
