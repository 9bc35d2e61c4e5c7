import { availableParallelism, hostname } from "node:os";
import { resolve } from "node:path";
import { StartupError } from "./startup-error";
import { checkListenerLimits, defaultHttpListenerLimits, type HttpListenerLimits } from "../http/listener-limits";
import { defaultWireExportLimits, type WireExportLimits } from "../exports/wire-limits";
import { defaultFailureBudgetLimits, type FailureBudgetLimits } from "../auth/failure-budget";
import { defaultRetention } from "../actors/runtime/provision";
import { EndpointAllowList } from "../exports/endpoint-allow-list";
import { AllowedHosts } from "../http/allowed-hosts";

export type LogLevel = "trace" | "debug" | "info" | "warn" | "error" | "fatal" | "silent";
export type LogFormat = "json" | "pretty";

export interface NodeConfig {
  /** Gateway port (all REST APIs and web UIs). */
  port: number;
  /** Address the gateway binds to. */
  host: string;
  /** Host names the gateway and HTTP export doors answer to besides localhost and IP addresses (http/host-check.ts). */
  allowedHosts: AllowedHosts;
  /** This node's data directory: the embedded nats-server's storage lives under it. */
  dataDir: string;
  /** NATS servers to join; empty means start an embedded nats-server. */
  natsUrls: string[];
  /** Client port of the embedded nats-server. */
  natsPort: number;
  /** User and password for the servers of NATS_URL (or user info in the URL, which is never logged). */
  natsUser: string | null;
  natsPassword: string | null;
  /** Token for the servers of NATS_URL. */
  natsToken: string | null;
  /** A decentralized-auth credentials file (JWT and nkey seed) for the servers of NATS_URL. */
  natsCredsFile: string | null;
  /** A file holding an nkey seed (SU...) for the servers of NATS_URL. */
  natsNkeyFile: string | null;
  /** PEM CA bundle the NATS servers' certificates are checked against; set: the connection needs TLS. */
  natsCaFile: string | null;
  /** PEM client certificate and key, for NATS servers that verify clients (mutual TLS). */
  natsTlsCert: { certFile: string; keyFile: string } | null;
  nodeId: string;
  logLevel: LogLevel;
  /** JSON lines (for collectors) or pino-pretty's coloured lines (for people at a terminal). */
  logFormat: LogFormat;
  /** JetStream replicas for buckets and streams (3 on a NATS cluster). */
  jsReplicas: number;
  /** Partition count at the cluster's first start. */
  partitions: number;
  heartbeatMs: number;
  leaseTtlMs: number;
  callTimeoutMs: number;
  /** How far apart nodes' wall clocks may be before a call that arrives late is refused (see docs/architecture.md, Deadlines). */
  clockSkewMs: number;
  /** Extra actor definitions to host, as paths to JavaScript modules (plug-ins, test fixtures). */
  actorModules: string[];
  /** Hours a finished redaction job and its documents are kept. */
  redactRetentionHours: number;
  /** Document redaction's storage quotas: one job's upload, and every job's documents together. */
  redactQuotas: { maxDocumentBytes: number; maxTotalBytes: number };
  /** The audit stream's limits: records older than maxAgeDays expire; at maxBytes new records are refused (never the oldest dropped). */
  auditRetention: { maxAgeDays: number; maxBytes: number };
  /** Worker threads that redact the CSV of one redaction job (0: the event loop's thread, no workers). */
  redactionThreads: number;
  /** How often a running redaction job reports its progress (ms). */
  redactProgressMs: number;
  /** CSV worker threads documents (jobs and objectstore GetObjects) hold at once over the node; further documents go on on the calling thread. */
  redactionMaxWorkers: number;
  /** Worker threads that redact the CSV of one objectstore GetObject (0: the event loop's thread). */
  objectstoreRedactionThreads: number;
  /** Bytes of range buffers ranged GetObjects hold at once on the node (proxies/objectstore/ranged-body.ts). */
  objectstoreRangeMemoryBytes: number;
  /** Processes that run PostgreSQL export sessions besides the node's event loop (0: sessions run in the node). */
  exportWorkers: number;
  /** Whether this node may run the decision indexer (docs/subject-rights.md); off on every node: reports answer 503. */
  decisionIndex: boolean;
  /** Address export ports are opened on, and the host clients are told to connect to. */
  exportHost: string;
  /** Ports allocated to exports that do not ask for one. */
  exportPorts: { first: number; last: number };
  /** Backing endpoints exports may name (host patterns); absent: any. */
  exportAllowedEndpoints: EndpointAllowList | undefined;
  /** PEM files of the certificate and key exports present to clients that ask for TLS; absent: SSLRequest is answered 'N'. */
  exportTls: { certFile: string; keyFile: string } | null;
  /** PEM files of the gateway's TLS certificate and key; absent: the gateway speaks plain HTTP. */
  tls: { certFile: string; keyFile: string } | null;
  /** The security configuration file (spec 5.2); absent: no component enforces authentication. */
  securityConfig: string | null;
  /** Timeouts and connection cap of each HTTP listener: the gateway and every HTTP export door. */
  httpLimits: HttpListenerLimits;
  /** Limits of every wire export (PostgreSQL...): sessions, connections logging in, idle time, message size. */
  wireLimits: WireExportLimits;
  /** Failed logins an address and a user may have before they wait, and the waits. */
  failureBudget: FailureBudgetLimits;
}

