import { after, test } from "node:test";
import assert from "node:assert/strict";
import { spawn, spawnSync } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { join } from "node:path";
import { connect } from "@nats-io/transport-node";
import type { AuditRecord } from "../../actors/runtime/event-log";
import { storedMessages } from "../../testkit/nats";
import { findExecutable } from "../../service/find-executable";
import { isRunning } from "../../service/nats-server";
import { mainScript, NodeProcess } from "../../testkit/node-process";
import { freePort } from "../../testkit/ports";
import { tempDir } from "../../testkit/temp";

const started: NodeProcess[] = [];
after(async () => {
  await Promise.all(started.map((node) => node.stop()));
});

test("the embedded default: own nats-server, audited start, real HTTP, clean stop on SIGTERM", async () => {
  const natsPort = await freePort();
  const dataDir = tempDir("embedded");
  const node = await NodeProcess.start({ nodeId: "solo", dataDir, env: { NATS_PORT: String(natsPort) } });
  started.push(node);
  const natsPid = Number(readFileSync(join(dataDir, "nats", "nats-server.pid"), "utf8"));
  assert.ok(isRunning(natsPid), "the embedded nats-server runs as a child");
  assert.ok(existsSync(join(dataDir, "nats", "jetstream")), "JetStream storage lives under the node's data directory");

  const response = await fetch(`${node.url}/export`, { method: "PUT", headers: { "content-type": "application/json" }, body: "{}" });
  assert.equal(response.status, 400);
  assert.equal(((await response.json()) as { error: { code: string } }).error.code, "ERR_REQUEST_INVALID");
  assert.match(response.headers.get("x-request-id") ?? "", /^[0-9a-f-]{36}$/);
  const wrongMethod = await fetch(`${node.url}/user/someone`, { method: "POST" });
  assert.equal(wrongMethod.status, 405, "a known path with a wrong method");
  assert.equal(wrongMethod.headers.get("allow"), "DELETE, GET, HEAD");

  const natsUrl = `nats://127.0.0.1:${natsPort}`;
  const tokenFile = join(dataDir, "nats", "client.token");
  const token = readFileSync(tokenFile, "utf8");
  assert.equal(statSync(tokenFile).mode & 0o777, 0o600, "the token file is the node user's alone");
  assert.ok(!readFileSync(join(dataDir, "nats", "nats-server.conf"), "utf8").includes(token), "the token is not in the server's configuration file");
  // Any local process could call actors directly, around the gateway's authentication: without the token it cannot connect.
  await assert.rejects(connect({ servers: natsUrl, reconnect: false }), /Authorization Violation/i, "no token: refused");
  await assert.rejects(connect({ servers: natsUrl, reconnect: false, token: `${token}x` }), /Authorization Violation/i, "a wrong token: refused");
  const nc = await connect({ servers: natsUrl, token });
  const records = (await storedMessages<AuditRecord>(nc, "WARDEN_AUDIT")).map(({ subject, data }) => ({ subject, record: data }));
  await nc.close();
  const byEvent = (event: string) => records.filter((r) => r.record.event === event);
  const [config] = byEvent("config.active");
  assert.equal(config.subject, "warden.audit.service.info");
  assert.equal((config.record.details as { node: { nodeId: string } }).node.nodeId, "solo");
  assert.equal(byEvent("authentication.disabled")[0].subject, "warden.audit.service.debug");
  const ports = byEvent("port.opened").map((r) => r.record.details as { endpointTypes: string[]; port: number });
  assert.deepEqual(
    ports.map((p) => [p.endpointTypes, p.port]).sort(),
    [
      [["api", "metrics"], node.port],
      [["peer"], natsPort],
    ].sort(),
  );

  assert.equal(await node.stop(), 0, "exits 0 on SIGTERM");
  assert.ok(node.logged(/node stopped/));
  assert.ok(!existsSync(tokenFile), "the token goes with the server");
  assert.ok(!isRunning(natsPid), "the embedded nats-server stopped with it");
});

test("a node killed with SIGKILL takes its nats-server with it; the next start serves the same data", async () => {
  const natsPort = await freePort();
  const dataDir = tempDir("killed");
  const first = await NodeProcess.start({ nodeId: "phoenix", dataDir, env: { NATS_PORT: String(natsPort) } });
  const natsPid = Number(readFileSync(join(dataDir, "nats", "nats-server.pid"), "utf8"));
  const firstToken = readFileSync(join(dataDir, "nats", "client.token"), "utf8");
  const created = await fetch(`${first.url}/user`, {
    method: "PUT",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ userId: "kept" }),
  });
  assert.equal(created.status, 200);
  assert.ok(isRunning(natsPid), "the embedded nats-server runs");
  await first.kill();
  const deadline = Date.now() + 10_000;
  while (isRunning(natsPid) && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50));
  assert.ok(!isRunning(natsPid), "the nats-server ended with the node that started it (its death signal)");
  const second = await NodeProcess.start({ nodeId: "phoenix", dataDir, env: { NATS_PORT: String(natsPort) } });
  started.push(second);
  assert.notEqual(readFileSync(join(dataDir, "nats", "client.token"), "utf8"), firstToken, "a new token at each start");
  assert.equal((await second.readiness()).status, 200);
  assert.equal((await fetch(`${second.url}/user/kept`)).status, 200, "the user written before the kill is there");
});

