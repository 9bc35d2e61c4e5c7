import type { RowCounts } from "../../exports/row-counts";

export type { RowCounts };
import { defaultWireExportLimits, type WireExportLimits } from "../../exports/wire-limits";

/** Reads UTF-8 bytes (a user id) into a string. */
export interface TextDecoding {
  text(bytes: Buffer, start: number, end: number): string;
}

/** Where an audit record of the proxy goes (category `postgres`). */
export type { ExportAudit as ProxyAudit, StoredAudit as ProxyStoredAudit } from "../../exports/door";

/** The wire limits every wire export shares, and the PostgreSQL door's own. */
export interface ProxyLimits extends WireExportLimits {
  /** Largest message accepted from the backend, in bytes (a row of the store: the operator's own data). */
  maxMessageBytes: number;
  /** How long opening the backend connection may take. */
  connectTimeoutMs: number;
}

/** The defaults (docs/operations.md, "Limits on listeners"). */
export const defaultProxyLimits: ProxyLimits = { ...defaultWireExportLimits, maxMessageBytes: 64 * 1024 * 1024, connectTimeoutMs: 10_000 };

/** What one connection counted, for the connection's trace record and the export's totals. */
export interface SessionCounts extends RowCounts {
  notificationsDropped: number;
  refused: number;
}

/**
 * Direct verification of spec 5.1, for an export whose component enforces authentication: the
 * proxy asks the client for its password (over TLS only), verifies it (LDAP for a user name and
 * password, OAuth for a bearer token given as the password) and audits the outcome, before any
 * byte reaches the backend; then logs in to the backend itself.
 */
export interface DirectVerification {
  verify(
    user: string,
    password: string,
    connectionId: string,
  ): Promise<{ ok: true; subject: string; assertions: string[]; writes: boolean } | { ok: false; sqlState: string; message: string }>;
  /** The export's own back-end identity; absent: the client's user name and password. */
  backendIdentity?: { user: string; password: string };
}