interface Setting {
  env: string;
  flag: string;
  describe: string;
}

/** Every setting, its environment variable and its flag: the README's table is generated from this list. */
export const settings = {
  port: { env: "PORT", flag: "--port", describe: "gateway port (default 8890)" },
  host: { env: "HOST", flag: "--host", describe: "gateway bind address (default 127.0.0.1; 0.0.0.0 to serve other machines)" },
  allowedHosts: {
    env: "ALLOWED_HOSTS",
    flag: "--allowed-hosts",
    describe:
      "host names the gateway and HTTP export doors answer to besides localhost, *.localhost and IP addresses, comma-separated; *.domain for names below it; * alone: any (default: on a loopback HOST or EXPORT_HOST only those, on another address any name; docs/web-ui.md)",
  },
  dataDir: { env: "DATA_DIR", flag: "--data-dir", describe: "node data directory (default ./data/<node id>)" },
  natsUrls: { env: "NATS_URL", flag: "--nats-url", describe: "NATS servers, comma-separated; when set no embedded server is started" },
  natsPort: { env: "NATS_PORT", flag: "--nats-port", describe: "client port of the embedded nats-server (default 4222)" },
  natsUser: { env: "NATS_USER", flag: "--nats-user", describe: "user name for the servers of NATS_URL; needs NATS_PASSWORD" },
  natsPassword: { env: "NATS_PASSWORD", flag: "--nats-password", describe: "password of NATS_USER (prefer the variable: flags show in ps)" },
  natsToken: { env: "NATS_TOKEN", flag: "--nats-token", describe: "token for the servers of NATS_URL (prefer the variable: flags show in ps)" },
  natsCredsFile: { env: "NATS_CREDS_FILE", flag: "--nats-creds-file", describe: "credentials file (user JWT and nkey seed) for the servers of NATS_URL" },
  natsNkeyFile: { env: "NATS_NKEY_FILE", flag: "--nats-nkey-file", describe: "file holding an nkey seed (SU...) for the servers of NATS_URL" },
  natsCaFile: {
    env: "NATS_TLS_CA_FILE",
    flag: "--nats-tls-ca-file",
    describe: "PEM CA bundle for the NATS servers' certificates; set: NATS connections need TLS",
  },
  natsTlsCert: {
    env: "NATS_TLS_CERT_FILE",
    flag: "--nats-tls-cert-file",
    describe: "PEM client certificate for NATS servers that verify clients; needs NATS_TLS_KEY_FILE",
  },
  natsTlsKey: { env: "NATS_TLS_KEY_FILE", flag: "--nats-tls-key-file", describe: "PEM private key of NATS_TLS_CERT_FILE" },
  nodeId: { env: "NODE_ID", flag: "--node-id", describe: "unique node id in the cluster (default <hostname>-<port>)" },
  logLevel: { env: "LOG_LEVEL", flag: "--log-level", describe: "trace, debug, info, warn, error, fatal or silent (default info)" },
  logFormat: {
    env: "LOG_FORMAT",
    flag: "--log-format",
    describe: "json (default: one JSON object a line, for log collectors) or pretty (readable lines for a terminal)",
  },
  jsReplicas: { env: "JS_REPLICAS", flag: "--js-replicas", describe: "JetStream replicas of buckets and streams (default 1; 3 on a NATS cluster)" },
  partitions: { env: "PARTITIONS", flag: "--partitions", describe: "actor partitions, fixed at the cluster's first start (default 64)" },
  heartbeatMs: { env: "HEARTBEAT_MS", flag: "--heartbeat-ms", describe: "lease renewal interval (default 1000)" },
  leaseTtlMs: { env: "LEASE_TTL_MS", flag: "--lease-ttl-ms", describe: "a node silent this long is dead; bounds failover time (default 4000)" },
  callTimeoutMs: { env: "CALL_TIMEOUT_MS", flag: "--call-timeout-ms", describe: "default deadline of an actor call (default 5000)" },
  clockSkewMs: {
    env: "CLOCK_SKEW_MS",
    flag: "--clock-skew-ms",
    describe: "how far apart nodes' clocks may be: a call that reaches its actor this long after its caller's deadline is not started (default 250)",
  },
  actorModules: { env: "ACTOR_MODULES", flag: "--actor-modules", describe: "extra actor modules to host, comma-separated paths" },
  redactRetentionHours: {
    env: "REDACT_RETENTION_HOURS",
    flag: "--redact-retention-hours",
    describe: "hours a finished redaction job and its documents are kept (default 168)",
  },
  redactMaxDocumentBytes: {
    env: "REDACT_MAX_DOCUMENT_BYTES",
    flag: "--redact-max-document-bytes",
    describe: "largest document one redaction job may upload; a larger one is refused with 413 and nothing is kept (default 2147483648, 2 GiB)",
  },
  redactStorageMaxBytes: {
    env: "REDACT_STORAGE_MAX_BYTES",
    flag: "--redact-storage-max-bytes",
    describe:
      "bytes all redaction jobs' documents (uploads and outputs) may take in JetStream; when full, uploads are refused with 507; JetStream reserves it (default 8589934592, 8 GiB)",
  },
  auditMaxBytes: {
    env: "AUDIT_MAX_BYTES",
    flag: "--audit-max-bytes",
    describe: "bytes the audit stream keeps; when full, requests that need an audit record fail with 503 until space is made (default 1073741824, 1 GiB)",
  },
  auditMaxAgeDays: {
    env: "AUDIT_MAX_AGE_DAYS",
    flag: "--audit-max-age-days",
    describe: "days an audit record is kept before it expires (default 365)",
  },
  redactionThreads: {
    env: "REDACTION_THREADS",
    flag: "--redaction-threads",
    describe:
      "worker threads a CSV redaction job uses (default: one fewer than the cores, the event loop being the job's other thread, at most 4; 0: none, the event loop's thread)",
  },
  redactionMaxWorkers: {
    env: "REDACTION_MAX_WORKERS",
    flag: "--redaction-max-workers",
    describe:
      "CSV worker threads all documents of the node hold at once (redaction jobs and objectstore GetObjects); a document that finds none free goes on on the calling thread (default: 4 x the larger of REDACTION_THREADS and OBJECTSTORE_REDACTION_THREADS, at least that larger one)",
  },
  objectstoreRedactionThreads: {
    env: "OBJECTSTORE_REDACTION_THREADS",
    flag: "--objectstore-redaction-threads",
    describe:
      "worker threads that redact the CSV of one objectstore GetObject (default 1: one redacts faster than a store sends, and more compete with the store on the same cores; 0: the event loop's thread)",
  },
  objectstoreRangeMemoryBytes: {
    env: "OBJECTSTORE_RANGE_MEMORY_BYTES",
    flag: "--objectstore-range-memory-bytes",
    describe:
      "bytes of range buffers objectstore GetObjects read with rangedReads hold at once on this node; a GetObject whose first range does not fit is read in one GET (default 67108864, 64 MiB; at least 65536)",
  },
  redactProgressMs: {
    env: "REDACT_PROGRESS_MS",
    flag: "--redact-progress-ms",
    describe: "milliseconds between a running redaction job's progress reports (GET /redact/progress; default 1000)",
  },
  exportWorkers: {
    env: "EXPORT_WORKERS",
    flag: "--export-workers",
    describe:
      "processes that run PostgreSQL export connections, each on its own event loop, started with the first PostgreSQL export served (default 2; 0: the node's own loop)",
  },
  decisionIndex: {
    env: "DECISION_INDEX",
    flag: "--decision-index",
    describe:
      "on (default) or off: whether this node may run the per-user decision index behind GET /user/{userId}/report (off on every node: reports answer 503)",
  },
  exportHost: { env: "EXPORT_HOST", flag: "--export-host", describe: "address export ports are opened on (default: the gateway's HOST)" },
  exportTls: {
    env: "EXPORT_TLS_CERT_FILE",
    flag: "--export-tls-cert-file",
    describe: "PEM certificate (chain) exports present to TLS clients; needs EXPORT_TLS_KEY_FILE",
  },
  exportTlsKey: { env: "EXPORT_TLS_KEY_FILE", flag: "--export-tls-key-file", describe: "PEM private key of EXPORT_TLS_CERT_FILE" },
  tls: { env: "TLS_CERT_FILE", flag: "--tls-cert-file", describe: "PEM certificate (chain) of the gateway: HTTPS instead of HTTP; needs TLS_KEY_FILE" },
  tlsKey: { env: "TLS_KEY_FILE", flag: "--tls-key-file", describe: "PEM private key of TLS_CERT_FILE" },
  securityConfig: {
    env: "SECURITY_CONFIG",
    flag: "--security-config",
    describe: "security configuration file (verifiers, credentials, enforced components); absent: nothing needs authentication",
  },
  httpHeadersTimeoutMs: {
    env: "HTTP_HEADERS_TIMEOUT_MS",
    flag: "--http-headers-timeout-ms",
    describe: "a request's headers must arrive within this, on the gateway and HTTP export doors (default 10000)",
  },
  httpRequestTimeoutMs: {
    env: "HTTP_REQUEST_TIMEOUT_MS",
    flag: "--http-request-timeout-ms",
    describe: "a request, body included, must arrive within this (default 300000; 0: off; streaming doors: off)",
  },
  httpKeepAliveTimeoutMs: {
    env: "HTTP_KEEPALIVE_TIMEOUT_MS",
    flag: "--http-keepalive-timeout-ms",
    describe: "an idle kept-alive HTTP connection is closed after this (default 5000)",
  },
  httpIdleTimeoutMs: {
    env: "HTTP_IDLE_TIMEOUT_MS",
    flag: "--http-idle-timeout-ms",
    describe: "an HTTP connection silent this long is closed (default 60000; 0: never)",
  },
  httpMaxConnections: { env: "HTTP_MAX_CONNECTIONS", flag: "--http-max-connections", describe: "connections open at once per HTTP listener (default 1000)" },
  exportMaxConnections: { env: "EXPORT_MAX_CONNECTIONS", flag: "--export-max-connections", describe: "logged-in sessions per wire export (default 500)" },
  exportMaxLoggingIn: {
    env: "EXPORT_MAX_LOGGING_IN",
    flag: "--export-max-logging-in",
    describe: "connections logging in at once per wire export, apart from sessions (default 64)",
  },
  exportMaxLoggingInPerAddress: {
    env: "EXPORT_MAX_LOGGING_IN_PER_ADDRESS",
    flag: "--export-max-logging-in-per-address",
    describe: "connections logging in at once from one client address (default 16)",
  },
  exportLoginTimeoutMs: {
    env: "EXPORT_LOGIN_TIMEOUT_MS",
    flag: "--export-login-timeout-ms",
    describe: "a wire export connection not logged in by then is closed (default 15000)",
  },
  exportIdleTimeoutMs: {
    env: "EXPORT_IDLE_TIMEOUT_MS",
    flag: "--export-idle-timeout-ms",
    describe: "a wire export connection silent this long is closed (default 3600000; 0: never)",
  },
  exportMaxMessageBytes: {
    env: "EXPORT_MAX_MESSAGE_BYTES",
    flag: "--export-max-message-bytes",
    describe: "largest message a logged-in wire client may send (default 8388608)",
  },
  authFailuresPerAddress: {
    env: "AUTH_FAILURES_PER_ADDRESS",
    flag: "--auth-failures-per-address",
    describe: "failed logins from one client address before it waits, answered 429 (default 20)",
  },
  authFailuresPerUser: {
    env: "AUTH_FAILURES_PER_USER",
    flag: "--auth-failures-per-user",
    describe: "failed logins for one user name before it waits, answered 429 (default 10)",
  },
  authMaxBackoffMs: {
    env: "AUTH_MAX_BACKOFF_MS",
    flag: "--auth-max-backoff-ms",
    describe: "the longest wait after failed logins; the first is 1 s, doubling (default 300000)",
  },
  authRejectedTokenMs: {
    env: "AUTH_REJECTED_TOKEN_MS",
    flag: "--auth-rejected-token-ms",
    describe: "a rejected token is refused again without asking its verifier for this long (default 30000)",
  },
  exportAllowedEndpoints: {
    env: "EXPORT_ALLOWED_ENDPOINTS",
    flag: "--export-allowed-endpoints",
    describe:
      "backing endpoints exports may name, comma-separated host patterns: host, host:port, *.domain, *.domain:port, [v6]:port (default: empty, any endpoint)",
  },
  exportPorts: { env: "EXPORT_PORTS", flag: "--export-ports", describe: "range export ports are allocated from, first-last (default 15432-15631)" },
} satisfies Record<
  | Exclude<keyof NodeConfig, "httpLimits" | "wireLimits" | "failureBudget" | "auditRetention" | "redactQuotas">
  | "auditMaxBytes"
  | "redactMaxDocumentBytes"
  | "redactStorageMaxBytes"
  | "auditMaxAgeDays"
  | "authFailuresPerAddress"
  | "authFailuresPerUser"
  | "authMaxBackoffMs"
  | "authRejectedTokenMs"
  | "exportTlsKey"
  | "tlsKey"
  | "natsTlsKey"
  | "httpHeadersTimeoutMs"
  | "httpRequestTimeoutMs"
  | "httpKeepAliveTimeoutMs"
  | "httpIdleTimeoutMs"
  | "httpMaxConnections"
  | "exportMaxConnections"
  | "exportMaxLoggingIn"
  | "exportMaxLoggingInPerAddress"
  | "exportLoginTimeoutMs"
  | "exportIdleTimeoutMs"
  | "exportMaxMessageBytes",
  Setting
