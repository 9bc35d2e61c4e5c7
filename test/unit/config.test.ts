import { test } from "node:test";
import assert from "node:assert/strict";
import { availableParallelism } from "node:os";
import { resolve } from "node:path";
import { commandOf, loadConfig, settings, usage } from "../../service/config";
import { StartupError } from "../../service/startup-error";

test("defaults: port 8890 on loopback, embedded NATS, info logs", () => {
  const config = loadConfig([], {});
  assert.equal(config.port, 8890);
  assert.equal(config.host, "127.0.0.1");
  assert.deepEqual(config.natsUrls, []);
  assert.equal(config.natsPort, 4222);
  assert.equal(config.logLevel, "info");
  assert.equal(config.jsReplicas, 1);
  assert.match(config.nodeId, /-8890$/);
  assert.equal(config.dataDir, resolve(`data/${config.nodeId}`));
  assert.equal(config.exportHost, "127.0.0.1");
  assert.deepEqual(config.exportPorts, { first: 15432, last: 15631 });
  assert.equal(config.exportTls, null);
  assert.equal(
    config.redactionThreads,
    Math.min(Math.max(availableParallelism() - 1, 0), 4),
    "one fewer than the cores (the event loop is the job's other thread), at most 4 (a many-core host would otherwise start many workers per job, or exceed the range)",
  );
  assert.equal(loadConfig(["--redaction-threads", "1"], {}).redactionThreads, 1);
  assert.equal(loadConfig([], { REDACTION_THREADS: "0" }).redactionThreads, 0, "no workers: the event loop's thread");
  assert.equal(config.redactProgressMs, 1000);
  assert.equal(loadConfig([], { REDACT_PROGRESS_MS: "100" }).redactProgressMs, 100);
  assert.equal(config.redactionMaxWorkers, 4 * Math.max(config.redactionThreads, 1), "four documents' worker threads at once");
  assert.equal(loadConfig([], { REDACTION_THREADS: "3" }).redactionMaxWorkers, 12);
  assert.equal(loadConfig([], { REDACTION_THREADS: "2", REDACTION_MAX_WORKERS: "2" }).redactionMaxWorkers, 2);
  assert.equal(config.objectstoreRedactionThreads, 1, "one worker thread per GetObject's CSV");
  assert.equal(loadConfig([], { OBJECTSTORE_REDACTION_THREADS: "0" }).objectstoreRedactionThreads, 0);
  assert.equal(loadConfig(["--objectstore-redaction-threads", "3"], {}).objectstoreRedactionThreads, 3);
  assert.throws(() => loadConfig([], { OBJECTSTORE_REDACTION_THREADS: "65" }), /OBJECTSTORE_REDACTION_THREADS/);
  // A node whose bound is below one GetObject's threads would redact every GetObject on the event loop.
  assert.throws(() => loadConfig([], { REDACTION_THREADS: "1", OBJECTSTORE_REDACTION_THREADS: "3", REDACTION_MAX_WORKERS: "2" }), /REDACTION_MAX_WORKERS/);
  assert.equal(loadConfig([], { REDACTION_THREADS: "1", OBJECTSTORE_REDACTION_THREADS: "3" }).redactionMaxWorkers, 12);
  assert.equal(config.objectstoreRangeMemoryBytes, 64 << 20, "64 MiB of range buffers per node");
  assert.equal(loadConfig(["--objectstore-range-memory-bytes", "8388608"], {}).objectstoreRangeMemoryBytes, 8 << 20);
  assert.equal(loadConfig([], { OBJECTSTORE_RANGE_MEMORY_BYTES: "65536" }).objectstoreRangeMemoryBytes, 65_536);
});

test("environment variables set everything; flags win over them", () => {
  const env = { PORT: "9000", DATA_DIR: "/tmp/x", NATS_URL: "nats://a:4222, nats://b:4222", NODE_ID: "node-a", LOG_LEVEL: "debug", JS_REPLICAS: "3" };
  const fromEnv = loadConfig([], env);
  assert.deepEqual(
    {
      port: fromEnv.port,
      dataDir: fromEnv.dataDir,
      natsUrls: fromEnv.natsUrls,
      nodeId: fromEnv.nodeId,
      logLevel: fromEnv.logLevel,
      jsReplicas: fromEnv.jsReplicas,
    },
    { port: 9000, dataDir: "/tmp/x", natsUrls: ["nats://a:4222", "nats://b:4222"], nodeId: "node-a", logLevel: "debug", jsReplicas: 3 },
  );
  const withFlags = loadConfig(["--port", "9100", "--node-id=node-b", "--nats-url", "nats://c:4222"], env);
  assert.equal(withFlags.port, 9100);
  assert.equal(withFlags.nodeId, "node-b");
  assert.deepEqual(withFlags.natsUrls, ["nats://c:4222"]);
});

