import { randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { createSecureContext, type SecureContext } from "node:tls";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import type { FastifyInstance } from "fastify";
import type { Logger } from "pino";
import { collectDefaultMetrics, Registry } from "prom-client";
import { builtInActors } from "../actors/catalog";
import { provision } from "../actors/runtime/provision";
import { provisionOptions, startNode, type ActorRuntime } from "../actors/runtime/runtime";
import type { AnyActorDefinition } from "../actors/runtime/types";
import { build } from "../gateway/build";
import { refusalCounter } from "../gateway/metrics";
import type { GatewayDeps, HealthReport } from "../gateway/types";
import { settings, type NodeConfig } from "./config";
import { NatsServerProcess } from "./nats-server";
import { natsClientOptions, type NatsClientOptions } from "./nats-client-options";
import { withoutUserInfo } from "../auth/redacted-url";
import { DecisionService } from "../ports/decision-service";
import { DocumentService } from "../redaction/jobs/document-service";
import { ExportService } from "../exports/export-service";
import { ExportSupervisor } from "../exports/export-supervisor";
import { exportDoors } from "./export-doors";
import { policyPort } from "../ports/policy-port";
import { userPort } from "../ports/user-port";
import { IndexerHost } from "./indexer-host";
import { IndexBucket } from "../rights/index-bucket";
import { RightsService } from "../rights/rights-service";
import { StartupError } from "./startup-error";
import { registerNodeMetrics, type NatsTally } from "./node-metrics";
import { Authenticator } from "../auth/authenticator";
import { FailureBudget } from "../auth/failure-budget";
import { component, componentTypes, servedComponents } from "../auth/components";
import { KvReplayGuard } from "../auth/replay-guard";
import { isEnforced, namedDomains, openSecurityConfig, type SecurityConfig } from "../auth/security-config";
import { loadSecurityFile } from "../auth/security-file";
import { SecurityConfigError } from "../auth/types";
import { verifierFactories } from "../auth/verifier-factories";
import { limitCsvWorkers } from "../redaction/csv-worker-pool";
import { limitRangeMemory } from "../proxies/objectstore/ranged-body";

export interface RunningNode {
  config: NodeConfig;
  runtime: ActorRuntime;
  gateway: FastifyInstance;
  /** Port the gateway listens on (useful when PORT=0 asked for any free port). */
  gatewayPort: number;
  natsUrl: string;
  stop(): Promise<void>;
}

function isActorDefinition(value: unknown): value is AnyActorDefinition {
  const candidate = value as AnyActorDefinition | null;
  return !!candidate && typeof candidate.type === "string" && typeof candidate.initialState === "function" && typeof candidate.handlers === "object";
}

function loadActorModules(paths: readonly string[]): AnyActorDefinition[] {
  const definitions: AnyActorDefinition[] = [];
  for (const path of paths) {
    let exported: Record<string, unknown>;
    try {
      exported = require(path) as Record<string, unknown>;
    } catch (error) {
      throw new StartupError(`cannot load actor module ${path} (${(error as Error).message}); check ${settings.actorModules.env}`);
    }
    const found = Object.values(exported).filter(isActorDefinition);
    if (found.length === 0) throw new StartupError(`actor module ${path} exports no actor definition; check ${settings.actorModules.env}`);
    definitions.push(...found);
  }
  return definitions;
}

async function connectToNats(urls: string[], config: NodeConfig, credentials: NatsClientOptions): Promise<NatsConnection> {
  try {
    // noAsyncTraces: otherwise every request and JetStream publish builds Error objects with stack
    // traces up front, in case it fails (22 % of the node's CPU under a pipeline stream). Failures still
    // say what failed, without the caller's stack.
    return await connect({
      ...credentials,
      servers: urls,
      name: `warden-${config.nodeId}`,
      maxReconnectAttempts: -1,
      reconnectTimeWait: 500,
      timeout: 5000,
      noAsyncTraces: true,
    });
  } catch (error) {
    throw new StartupError(
      `cannot connect to NATS at ${urls.map(withoutUserInfo).join(", ")} (${(error as Error).message}): check ${settings.natsUrls.env} and that the servers run`,
      { cause: error },
    );
  }
}

/** The node's settings as audited and logged: secrets named as set, never shown; URLs without user info. */
function publicConfig(config: NodeConfig): Record<string, unknown> {
  const secret = (value: string | null) => (value === null ? null : "(set)");
  return {
    ...config,
    natsUrls: config.natsUrls.map(withoutUserInfo),
    natsPassword: secret(config.natsPassword),
    natsToken: secret(config.natsToken),
    exportAllowedEndpoints: config.exportAllowedEndpoints?.describe() ?? null,
    allowedHosts: config.allowedHosts.describe() || null,
  };
}

/** JetStream needs a moment after a server (or a cluster's meta leader) starts; retry while it says so. */
async function whenJetStreamAnswers<T>(what: () => Promise<T>, log: Logger): Promise<T> {
  const until = Date.now() + 30_000;
  for (;;) {
    try {
      return await what();
    } catch (error) {
      const message = String((error as Error).message);
      const transient = /no responders|timeout|temporarily unavailable|insufficient resources|no suitable peers|jetstream not (enabled|ready)|503/i.test(
        message,
      );
      if (!transient || Date.now() > until) {
        throw new StartupError(`JetStream is not usable on the NATS servers (${message}): they must run with JetStream enabled (nats-server -js)`, {
          cause: error,
        });
      }
      log.debug({ err: error }, "JetStream not ready yet; retrying");
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
  }
}

/** Starts one node: embedded NATS when no NATS_URL, the actor runtime, the gateway; audits the start. */
/** A certificate and key from PEM files, checked as a pair at startup; unreadable or mismatched: the node does not start. */
function loadTlsFiles(
  files: { certFile: string; keyFile: string } | null,
  what: string,
  variables: string,
): { cert: Buffer; key: Buffer; context: SecureContext } | undefined {
  if (!files) return undefined;
  try {
    const pair = { cert: readFileSync(files.certFile), key: readFileSync(files.keyFile) };
    return { ...pair, context: createSecureContext(pair) };
  } catch (error) {
    throw new StartupError(`cannot load the ${what} TLS certificate or key (${(error as Error).message}): check ${variables}`);
  }
}

/** A security configuration problem, as the one line the node exits with. */
function securityStartupError(file: string, error: unknown): unknown {
  return error instanceof SecurityConfigError ? new StartupError(`security configuration ${file}: ${error.message}`) : error;
}

/** The security configuration file, checked before anything starts (spec 7: a bad file stops the node). */
function loadSecurity(config: NodeConfig, exportTls: SecureContext | undefined): SecurityConfig {
  if (!config.securityConfig) return openSecurityConfig;
  let security: SecurityConfig;
  try {
    security = loadSecurityFile(config.securityConfig);
  } catch (error) {
    throw securityStartupError(config.securityConfig, error);
  }
  // The exports' own doors would ask for credentials while anyone could create, repoint or delete them through the API.
  const enforcedExports = servedComponents.filter((name) => componentTypes[name] === "export" && isEnforced(security, component(name)));
  if (enforcedExports.length > 0 && !isEnforced(security, component("export"))) {
    throw new StartupError(
      `security configuration ${config.securityConfig}: export type${enforcedExports.length > 1 ? "s" : ""} ${enforcedExports.map((name) => `'${name}'`).join(", ")} enforce${enforcedExports.length > 1 ? "" : "s"} authentication but the 'export' API that manages them does not: add {"componentName": "export"} to enforcedComponents`,
    );
  }
  for (const name of ["postgres", "mysql"] as const) {
    if (!exportTls && isEnforced(security, component(name))) {
      throw new StartupError(
        `security configuration ${config.securityConfig}: component '${name}' enforces authentication, which takes passwords only over TLS: set ${settings.exportTls.env} and ${settings.exportTlsKey.env}`,
      );
    }
  }
  return security;
}

/** Verifiers made and their endpoints checked (spec 5.2); a failure names the profile. */
async function startAuthenticator(config: NodeConfig, security: SecurityConfig, nc: NatsConnection, replicas: number): Promise<Authenticator> {
  if (!config.securityConfig) return Authenticator.open();
  try {
    return await Authenticator.start(
      security,
      verifierFactories,
      { replayGuard: await KvReplayGuard.open(nc, { replicas }) },
      config.securityConfig,
      new FailureBudget(config.failureBudget),
    );
  } catch (error) {
    throw securityStartupError(config.securityConfig, error);
  }
}

export async function startServiceNode(config: NodeConfig, logger: Logger, embedding: Pick<GatewayDeps, "extraRoutes"> = {}): Promise<RunningNode> {
  const exportTls = loadTlsFiles(config.exportTls, "export", `${settings.exportTls.env} and ${settings.exportTlsKey.env}`);
  const gatewayFiles = loadTlsFiles(config.tls, "gateway", `${settings.tls.env} and ${settings.tlsKey.env}`);
  const gatewayTls = gatewayFiles && { cert: gatewayFiles.cert, key: gatewayFiles.key };
  const security = loadSecurity(config, exportTls?.context);
  const definitions = [...builtInActors, ...loadActorModules(config.actorModules)];
  let natsServer: NatsServerProcess | undefined;
  // The embedded server takes a fresh token at each start, known to this process alone (its proxy
  // workers reach NATS through it): no other local process can call actors behind the gateway.
  const embeddedToken = config.natsUrls.length === 0 ? `wt${randomBytes(32).toString("hex")}` : undefined;
  const credentials = natsClientOptions(config, embeddedToken);
  if (embeddedToken) {
    natsServer = await NatsServerProcess.start({
      host: "127.0.0.1",
      port: config.natsPort,
      dir: join(config.dataDir, "nats"),
      serverName: `warden-${config.nodeId}`,
      token: embeddedToken,
      log: logger,
    });
  }
  const urls = natsServer ? [natsServer.url] : config.natsUrls;
  const nc = await connectToNats(urls, config, credentials).catch(async (error) => {
    await natsServer?.stop();
    throw error;
  });
  const nats: NatsTally = { connected: true, disconnects: 0, reconnects: 0 };
  void (async () => {
    for await (const status of nc.status()) {
      if (status.type === "ping") continue;
      if (status.type === "disconnect") {
        nats.connected = false;
        nats.disconnects++;
      }
      if (status.type === "reconnect") {
        nats.connected = true;
        nats.reconnects++;
      }
      logger.info({ nats: status.type }, "NATS connection status");
    }
  })();

  const metrics = new Registry();
  collectDefaultMetrics({ register: metrics });
  const setup = {
    nc,
    logger,
    metrics,
    options: {
      nodeId: config.nodeId,
      partitions: config.partitions,
      heartbeatMs: config.heartbeatMs,
      leaseTtlMs: config.leaseTtlMs,
      callTimeoutMs: config.callTimeoutMs,
      clockSkewMs: config.clockSkewMs,
    },
    provision: { replicas: config.jsReplicas, auditRetention: config.auditRetention },
  };
  // Only provisioning is retried (it is idempotent): a fresh NATS cluster elects its JetStream leader first.
  // A node that fails to start (e.g. JetStream cannot reserve a storage limit) leaves nothing running, its embedded server included.
  let started: { stop(): Promise<void> } | undefined;
  const abandon = async (error: unknown): Promise<never> => {
    await started?.stop();
    await nc.drain().catch(() => undefined);
    await natsServer?.stop();
    throw error;
  };
  const provisioned = await whenJetStreamAnswers(() => provision(nc, provisionOptions(setup)), logger).catch(abandon);
  const { runtime } = await startNode({ ...setup, provisioned }, definitions).catch(abandon);
  started = runtime;
  const authenticator: Authenticator = await startAuthenticator(config, security, nc, config.jsReplicas).catch(abandon);

  const health = (): HealthReport => {
    const status = runtime.status(nats.connected && !nc.isClosed());
    const checks = {
      nats: { ok: status.natsConnected },
      lease: { ok: status.leaseValid, detail: { incarnation: status.incarnation } },
      partitions: {
        ok: status.assignedPartitions === status.partitions,
        detail: { assigned: status.assignedPartitions, total: status.partitions, ownedHere: status.ownedPartitions, liveNodes: status.liveNodes },
      },
    };
    return { ready: Object.values(checks).every((check) => check.ok), checks };
  };
  // One bound on CSV worker threads for every document of this node (jobs and GetObjects).
  limitCsvWorkers(config.redactionMaxWorkers);
  limitRangeMemory(config.objectstoreRangeMemoryBytes);
  const decisions = await DecisionService.start(runtime);
  const documents = await DocumentService.start({
    nc,
    runtime,
    decisions,
    log: logger,
    retentionHours: config.redactRetentionHours,
    threads: config.redactionThreads,
    progressEveryMs: config.redactProgressMs,
    jsReplicas: config.jsReplicas,
    quotas: config.redactQuotas,
  }).catch(abandon);
  const { doors, postgres } = exportDoors({
    nc,
    decisions,
    log: logger,
    tls: exportTls && { cert: exportTls.cert, key: exportTls.key },
    jsReplicas: config.jsReplicas,
    proxyWorkers: config.exportWorkers,
    objectstoreRedactionThreads: config.objectstoreRedactionThreads,
    httpLimits: config.httpLimits,
    hostCheck: { allowed: config.allowedHosts, refused: refusalCounter(metrics), knownNames: namedDomains(security) },
    wireLimits: config.wireLimits,
  });
  const exportSupervisor = new ExportSupervisor({
    nc,
    runtime,
    decisions,
    log: logger,
    listenHost: config.exportHost,
    tls: exportTls,
    authenticator,
    doors,
    allowedEndpoints: config.exportAllowedEndpoints,
  });
  await exportSupervisor.start();
  registerNodeMetrics(metrics, { runtime, nats, exports: exportSupervisor, postgres, documents, authenticator });
  const exports = new ExportService({
    nc,
    runtime,
    decisions,
    supervisor: exportSupervisor,
    listenHost: config.exportHost,
    portRange: config.exportPorts,
    authenticator,
    doors,
    allowedEndpoints: config.exportAllowedEndpoints,
  });
  const decisionIndex = await IndexBucket.open(nc, config.jsReplicas);
  const indexer = config.decisionIndex ? await IndexerHost.start({ config, embeddedToken, urls }, runtime, logger) : undefined;
  const users = userPort(runtime, (userId) => decisions.forgetUser(userId));
  const rights = new RightsService(runtime, decisionIndex, (userId) => decisions.forgetUser(userId), users.erase);
  /** The one shutdown order: doors first (no new work), then what they call, then the connection and the server. */
  const shutDown = async (gatewayOpen: boolean): Promise<void> => {
    if (gatewayOpen) await gateway.close();
    await indexer?.stop();
    await exportSupervisor.stop();
    await documents.stop();
    await authenticator.close();
    await runtime.stop();
    await nc.drain();
    await natsServer?.stop();
  };
  const gateway = build({
    logger,
    metrics,
    nodeId: config.nodeId,
    health,
    policy: policyPort(runtime),
    users,
    rights,
    decisions,
    redact: decisions,
    documents,
    exports,
    https: gatewayTls,
    host: config.host,
    allowedHosts: config.allowedHosts,
    knownHostNames: namedDomains(security),
    limits: config.httpLimits,
    auth: { authenticator, audit: (entry) => runtime.events.audit(entry) },
    extraRoutes: embedding.extraRoutes,
  });
  try {
    await gateway.listen({ port: config.port, host: config.host });
  } catch (error) {
    await shutDown(false);
    const code = (error as NodeJS.ErrnoException).code;
    if (code === "EADDRINUSE") throw new StartupError(`port ${config.port} on ${config.host} is in use: set ${settings.port.env} to a free port`);
    if (code === "EADDRNOTAVAIL") throw new StartupError(`cannot bind ${config.host}: set ${settings.host.env} to an address of this machine`);
    throw error;
  }
  const gatewayPort = (gateway.server.address() as { port: number }).port;

  await runtime.events.audit({
    category: "service",
    level: "info",
    event: "config.active",
    message: "node started with this configuration",
    details: { node: publicConfig(config), actorTypes: runtime.host.registeredTypes(), authentication: authenticator.describe() },
  });
  for (const selection of authenticator.selections()) {
    await runtime.events.audit({
      category: selection.component,
      level: "info",
      event: "config.selection",
      message: `${selection.component}: ${selection.enforced ? "enforces authentication" : "does not enforce authentication"}${Object.keys(selection.byDomainName).length > 0 ? " (see byDomainName for named domains)" : ""}`,
      details: { ...selection },
    });
  }
  if (!gatewayTls && authenticator.enforcedComponents().some((name) => componentTypes[name] === "api")) {
    // Allowed (TLS may end at a load balancer in front), but said: Basic passwords and tokens would cross the network in the clear.
    await runtime.events.audit({
      category: "service",
      level: "warn",
      event: "authentication.cleartext",
      message: `REST APIs enforce authentication but the gateway has no TLS (${settings.tls.env}): credentials cross the network in the clear unless TLS ends in front of the node`,
    });
  }
  if (!exportTls && authenticator.isEnforced(component("pipeline"))) {
    await runtime.events.audit({
      category: "pipeline",
      level: "warn",
      event: "authentication.cleartext",
      message: `pipeline exports enforce authentication but have no TLS (${settings.exportTls.env}): their HTTP ports take credentials in the clear unless TLS ends in front of the node`,
    });
  }
  if (security.enforcedComponents.length > 0 && !security.authorization) {
    await runtime.events.audit({
      category: "service",
      level: "warn",
      event: "authorization.absent",
      message: "authentication is enforced but the security configuration has no 'authorization' section: every verified subject holds every permission",
      details: { enforcedComponents: authenticator.enforcedComponents() },
    });
  }
  if (security.enforcedComponents.length === 0) {
    await runtime.events.audit({
      category: "service",
      level: "debug",
      event: "authentication.disabled",
      message: "no component enforces authentication: API use is allowed without credentials",
    });
  }
  await runtime.events.audit({
    category: "service",
    level: "info",
    event: "port.opened",
    message: `gateway listening on ${config.host}:${gatewayPort}${gatewayTls ? " (TLS)" : ""}`,
    details: { endpointTypes: ["api", "metrics"], host: config.host, port: gatewayPort, tls: !!gatewayTls },
  });
  if (natsServer) {
    await runtime.events.audit({
      category: "service",
      level: "info",
      event: "port.opened",
      message: `embedded nats-server listening on ${natsServer.options.host}:${natsServer.options.port}`,
      details: { endpointTypes: ["peer"], host: natsServer.options.host, port: natsServer.options.port },
    });
  }
  logger.info({ port: gatewayPort, nats: urls.map(withoutUserInfo) }, "node ready to serve");

  let stopping: Promise<void> | undefined;
  const stop = () =>
    (stopping ??= (async () => {
      await shutDown(true);
      logger.info("node stopped");
    })());
  return { config, runtime, gateway, gatewayPort, natsUrl: urls.map(withoutUserInfo).join(","), stop };
}
