import { spawn, type ChildProcess } from "node:child_process";
import { createWriteStream, mkdirSync, readFileSync } from "node:fs";
import { httpsRequest } from "./https";
import { join } from "node:path";
import { freePort } from "./ports";
import { tempDir } from "./temp";
import { nodeEnvironment } from "../service/node-flags";

const root = join(__dirname, "..", "..");
export const mainScript = join(root, "dist", "service", "main.js");
export const counterModule = join(root, "dist", "testkit", "counter-actor.js");
export const artifactsDir = join(root, "test-artifacts");

export interface NodeProcessOptions {
  nodeId: string;
  /** The NATS to join; absent means the node starts its embedded nats-server (set NATS_PORT in env). */
  natsUrl?: string;
  env?: Record<string, string>;
  dataDir?: string;
  /** The gateway serves HTTPS (TLS_CERT_FILE in env) with a certificate this CA file verifies. */
  caFile?: string;
  /** Its own process group, as a shell gives a foreground job: signalGroup() then reaches it and everything it did not move out. */
  ownProcessGroup?: boolean;
  /** Node/V8 flags before the script (e.g. --trace-gc for a bench that counts collections). */
  execArgv?: string[];
  /** How long start() waits for the node to be ready (default 30 s). */
  readyTimeoutMs?: number;
}

/**
 * A real node process (`node dist/service/main.js`) as an operator starts it, with the test
 * counter actors loaded. Its log is kept in memory and written under test-artifacts/.
 */
export class NodeProcess {
  readonly lines: string[] = [];
  private exitPromise: Promise<number | null>;

  private constructor(
    readonly options: NodeProcessOptions,
    readonly port: number,
    readonly child: ChildProcess,
  ) {
    this.exitPromise = new Promise((resolve) => child.once("exit", (code) => resolve(code)));
  }

  static async start(options: NodeProcessOptions): Promise<NodeProcess> {
    const port = await freePort();
    mkdirSync(artifactsDir, { recursive: true });
    const { NATS_URL: _inherited, ...inheritedEnv } = process.env;
    const child = spawn(process.execPath, [...(options.execArgv ?? []), mainScript], {
      env: {
        // As deployed (service/node-flags.ts); this process's own environment can override it.
        ...nodeEnvironment,
        ...inheritedEnv,
        ...(options.natsUrl ? { NATS_URL: options.natsUrl } : {}),
        PORT: String(port),
        NODE_ID: options.nodeId,
        DATA_DIR: options.dataDir ?? tempDir(options.nodeId),
        LOG_LEVEL: "debug",
        ACTOR_MODULES: counterModule,
        HEARTBEAT_MS: "500",
        LEASE_TTL_MS: "2000",
        // JetStream refuses to start a node whose reservations exceed the free disk: the 8 GiB
        // production default for documents would make the suite depend on the machine's disk.
        REDACT_STORAGE_MAX_BYTES: String(2 * 1024 ** 3),
        REDACT_MAX_DOCUMENT_BYTES: String(1024 ** 3),
        ...options.env,
      },
      stdio: ["ignore", "pipe", "pipe"],
      detached: options.ownProcessGroup ?? false,
    });
    const node = new NodeProcess(options, port, child);
    const artifact = createWriteStream(join(artifactsDir, `${options.nodeId}-${Date.now()}.log`));
    const keep = (chunk: Buffer) => {
      artifact.write(chunk);
      node.lines.push(...chunk.toString("utf8").split("\n").filter(Boolean));
    };
    child.stdout!.on("data", keep);
    child.stderr!.on("data", keep);
    child.once("exit", () => artifact.end());
    try {
      await node.waitReady(options.readyTimeoutMs);
    } catch (error) {
      await node.kill(); // never leave a process behind: it would keep the test run alive
      throw error;
    }
    return node;
  }

