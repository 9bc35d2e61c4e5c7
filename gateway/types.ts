import type { Logger } from "pino";
import type { Registry } from "prom-client";
import type { HttpAuthentication } from "../http/authentication";
import type { DecisionPort, DocumentPort, ExportPort, PolicyPort, RedactPort, RightsPort, UserPort } from "../api/types";

/** What readiness reports; the node fills it from its runtime. */
export interface HealthReport {
  ready: boolean;
  checks: Record<string, { ok: boolean; detail?: unknown }>;
}

/** Everything the gateway needs from the node that hosts it. */
export interface GatewayDeps {
  logger: Logger;
  metrics: Registry;
  nodeId: string;
  health: () => HealthReport;
  /** Largest accepted request body for JSON routes, in bytes. */
  bodyLimit?: number;
  /** The configuration; absent in gateways built without it (then /config and /mapping answer 501). */
  policy?: PolicyPort;
  users?: UserPort;
  /** Data-subject rights (report, restriction, erasure report); absent: DELETE /user erases without the report. */
  rights?: RightsPort;
  decisions?: DecisionPort;
  redact?: RedactPort;
  /** Document redaction jobs; absent: the document paths answer 501. */
  documents?: DocumentPort;
  /** Exports; absent: /export answers 501. */
  exports?: ExportPort;
  auth?: HttpAuthentication;
  /** The web UI files (gateway/ui-routes.ts); absent: read from the checkout's ui/ folder at startup. */
  uiManifest?: Map<string, import("./ui-routes").UiFile>;
  /** TLS server authentication (spec 5.1): PEM certificate chain and key. */
  https?: { cert: Buffer; key: Buffer };
  /** The address the gateway listens on (HOST): whether only loopback names are answered to (http/host-check.ts); absent: 127.0.0.1. */
  host?: string;
  /** ALLOWED_HOSTS: names answered to besides localhost and IP addresses; absent: none. */
  allowedHosts?: import("../http/allowed-hosts").AllowedHosts;
  /** The security configuration's domainName selectors: names the Host check answers to (http/host-check.ts knownNames). */
  knownHostNames?: readonly string[];
  /** Timeouts and connection cap of the listener; absent: the defaults. */
  limits?: import("../http/listener-limits").HttpListenerLimits;
  /** Routes the embedder adds beside the service's, behind the same hooks (a benchmark's no-op baseline); the node's configuration never sets them. */
  extraRoutes?: import("fastify").FastifyPluginAsync;
}

/** The REST root paths of the spec (section 1), each a component name for authentication selectors. */
export const rootPaths = ["config", "decision", "export", "mapping", "redact", "user"] as const;
export type RootPath = (typeof rootPaths)[number];
