import type { SecureContext } from "node:tls";
import type { BackendKeyData } from "../../../protocols/postgres/backend-key-data";
import type { AnalysisCache } from "../analysis/analysis-cache";
import type { StatementPolicy } from "../analysis/statement-analysis";
import type { CancelKeys } from "../cancel-keys";
import type { BackendEndpoint } from "./backend-tls";
import type { DirectVerification, ProxyAudit, ProxyLimits, ProxyStoredAudit, SessionCounts, TextDecoding } from "../types";
import type { RowDecider } from "../../../exports/row-decider";
import type { PushdownVerdicts } from "../verdict-watch";

/** What a session gets from the export that runs it. */
export interface SessionDeps {
  exportId: string;
  connectionId: string;
  backend: BackendEndpoint;
  limits: ProxyLimits;
  decider: RowDecider;
  audit: ProxyAudit;
  /** The same, for records the connection needs before it is served (its outgoing connection, its pass-through): false when not stored. */
  storedAudit: ProxyStoredAudit;
  cancelKeys: CancelKeys;
  /** A CancelRequest (a connection of its own) with these keys: cancel the query of the connection they were issued to, wherever it runs. */
  cancel(proxyKeys: BackendKeyData, connectionId: string): void;
  /** Present when the export terminates TLS (SSLRequest answered 'S'). */
  tls?: SecureContext;
  /** Present when the export's component enforces authentication: the proxy verifies the client itself (spec 5.1). */
  directVerification?: DirectVerification;
  /** Reads the rows' user ids (shared by the export's connections). */
  userIds: TextDecoding;
  /** Read-only unless writes are allowed; strict predicates. */
  policy: StatementPolicy;
  /** Present for a pushdown export: the verdict tables, by database (policy.pushdown names the table). */
  pushdown?: PushdownVerdicts;
  /** Statement analyses by text, shared by the export's connections in this process. */
  analyses: AnalysisCache;
  /** The connection logged in: it is a session now, no longer one logging in. */
  onLoggedIn?(): void;
  onEnd(counts: SessionCounts, identity: { user?: string; database?: string }): void;
}