test("a nats-server left behind (a node killed where perl is missing) is stopped by the next start", async () => {
  const natsPort = await freePort();
  const dataDir = tempDir("orphan");
  mkdirSync(join(dataDir, "nats"), { recursive: true });
  const orphan = spawn(findExecutable("nats-server", process.env) ?? "nats-server", ["-a", "127.0.0.1", "-p", String(natsPort)], {
    stdio: "ignore",
    detached: true,
  });
  orphan.unref();
  after(() => {
    if (isRunning(orphan.pid!)) orphan.kill("SIGKILL");
  });
  writeFileSync(join(dataDir, "nats", "nats-server.pid"), String(orphan.pid));
  assert.ok(isRunning(orphan.pid!), "the orphan runs");
  const node = await NodeProcess.start({ nodeId: "heir", dataDir, env: { NATS_PORT: String(natsPort) } });
  started.push(node);
  assert.ok(!isRunning(orphan.pid!), "the orphan was stopped");
  assert.equal((await node.readiness()).status, 200, "the node serves on the port the orphan held");
});

/** Process group and session ids of a process (fields 5 and 6 of /proc/<pid>/stat, after the command in parentheses). */
function groupAndSession(pid: number): { group: number; session: number } {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  const [, , group, session] = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return { group: Number(group), session: Number(session) };
}

function startAndFail(env: Record<string, string>): { status: number | null; stderr: string } {
  const { NATS_URL: _ignored, ...base } = process.env;
  const result = spawnSync(process.execPath, [mainScript], {
    env: { ...base, DATA_DIR: tempDir("fail"), LOG_LEVEL: "silent", ...env },
    encoding: "utf8",
    timeout: 30_000,
  });
  return { status: result.status, stderr: result.stderr };
}

test("a missing or broken prerequisite is one clear line, never a stack trace", async () => {
  const busy = createServer();
  await new Promise<void>((resolve) => busy.listen(0, "127.0.0.1", resolve));
  const busyPort = (busy.address() as { port: number }).port;
  const unreachable = await freePort();
  const cases: Array<[Record<string, string>, RegExp]> = [
    [
      { NATS_SERVER_BIN: "/nonexistent/nats-server", PORT: "0" },
      /^warden: nats-server is not installed: run 'npm start' \(it installs it\) or 'sudo apt-get install nats-server', or set NATS_URL/,
    ],
    [{ NATS_URL: `nats://127.0.0.1:${unreachable}`, PORT: "0" }, /^warden: cannot connect to NATS at nats:\/\/127\.0\.0\.1:\d+ .*check NATS_URL/],
    [
      { NATS_PORT: String(busyPort), PORT: "0" },
      new RegExp(`^warden: port ${busyPort} on 127\\.0\\.0\\.1 is in use, so the embedded nats-server cannot start`),
    ],
    [
      { PORT: String(busyPort), NATS_PORT: String(await freePort()) },
      new RegExp(`^warden: port ${busyPort} on 127\\.0\\.0\\.1 is in use: set PORT to a free port$`),
    ],
    [{ LOG_LEVEL: "loud" }, /^warden: LOG_LEVEL must be one of/],
  ];
  try {
    for (const [env, message] of cases) {
      const { status, stderr } = startAndFail(env);
      assert.equal(status, 1, JSON.stringify(env));
      const lines = stderr.trim().split("\n");
      assert.equal(lines.length, 1, `one line, got: ${stderr}`);
      assert.match(lines[0], message);
      assert.doesNotMatch(stderr, /\n\s+at /, "no stack trace");
    }
  } finally {
    busy.close();
  }
});

