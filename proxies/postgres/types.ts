import type { Verdict } from "../../decision/verdicts";

/** What one user's decision lets through a row: shared by every user with the same outcome (used as a key). */
export type RowVerdict = Verdict;

/** One record field of the export's mapping group as the proxy needs it. */
export interface MappedField {
  recordField: string;
  /** The category the field belongs to; undefined: mapped to no category (always NULL). */
  category: string | undefined;
  /** Position among the resource-context fields (policy-semantics 4: first non-empty wins); -1 if not one. */
  resourceOrder: number;
}

/** The mapping group as it stands; `key` changes whenever the group or the configuration revision does. */
export interface MappingView {
  key: string;
  fields: ReadonlyMap<string, MappedField>;
}

/**
 * Decisions for one export (one purpose, one mapping group), near the proxy: verdicts come
 * from memory once a user has been decided; `load` decides (and traces) the missing ones.
 */
export interface RowDecider {
  mapping(): MappingView;
  verdict(userId: string): RowVerdict | undefined;
  /** Until when the user's verdict holds if nothing changes (epoch ms); undefined when none is in memory. */
  expiresAt(userId: string): number | undefined;
  /** Decides these users (the answer, if any, is for callers that want the decisions themselves). */
  load(userIds: readonly string[]): Promise<unknown>;
}

/** Reads UTF-8 bytes (a user id) into a string. */
export interface TextDecoding {
  text(bytes: Buffer, start: number, end: number): string;
}

/** Where an audit record of the proxy goes (category `postgres`). */
export type { ExportAudit as ProxyAudit } from "../../exports/door";

export interface ProxyLimits {
  /** Largest message accepted from a client or a backend, in bytes. */
  maxMessageBytes: number;
  /** Connections served at once; past this a client gets SQLSTATE 53300. */
  maxConnections: number;
  /** How long opening the backend connection may take. */
  connectTimeoutMs: number;
}

export const defaultProxyLimits: ProxyLimits = { maxMessageBytes: 64 * 1024 * 1024, maxConnections: 500, connectTimeoutMs: 10_000 };

/** Rows a connection (or several) saw, kept whole or with values emptied, dropped; and values emptied. */
export interface RowCounts {
  rowsIn: number;
  rowsKept: number;
  rowsDropped: number;
  valuesNulled: number;
  /** Statement texts analysed, and of those the ones parsed (not found in the analysis cache). */
  statements: number;
  statementsParsed: number;
}

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
  verify(user: string, password: string, connectionId: string): Promise<{ ok: true; subject: string; assertions: string[] } | { ok: false; sqlState: string; message: string }>;
  /** The export's own back-end identity; absent: the client's user name and password. */
  backendIdentity?: { user: string; password: string };
}