>;

const logLevels: readonly LogLevel[] = ["trace", "debug", "info", "warn", "error", "fatal", "silent"];
const logFormats: readonly LogFormat[] = ["json", "pretty"];

/** `--help`: every setting with its flag, variable and description, from the list above. */
export function usage(): string {
  const rows = Object.values(settings).map((s: Setting) => [`  ${s.flag} <value>`, s.env, s.describe]);
  const width = Math.max(...rows.map((r) => r[0].length));
  const envWidth = Math.max(...rows.map((r) => r[1].length));
  return [
    "Usage: warden [options]   (node dist/service/main.js)",
    "",
    "Starts one warden node. Every option is also an environment variable; options win.",
    "",
    ...rows.map(([flag, env, describe]) => `${flag.padEnd(width)}  ${env.padEnd(envWidth)}  ${describe}`),
    `${"  --help".padEnd(width)}  ${"".padEnd(envWidth)}  print this and exit`,
    `${"  --version".padEnd(width)}  ${"".padEnd(envWidth)}  print the version and exit`,
    `${"".padEnd(width)}  ${"NATS_SERVER_BIN".padEnd(envWidth)}  path of the nats-server binary, when not on PATH`,
    "",
  ].join("\n");
}

/** What the command line asks before any setting is read: `--help` and `--version` answer and exit, whatever else is given. */
export function commandOf(argv: readonly string[]): "help" | "version" | "run" {
  if (argv.includes("--help") || argv.includes("-h")) return "help";
  if (argv.includes("--version")) return "version";
  return "run";
}