test("a bad setting is one clear StartupError naming the variable and its flag", () => {
  const cases: Array<[string[], NodeJS.ProcessEnv, RegExp]> = [
    [[], { PORT: "eighty" }, /^PORT \(--port\) must be a whole number from 0 to 65535, got 'eighty'$/],
    [[], { PORT: "70000" }, /^PORT \(--port\)/],
    [[], { LOG_LEVEL: "loud" }, /^LOG_LEVEL must be one of/],
    [[], { NODE_ID: "has space" }, /^NODE_ID 'has space' must be/],
    [[], { HEARTBEAT_MS: "1000", LEASE_TTL_MS: "2000" }, /^LEASE_TTL_MS \(2000\) must be at least three heartbeats/],
    [["--bogus"], {}, /^unknown option '--bogus'/],
    [["--port"], {}, /^option --port needs a value$/],
    [[], { EXPORT_PORTS: "6000-5000" }, /^EXPORT_PORTS \(--export-ports\) must be a port range/],
    [[], { EXPORT_PORTS: "many" }, /^EXPORT_PORTS/],
    [[], { REDACTION_THREADS: "65" }, /^REDACTION_THREADS \(--redaction-threads\) must be a whole number from 0 to 64/],
    [[], { REDACT_PROGRESS_MS: "10" }, /^REDACT_PROGRESS_MS \(--redact-progress-ms\) must be a whole number from 50 to 600000/],
    // A document needs REDACTION_THREADS of them: fewer and none could ever start.
    [[], { REDACTION_THREADS: "4", REDACTION_MAX_WORKERS: "3" }, /^REDACTION_MAX_WORKERS \(--redaction-max-workers\) must be a whole number from 4 to 1024/],
    // Less than the smallest range: no GetObject could ever be read in ranges.
    [[], { OBJECTSTORE_RANGE_MEMORY_BYTES: "65535" }, /^OBJECTSTORE_RANGE_MEMORY_BYTES \(--objectstore-range-memory-bytes\) must be a whole number from 65536/],
    [[], { EXPORT_TLS_CERT_FILE: "/tmp/cert.pem" }, /^EXPORT_TLS_CERT_FILE and EXPORT_TLS_KEY_FILE go together/],
  ];
  for (const [argv, env, message] of cases) {
    assert.throws(
      () => loadConfig(argv, env),
      (error: Error) => error instanceof StartupError && message.test(error.message) && !error.message.includes("\n"),
    );
  }
});

test("--help lists every setting's flag, variable and description; --help and --version win over other options", () => {
  const text = usage();
  for (const setting of Object.values(settings)) {
    const line = text.split("\n").find((l) => l.includes(`${setting.flag} `));
    assert.ok(line, `${setting.flag} listed`);
    assert.ok(line.includes(setting.env) && line.includes(setting.describe), `${setting.flag} has its variable and description`);
  }
  assert.match(text, /LOG_FORMAT\s+json \(default/);
  assert.equal(commandOf(["--port", "1", "--help"]), "help");
  assert.equal(commandOf(["-h"]), "help");
  assert.equal(commandOf(["--version"]), "version");
  assert.equal(commandOf(["--port", "1"]), "run");
});

test("LOG_FORMAT: json by default, pretty on request, anything else refused", () => {
  assert.equal(loadConfig([], {}).logFormat, "json");
  assert.equal(loadConfig([], { LOG_FORMAT: "pretty" }).logFormat, "pretty");
  assert.equal(loadConfig(["--log-format", "json"], { LOG_FORMAT: "pretty" }).logFormat, "json");
  assert.throws(() => loadConfig([], { LOG_FORMAT: "xml" }), /^StartupError: LOG_FORMAT must be one of json, pretty, got 'xml'$/);
});
