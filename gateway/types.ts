import type { Logger } from "pino";
import type { Registry } from "prom-client";

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
}

/** The REST root paths of the spec (section 1), each a component name for authentication selectors. */
export const rootPaths = ["config", "decision", "export", "mapping", "redact", "user"] as const;
export type RootPath = (typeof rootPaths)[number];