function parseFlags(argv: readonly string[]): Map<string, string> {
  const known = new Set(Object.values(settings).map((s) => s.flag));
  const values = new Map<string, string>();
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    const [flag, inline] = arg.includes("=") ? [arg.slice(0, arg.indexOf("=")), arg.slice(arg.indexOf("=") + 1)] : [arg, undefined];
    if (!known.has(flag)) throw new StartupError(`unknown option '${arg}' (options: ${[...known].join(", ")}; --help describes them)`);
    const value = inline ?? argv[++i];
    if (value === undefined) throw new StartupError(`option ${flag} needs a value`);
    values.set(flag, value);
  }
  return values;
}

function integer(setting: Setting, raw: string, min: number, max: number): number {
  const value = Number(raw);
  if (!/^\d+$/.test(raw.trim()) || value < min || value > max) {
    throw new StartupError(`${setting.env} (${setting.flag}) must be a whole number from ${min} to ${max}, got '${raw}'`);
  }
  return value;
}

function redactQuotas(raw: (name: keyof typeof settings) => string | undefined): NodeConfig["redactQuotas"] {
  const maxTotalBytes = integer(settings.redactStorageMaxBytes, raw("redactStorageMaxBytes") ?? String(8 * 1024 ** 3), 65_536, Number.MAX_SAFE_INTEGER);
  const maxDocumentBytes = integer(settings.redactMaxDocumentBytes, raw("redactMaxDocumentBytes") ?? String(2 * 1024 ** 3), 1, Number.MAX_SAFE_INTEGER);
  // A job stores its upload and its output: a document over half the storage could never finish.
  if (maxDocumentBytes * 2 > maxTotalBytes)
    throw new StartupError(
      `${settings.redactMaxDocumentBytes.env} (${maxDocumentBytes}) must be at most half of ${settings.redactStorageMaxBytes.env} (${maxTotalBytes}): a job stores its upload and its output`,
    );
  return { maxDocumentBytes, maxTotalBytes };
}

