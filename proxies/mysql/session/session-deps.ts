import type { SecureContext } from "node:tls";
import { defaultWireExportLimits, type WireExportLimits } from "../../../exports/wire-limits";
import type { BackendTls } from "../../../exports/backend-tls";
import type { CredentialVerification } from "../../../exports/direct-verification";
import type { ExportAudit, StoredAudit } from "../../../exports/door";
import type { RowCounts } from "../../../exports/row-counts";
import type { RowDecider } from "../../../exports/row-decider";
import type { AnalysisCache, StatementPolicy } from "../analysis/statement-analysis";

/**
 * The limits every wire export shares (exports/wire-limits.ts: sessions and connections logging
 * in per export and per address, the login and idle timeouts, the largest message from a
 * logged-in client), and the MySQL door's own.
 */
export interface MysqlLimits extends WireExportLimits {
  /** Largest payload accepted from the backend (a row of the store: the operator's own data). */
  maxPayloadBytes: number;
  connectTimeoutMs: number;
  /** Deciding the users of a run of rows. */
  decideTimeoutMs: number;
}

export const defaultMysqlLimits: MysqlLimits = {
  ...defaultWireExportLimits,
  maxPayloadBytes: 64 * 1024 * 1024,
  connectTimeoutMs: 10_000,
  decideTimeoutMs: 15_000,
};

/** Largest payload taken from a client before it logged in (a HandshakeResponse with its attributes, an auth answer): far below a logged-in client's. */
export const preLoginPayloadBytes = 64 * 1024;

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
  /** The same, for records the connection needs before it is served (the port's opening, its outgoing and pass-through records): false when not stored. */
  storedAudit: StoredAudit;
  limits: MysqlLimits;
  /** The export certificate: offered to clients (CLIENT_SSL) when present. */
  tls?: SecureContext;
  /** TLS to the backend (the export's backendTls); absent: plain TCP. */
  backendTls?: BackendTls;
  /** Present when the component `mysql` enforces authentication. */
  verification?: CredentialVerification;
  policy: StatementPolicy;
  analyses: AnalysisCache;
  /** The client logged in: its place among the connections logging in is free. */
  onLoggedIn(): void;
  onEnd(counts: MysqlSessionCounts, identity: { user?: string; database?: string }): void;
}
