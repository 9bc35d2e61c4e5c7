import type { Logger } from "pino";
import type { Registry } from "prom-client";
import type { PolicyConfig } from "../actors/policy/model";
import type { PolicyRevisionRecord } from "../actors/policy/revision-actor";
import type { ItemKind, SectionWrite } from "../actors/policy/sections";

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
}

/** The REST root paths of the spec (section 1), each a component name for authentication selectors. */
export const rootPaths = ["config", "decision", "export", "mapping", "redact", "user"] as const;
export type RootPath = (typeof rootPaths)[number];

/** Who made a request: the authenticated identity once authentication lands, else "anonymous". */
export type Requester = string;

/** A configuration write's outcome. */
export interface ConfigWriteResult {
  revision: number;
  changed: boolean;
}

/**
 * The policy configuration as the gateway sees it: actor calls behind a port, so the gateway
 * never touches JetStream. Errors are runtime errors with codes (CONFIG_INVALID,
 * REVISION_MISMATCH, CONFIG_REFERENCED, NOT_FOUND) and details.
 */
export interface PolicyPort {
  read(): Promise<{ revision: number; config: PolicyConfig }>;
  replace(config: unknown, by: Requester, expectedRevision?: number): Promise<ConfigWriteResult>;
  write(write: SectionWrite, by: Requester, expectedRevision?: number): Promise<ConfigWriteResult>;
  remove(kind: ItemKind, id: string, by: Requester, expectedRevision?: number): Promise<ConfigWriteResult>;
  history(fromRevision: number, limit: number): Promise<Array<Omit<PolicyRevisionRecord, "config">>>;
  revision(revision: number): Promise<PolicyRevisionRecord | null>;
}
