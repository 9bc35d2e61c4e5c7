import type { LoginSlotLimits } from "./login-slots";

/**
 * Limits every wire export (PostgreSQL, and each wire protocol after it) puts on its clients,
 * set once for the node (EXPORT_* settings, docs/operations.md "Limits on listeners").
 */
export interface WireExportLimits extends LoginSlotLimits {
  /** Logged-in sessions served at once per export; past this a client is refused. */
  maxConnections: number;
  /** A connection on which nothing is received or sent for this long is closed; 0: never. */
  idleTimeoutMs: number;
  /** Largest message accepted from a logged-in client, in bytes. */
  maxClientMessageBytes: number;
}

export const defaultWireExportLimits: WireExportLimits = {
  maxConnections: 500,
  maxLoggingIn: 64,
  maxLoggingInPerAddress: 16,
  loginTimeoutMs: 15_000,
  idleTimeoutMs: 3_600_000,
  maxClientMessageBytes: 8 * 1024 * 1024,
};