test("Ctrl-C at a terminal (SIGINT to the whole process group) drains the node and stops its nats-server last", async () => {
  const natsPort = await freePort();
  const dataDir = tempDir("ctrl-c");
  const node = await NodeProcess.start({ nodeId: "terminal", dataDir, ownProcessGroup: true, env: { NATS_PORT: String(natsPort) } });
  started.push(node);
  const natsPid = Number(readFileSync(join(dataDir, "nats", "nats-server.pid"), "utf8"));
  // A group of its own (Ctrl-C misses it) in the node's session: a session of its own is a
  // scheduling group of its own under sched_autogroup, which cost the pipeline stream 14 µs a record.
  const nats = groupAndSession(natsPid);
  const nodeProcess = groupAndSession(node.child.pid!);
  assert.equal(nats.group, natsPid, "the nats-server leads its own process group");
  assert.notEqual(nats.group, nodeProcess.group, "not the node's process group");
  assert.equal(nats.session, nodeProcess.session, "in the node's session");
  // Some state to write, so the drain has partitions and a live actor to hand over.
  const response = await fetch(`${node.url}/user`, {
    method: "PUT",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ userId: "ctrl-c-user" }),
  });
  assert.equal(response.status, 200, "user created");
  assert.ok(await node.waitLogged(/node ready to serve/));

  node.signalGroup("SIGINT");
  assert.equal(await node.exited(), 0, "exits 0 after SIGINT");
  const log = node.lines.join("\n");
  assert.match(log, /"signal":"SIGINT".*stopping: draining/);
  assert.match(log, /node stopped/);
  assert.doesNotMatch(log, /FatalError|JetStream did not confirm|clean stop failed|second signal/);
  assert.ok(!isRunning(natsPid), "the embedded nats-server stopped with the node");
});

test("a signal during the start stops the node cleanly once it has started, never by the default action", async () => {
  // A supervisor may signal as soon as the node says it is ready (or earlier): the handlers are there from before the start.
  const dataDir = tempDir("signal-at-start");
  const { NATS_URL: _ignored, ...env } = process.env;
  const child = spawn(process.execPath, [mainScript], {
    env: {
      ...env,
      PORT: String(await freePort()),
      NATS_PORT: String(await freePort()),
      NODE_ID: "signal-at-start",
      DATA_DIR: dataDir,
      LOG_LEVEL: "debug",
      REDACT_STORAGE_MAX_BYTES: String(2 * 1024 ** 3),
      REDACT_MAX_DOCUMENT_BYTES: String(1024 ** 3),
    },
    stdio: ["ignore", "pipe", "pipe"],
  });
  const lines: string[] = [];
  let signalled = false;
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once("exit", (code, signal) => resolve({ code, signal })),
  );
  const killer = setTimeout(() => child.kill("SIGKILL"), 30_000);
  for (const stream of [child.stdout!, child.stderr!])
    stream.on("data", (chunk: Buffer) => {
      lines.push(...chunk.toString("utf8").split("\n").filter(Boolean));
      // At its first line the node is still starting (nothing listens yet).
      if (!signalled) {
        signalled = true;
        child.kill("SIGTERM");
      }
    });
  const { code, signal } = await exited;
  clearTimeout(killer);
  const log = lines.join("\n");
  assert.deepEqual({ code, signal }, { code: 0, signal: null }, `the node exits 0 after its start, not killed by the signal:\n${log.slice(-2000)}`);
  assert.ok(!log.includes("node ready to serve") || log.indexOf("node ready to serve") < log.indexOf("stopping: draining"));
  assert.match(log, /"signal":"SIGTERM".*stopping: draining/);
  assert.match(log, /node stopped/);
  const pidFile = join(dataDir, "nats", "nats-server.pid");
  if (existsSync(pidFile)) assert.ok(!isRunning(Number(readFileSync(pidFile, "utf8"))), "its nats-server stopped with it");
});

test("--help and --version answer and exit 0 without starting anything", () => {
  const { NATS_URL: _ignored, ...env } = process.env;
  const help = spawnSync(process.execPath, [mainScript, "--port", "not-a-port", "--help"], { env, encoding: "utf8", timeout: 10_000 });
  assert.equal(help.status, 0, help.stderr);
  assert.match(help.stdout, /^Usage: warden/);
  assert.match(help.stdout, /--nats-url <value>\s+NATS_URL\s+NATS servers/);
  const version = spawnSync(process.execPath, [mainScript, "--version"], { env, encoding: "utf8", timeout: 10_000 });
  assert.equal(version.status, 0, version.stderr);
  const expected = (JSON.parse(readFileSync(join(__dirname, "..", "..", "..", "package.json"), "utf8")) as { version: string }).version;
  assert.equal(version.stdout, `warden ${expected}\n`);
});

test("LOG_FORMAT=pretty writes readable lines through pino-pretty instead of JSON", async () => {
  const node = await NodeProcess.start({ nodeId: "pretty", env: { NATS_PORT: String(await freePort()), LOG_FORMAT: "pretty" } });
  started.push(node);
  assert.ok(await node.waitLogged(/node ready to serve/));
  assert.equal(await node.stop(), 0);
  const ready = node.lines.find((line) => line.includes("node ready to serve"));
  assert.ok(ready, "the ready line is there");
  assert.match(ready, /^\[\d\d:\d\d:\d\d\.\d{3}\] INFO: node ready to serve$/);
  assert.match(node.lines[node.lines.indexOf(ready) + 1], /^ +port: \d+$/, "fields on the lines below");
  assert.ok(
    node.lines.every((line) => !line.startsWith('{"level"')),
    "no JSON lines",
  );
});
