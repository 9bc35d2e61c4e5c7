import type { StatementPolicy } from "./analysis/statement-analysis";
import type { BackendKeyData } from "../../protocols/postgres/backend-key-data";
import type { DirectVerification, ProxyLimits, RowCounts, SessionCounts } from "./types";
import type { MappingView } from "../../exports/row-decider";
import type { VerdictState } from "./verdict-table";

/**
 * Messages between a serving node and its proxy worker processes (child_process IPC, "advanced"
 * serialization: Maps, Sets and Buffers cross as they are). The node keeps each export's
 * listener, decisions, verification, audit and traces; a worker runs the sessions of the
 * connections handed to it.
 */

/** What a worker needs to run an export's sessions. */
export interface WorkerExport {
  exportId: string;
  backend: { host: string; port: number };
  limits: ProxyLimits;
  /** Present when the export verifies clients itself (spec 5.1); the verification is the node's. */
  directVerification?: { backendIdentity?: { user: string; password: string } };
  mapping: MappingView;
  policy: StatementPolicy;
}

/** One user's verdict as it crosses to a worker. */
export interface VerdictWire {
  userId: string;
  allowed: boolean;
  reason: string;
  categories: string[];
  /** The node's lifetime of the verdict (epoch ms): the worker keeps it no longer. */
  expiresAt: number;
}

export interface DecideAnswer {
  /** The mapping the verdicts were made under (their revision). */
  mapping: MappingView;
  verdicts: VerdictWire[];
}

export type VerifyAnswer = Awaited<ReturnType<DirectVerification["verify"]>>;

/** Sums over an export's open sessions in one worker. */
export type LiveCounts = RowCounts;

export type ToWorker =
  | { kind: "init"; slot: number; slots: number; tls?: { cert: Buffer; key: Buffer } }
  | ({ kind: "export" } & WorkerExport)
  | { kind: "mapping"; exportId: string; mapping: MappingView }
  /** Sent with the client's socket, which the node has not read from. */
  | { kind: "connection"; exportId: string; connectionId: string }
  | { kind: "user-changed"; userId: string }
  /** The node may have missed user changes (its watch of user states was lost): every verdict goes. */
  | { kind: "users-reset" }
  | { kind: "close-export"; exportId: string; requestId: number }
  | { kind: "cancel"; exportId: string; keys: BackendKeyData; connectionId: string }
  | { kind: "answer"; requestId: number; value?: DecideAnswer | VerifyAnswer | boolean; error?: string }
  /** Pushdown: the verdict table of one database, each time its state changes (after the worker asked for it). */
  | { kind: "verdicts"; exportId: string; database: string; state: VerdictState };

export type FromWorker =
  | { kind: "ready" }
  | { kind: "decide"; requestId: number; exportId: string; userIds: string[] }
  | { kind: "verify"; requestId: number; exportId: string; user: string; password: string; connectionId: string }
  | { kind: "audit"; exportId: string; level: "debug" | "info" | "warn" | "error"; event: string; message: string; details: Record<string, unknown> }
  /** The same, answered (true) once the node's audit log stored it: the session goes on only then. */
  | {
      kind: "stored-audit";
      requestId: number;
      exportId: string;
      level: "debug" | "info" | "warn" | "error";
      event: string;
      message: string;
      details: Record<string, unknown>;
    }
  /** A connection logged in: it no longer holds a place of those logging in. */
  | { kind: "logged-in"; exportId: string; connectionId: string }
  /** A connection ended; `live` is what the export's other sessions in this worker count now. */
  | { kind: "ended"; exportId: string; connectionId: string; counts: SessionCounts; identity: { user?: string; database?: string }; live: LiveCounts }
  | { kind: "live"; exportId: string; live: LiveCounts }
  /** A CancelRequest (on connection `connectionId`) whose keys another worker issued. */
  | { kind: "cancel"; exportId: string; keys: BackendKeyData; connectionId: string }
  | { kind: "export-closed"; requestId: number }
  /** Pushdown: a session here uses this database; its verdict table's states are wanted. */
  | { kind: "verdicts-wanted"; exportId: string; database: string };