function allowList(setting: Setting, raw: string): EndpointAllowList | undefined {
  try {
    return EndpointAllowList.parse(raw);
  } catch (error) {
    throw new StartupError(`${setting.env} (${setting.flag}): ${(error as Error).message}`);
  }
}

function allowedHosts(setting: Setting, raw: string): AllowedHosts {
  try {
    return AllowedHosts.parse(raw);
  } catch (error) {
    throw new StartupError(`${setting.env} (${setting.flag}): ${(error as Error).message}`);
  }
}

function portRange(setting: Setting, raw: string): { first: number; last: number } {
  const match = /^\s*(\d{1,5})\s*-\s*(\d{1,5})\s*$/.exec(raw);
  const first = Number(match?.[1]);
  const last = Number(match?.[2]);
  if (!match || first < 1 || last > 65535 || first > last)
    throw new StartupError(`${setting.env} (${setting.flag}) must be a port range first-last within 1-65535, got '${raw}'`);
  return { first, last };
}

function tlsFiles(certFile: string | undefined, keyFile: string | undefined, names: { cert: Setting; key: Setting }): NodeConfig["exportTls"] {
  if (certFile === undefined && keyFile === undefined) return null;
  if (certFile === undefined || keyFile === undefined) throw new StartupError(`${names.cert.env} and ${names.key.env} go together: set both or neither`);
  return { certFile: resolve(certFile), keyFile: resolve(keyFile) };
}

