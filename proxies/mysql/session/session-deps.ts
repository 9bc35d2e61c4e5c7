import type { SecureContext } from "node:tls";
import type { CredentialVerification } from "../../../exports/direct-verification";
import type { ExportAudit } from "../../../exports/door";
import type { RowCounts } from "../../../exports/row-counts";
import type { RowDecider } from "../../../exports/row-decider";
import type { AnalysisCache, StatementPolicy } from "../analysis/statement-analysis";

export interface MysqlLimits {
  /** Largest payload accepted from a client or the backend. */
  maxPayloadBytes: number;
  /** Connections served at once; past this a client gets error 1040. */
  maxConnections: number;
  connectTimeoutMs: number;
  /** Connecting and logging in, in all. */
  loginTimeoutMs: number;
  /** Deciding the users of a run of rows. */
  decideTimeoutMs: number;
}

export const defaultMysqlLimits: MysqlLimits = {
  maxPayloadBytes: 64 * 1024 * 1024,
  maxConnections: 500,
  connectTimeoutMs: 10_000,
  loginTimeoutMs: 60_000,
  decideTimeoutMs: 15_000,
};

/** What one connection counted, for its trace record and the export's totals. */
export interface MysqlSessionCounts extends RowCounts {
  refused: number;
}

/** What a MySQL session needs from its export. */
export interface MysqlSessionDeps {
  exportId: string;
  connectionId: string;
  backend: { host: string; port: number };
  decider: RowDecider;
  audit: ExportAudit;
  limits: MysqlLimits;
  /** The export certificate: offered to clients (CLIENT_SSL) when present. */
  tls?: SecureContext;
  /** Present when the component `mysql` enforces authentication. */
  verification?: CredentialVerification;
  policy: StatementPolicy;
  analyses: AnalysisCache;
  onEnd(counts: MysqlSessionCounts, identity: { user?: string; database?: string }): void;
}