  /** Starts several nodes at once; if any fails, the others are stopped (a leaked process keeps the test run alive). */
  static async startAll(options: NodeProcessOptions[]): Promise<NodeProcess[]> {
    const outcomes = await Promise.allSettled(options.map((o) => NodeProcess.start(o)));
    const failed = outcomes.find((o) => o.status === "rejected");
    if (failed) {
      await Promise.all(outcomes.map((o) => (o.status === "fulfilled" ? o.value.kill() : undefined)));
      throw (failed as PromiseRejectedResult).reason;
    }
    return outcomes.map((o) => (o as PromiseFulfilledResult<NodeProcess>).value);
  }

  get url(): string {
    return `${this.options.caFile ? "https" : "http"}://127.0.0.1:${this.port}`;
  }

  get nodeId(): string {
    return this.options.nodeId;
  }

  async readiness(): Promise<{ status: number; body: { checks?: { partitions?: { detail?: { ownedHere?: number } } } } }> {
    if (this.options.caFile) {
      const answer = await httpsRequest(`${this.url}/readyz`, { ca: readFileSync(this.options.caFile) });
      return { status: answer.status, body: JSON.parse(answer.body) as never };
    }
    const response = await fetch(`${this.url}/readyz`);
    return { status: response.status, body: (await response.json()) as never };
  }

  async waitReady(timeoutMs = 30_000): Promise<void> {
    const until = Date.now() + timeoutMs;
    let last = "no answer";
    while (Date.now() < until) {
      if (this.child.exitCode !== null) throw new Error(`node ${this.nodeId} exited with ${this.child.exitCode}: ${this.lines.slice(-5).join("\n")}`);
      try {
        const readiness = await this.readiness();
        if (readiness.status === 200) return;
        last = JSON.stringify(readiness.body);
      } catch {
        // not listening yet
      }
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    throw new Error(`node ${this.nodeId} not ready after ${timeoutMs} ms; last readiness: ${last}; last log lines: ${this.lines.slice(-3).join("\n")}`);
  }

  /** Graceful stop (SIGTERM): resolves with the exit code. A node that has not exited 15 s later is killed (null): none outlives its test. */
  async stop(): Promise<number | null> {
    if (this.child.exitCode === null && this.child.signalCode === null) this.child.kill("SIGTERM");
    const timer = setTimeout(() => this.child.kill("SIGKILL"), 15_000);
    try {
      return await this.exitPromise;
    } finally {
      clearTimeout(timer);
    }
  }

  /** The exit code once the node exits by itself (after a signal sent otherwise); killed (null) if it has not within timeoutMs. */
  async exited(timeoutMs = 15_000): Promise<number | null> {
    const timer = setTimeout(() => this.child.kill("SIGKILL"), timeoutMs);
    try {
      return await this.exitPromise;
    } finally {
      clearTimeout(timer);
    }
  }

  async kill(): Promise<void> {
    this.child.kill("SIGKILL");
    await this.exitPromise;
  }

  signal(signal: NodeJS.Signals): void {
    this.child.kill(signal);
  }

  /** Signals the node's whole process group, as Ctrl-C at a terminal does (needs ownProcessGroup). */
  signalGroup(signal: NodeJS.Signals): void {
    if (!this.options.ownProcessGroup) throw new Error("signalGroup needs ownProcessGroup");
    process.kill(-this.child.pid!, signal);
  }

  /** Resolves once a log line matches (false if the node exited or timeoutMs passed first). /readyz answers before the start's last audits: wait for "node ready to serve" before signalling a node whose drain a test checks (a signal earlier stops it once started). */
  async waitLogged(pattern: RegExp, timeoutMs = 10_000): Promise<boolean> {
    const until = Date.now() + timeoutMs;
    while (!this.logged(pattern)) {
      if (this.child.exitCode !== null || Date.now() > until) return false;
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    return true;
  }

  logged(pattern: RegExp): boolean {
    return this.lines.some((line) => pattern.test(line));
  }
}