/**
 * Each CSV job starts this many workers (about 8 MiB each, plus two blocks in flight per worker).
 * One fewer than the cores: the event loop moves every byte of a job's document (its reads,
 * blocks, messages, output), so it is the pipeline's other thread. Measured on two cores
 * (bench/RESULTS.md, "Session of 2026-11-29 (fourth)"): one worker as fast as two or faster, and
 * 20-35 MiB less peak RSS. One core: none. At most 4 unless set, as jobs run side by side (a
 * 96-core host would otherwise also exceed the setting's range and refuse to start).
 */
function defaultRedactionThreads(): number {
  return Math.min(Math.max(availableParallelism() - 1, 0), 4);
}

type Raw = (key: keyof typeof settings) => string | undefined;

function httpLimits(raw: Raw): HttpListenerLimits {
  const d = defaultHttpListenerLimits;
  const limits: HttpListenerLimits = {
    headersTimeoutMs: integer(settings.httpHeadersTimeoutMs, raw("httpHeadersTimeoutMs") ?? String(d.headersTimeoutMs), 1, 3_600_000),
    requestTimeoutMs: integer(settings.httpRequestTimeoutMs, raw("httpRequestTimeoutMs") ?? String(d.requestTimeoutMs), 0, 86_400_000),
    keepAliveTimeoutMs: integer(settings.httpKeepAliveTimeoutMs, raw("httpKeepAliveTimeoutMs") ?? String(d.keepAliveTimeoutMs), 1, 3_600_000),
    idleTimeoutMs: integer(settings.httpIdleTimeoutMs, raw("httpIdleTimeoutMs") ?? String(d.idleTimeoutMs), 0, 86_400_000),
    maxConnections: integer(settings.httpMaxConnections, raw("httpMaxConnections") ?? String(d.maxConnections), 1, 1_000_000),
  };
  const problems = checkListenerLimits(limits);
  if (problems.length > 0) throw new StartupError(`${settings.httpHeadersTimeoutMs.env} and ${settings.httpRequestTimeoutMs.env}: ${problems.join("; ")}`);
  return limits;
}

function wireLimits(raw: Raw): WireExportLimits {
  const d = defaultWireExportLimits;
  return {
    maxConnections: integer(settings.exportMaxConnections, raw("exportMaxConnections") ?? String(d.maxConnections), 1, 1_000_000),
    maxLoggingIn: integer(settings.exportMaxLoggingIn, raw("exportMaxLoggingIn") ?? String(d.maxLoggingIn), 1, 1_000_000),
    maxLoggingInPerAddress: integer(
      settings.exportMaxLoggingInPerAddress,
      raw("exportMaxLoggingInPerAddress") ?? String(d.maxLoggingInPerAddress),
      1,
      1_000_000,
    ),
    loginTimeoutMs: integer(settings.exportLoginTimeoutMs, raw("exportLoginTimeoutMs") ?? String(d.loginTimeoutMs), 100, 3_600_000),
    idleTimeoutMs: integer(settings.exportIdleTimeoutMs, raw("exportIdleTimeoutMs") ?? String(d.idleTimeoutMs), 0, 86_400_000 * 7),
    // PostgreSQL's own messages may be up to 1 GiB; a proxy that buffers them must stop far sooner.
    maxClientMessageBytes: integer(
      settings.exportMaxMessageBytes,
      raw("exportMaxMessageBytes") ?? String(d.maxClientMessageBytes),
      64 * 1024,
      64 * 1024 * 1024,
    ),
  };
}

function failureBudget(raw: Raw): FailureBudgetLimits {
  const d = defaultFailureBudgetLimits;
  return {
    ...d,
    perAddress: integer(settings.authFailuresPerAddress, raw("authFailuresPerAddress") ?? String(d.perAddress), 1, 1_000_000),
    perUser: integer(settings.authFailuresPerUser, raw("authFailuresPerUser") ?? String(d.perUser), 1, 1_000_000),
    maxBackoffMs: integer(settings.authMaxBackoffMs, raw("authMaxBackoffMs") ?? String(d.maxBackoffMs), d.baseBackoffMs, 86_400_000),
    rejectedTokenMs: integer(settings.authRejectedTokenMs, raw("authRejectedTokenMs") ?? String(d.rejectedTokenMs), 0, 3_600_000),
  };
}

type NatsCredentialSettings = Pick<NodeConfig, "natsUser" | "natsPassword" | "natsToken" | "natsCredsFile" | "natsNkeyFile" | "natsCaFile" | "natsTlsCert">;

/** NATS client credentials: one kind at most, and only for servers of NATS_URL (the embedded server makes its own token). */
function natsCredentials(raw: Raw, external: boolean): NatsCredentialSettings {
  const file = (key: keyof typeof settings) => (raw(key) === undefined ? null : resolve(raw(key)!));
  const found: NatsCredentialSettings = {
    natsUser: raw("natsUser") ?? null,
    natsPassword: raw("natsPassword") ?? null,
    natsToken: raw("natsToken") ?? null,
    natsCredsFile: file("natsCredsFile"),
    natsNkeyFile: file("natsNkeyFile"),
    natsCaFile: file("natsCaFile"),
    natsTlsCert: tlsFiles(raw("natsTlsCert"), raw("natsTlsKey"), { cert: settings.natsTlsCert, key: settings.natsTlsKey }),
  };
  const given = (Object.keys(found) as Array<keyof NatsCredentialSettings>).filter((key) => found[key] !== null);
  if (given.length > 0 && !external) {
    throw new StartupError(
      `${given.map((key) => settings[key].env).join(", ")} apply to the NATS servers of ${settings.natsUrls.env}: the embedded nats-server makes a token of its own at each start`,
    );
  }
  if ((found.natsUser === null) !== (found.natsPassword === null))
    throw new StartupError(`${settings.natsUser.env} and ${settings.natsPassword.env} go together: set both or neither`);
  const kinds = [
    found.natsUser !== null && settings.natsUser.env,
    found.natsToken !== null && settings.natsToken.env,
    found.natsCredsFile && settings.natsCredsFile.env,
    found.natsNkeyFile && settings.natsNkeyFile.env,
  ].filter(Boolean);
  if (kinds.length > 1) throw new StartupError(`NATS takes one kind of credentials, but ${kinds.join(" and ")} are set: keep one`);
  return found;
}

/** Reads the node's configuration: flags win over environment variables, which win over defaults. */
export function loadConfig(argv: readonly string[], env: NodeJS.ProcessEnv): NodeConfig {
  const flags = parseFlags(argv);
  const raw = (key: keyof typeof settings): string | undefined => flags.get(settings[key].flag) ?? (env[settings[key].env] || undefined);

  const port = integer(settings.port, raw("port") ?? "8890", 0, 65535);
  const nodeId = raw("nodeId") ?? `${hostname()}-${port}`;
  if (!/^[A-Za-z0-9_-]{1,64}$/.test(nodeId)) throw new StartupError(`NODE_ID '${nodeId}' must be 1-64 letters, digits, '-' or '_'`);
  const logLevel = (raw("logLevel") ?? "info") as LogLevel;
  if (!logLevels.includes(logLevel)) throw new StartupError(`LOG_LEVEL must be one of ${logLevels.join(", ")}, got '${logLevel}'`);
  const decisionIndex = raw("decisionIndex") ?? "on";
  if (decisionIndex !== "on" && decisionIndex !== "off") throw new StartupError(`DECISION_INDEX must be on or off, got '${decisionIndex}'`);
  const logFormat = (raw("logFormat") ?? "json") as LogFormat;
  if (!logFormats.includes(logFormat)) throw new StartupError(`LOG_FORMAT must be one of ${logFormats.join(", ")}, got '${logFormat}'`);
  const natsUrls = (raw("natsUrls") ?? "")
    .split(",")
    .map((u) => u.trim())
    .filter(Boolean);
  const heartbeatMs = integer(settings.heartbeatMs, raw("heartbeatMs") ?? "1000", 50, 60_000);
  const natsAuth = natsCredentials(raw, natsUrls.length > 0);
  const leaseTtlMs = integer(settings.leaseTtlMs, raw("leaseTtlMs") ?? "4000", 200, 600_000);
  const redactionThreads = integer(settings.redactionThreads, raw("redactionThreads") ?? String(defaultRedactionThreads()), 0, 64);
  const objectstoreRedactionThreads = integer(settings.objectstoreRedactionThreads, raw("objectstoreRedactionThreads") ?? "1", 0, 64);
  if (leaseTtlMs < heartbeatMs * 3)
    throw new StartupError(`LEASE_TTL_MS (${leaseTtlMs}) must be at least three heartbeats (3 x HEARTBEAT_MS = ${heartbeatMs * 3})`);

  return {
    port,
    host: raw("host") ?? "127.0.0.1",
    allowedHosts: allowedHosts(settings.allowedHosts, raw("allowedHosts") ?? ""),
    dataDir: resolve(raw("dataDir") ?? `data/${nodeId}`),
    natsUrls,
    natsPort: integer(settings.natsPort, raw("natsPort") ?? "4222", 1, 65535),
    ...natsAuth,
    nodeId,
    logLevel,
    logFormat,
    decisionIndex: decisionIndex === "on",
    jsReplicas: integer(settings.jsReplicas, raw("jsReplicas") ?? "1", 1, 5),
    partitions: integer(settings.partitions, raw("partitions") ?? "64", 1, 4096),
    heartbeatMs,
    leaseTtlMs,
    callTimeoutMs: integer(settings.callTimeoutMs, raw("callTimeoutMs") ?? "5000", 10, 600_000),
    clockSkewMs: integer(settings.clockSkewMs, raw("clockSkewMs") ?? "250", 0, 600_000),
    actorModules: (raw("actorModules") ?? "")
      .split(",")
      .map((m) => m.trim())
      .filter(Boolean)
      .map((m) => resolve(m)),
    redactRetentionHours: integer(settings.redactRetentionHours, raw("redactRetentionHours") ?? "168", 1, 24 * 366),
    redactQuotas: redactQuotas(raw),
    auditRetention: {
      maxBytes: integer(settings.auditMaxBytes, raw("auditMaxBytes") ?? String(defaultRetention.audit.maxBytes), 65_536, Number.MAX_SAFE_INTEGER),
      maxAgeDays: integer(settings.auditMaxAgeDays, raw("auditMaxAgeDays") ?? String(defaultRetention.audit.maxAgeDays), 1, 36_600),
    },
    redactionThreads,
    redactionMaxWorkers: integer(
      settings.redactionMaxWorkers,
      raw("redactionMaxWorkers") ?? String(4 * Math.max(redactionThreads, objectstoreRedactionThreads)),
      Math.max(redactionThreads, objectstoreRedactionThreads),
      1024,
    ),
    objectstoreRedactionThreads,
    objectstoreRangeMemoryBytes: integer(
      settings.objectstoreRangeMemoryBytes,
      raw("objectstoreRangeMemoryBytes") ?? String(64 << 20),
      65_536,
      Number.MAX_SAFE_INTEGER,
    ),
    redactProgressMs: integer(settings.redactProgressMs, raw("redactProgressMs") ?? "1000", 50, 600_000),
    exportWorkers: integer(settings.exportWorkers, raw("exportWorkers") ?? "2", 0, 64),
    exportHost: raw("exportHost") ?? raw("host") ?? "127.0.0.1",
    exportPorts: portRange(settings.exportPorts, raw("exportPorts") ?? "15432-15631"),
    exportAllowedEndpoints: allowList(settings.exportAllowedEndpoints, raw("exportAllowedEndpoints") ?? ""),
    exportTls: tlsFiles(raw("exportTls"), raw("exportTlsKey"), { cert: settings.exportTls, key: settings.exportTlsKey }),
    tls: tlsFiles(raw("tls"), raw("tlsKey"), { cert: settings.tls, key: settings.tlsKey }),
    securityConfig: raw("securityConfig") ? resolve(raw("securityConfig")!) : null,
    httpLimits: httpLimits(raw),
    wireLimits: wireLimits(raw),
    failureBudget: failureBudget(raw),
  };
}
