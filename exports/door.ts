import type { NatsConnection } from "@nats-io/transport-node";
import type { SecureContext } from "node:tls";
import type { Logger } from "pino";
import type { ExportRecord, ExportType } from "../actors/export/export-actor";
import type { EventLog } from "../actors/runtime/event-log";
import type { ExportBody, ExportServing, ExportView } from "../api/types";
import type { Authenticator } from "../auth/authenticator";
import type { OverridesByVerifier } from "../auth/types";
import type { RefusalReasons, TakenFields } from "./body-checks";
import type { CredentialVerification } from "./direct-verification";
import type { ExportDecider } from "./export-decider";

/** Where an export's audit records go (category: the export's component). */
export type ExportAudit = (level: "debug" | "info" | "warn" | "error", event: string, message: string, details: Record<string, unknown>) => void;
/** An audit record whose answer waits for it: resolves true once JetStream stored it, false when it did not (the caller fails closed). */
export type StoredAudit = (...record: Parameters<ExportAudit>) => Promise<boolean>;

/** What every export answers when the audit log did not store a connection's records (spec 6 items 4 and 8): nothing went out. */
export const connectionNotAuditedMessage =
  "the export cannot record this connection in its audit log now (the audit log is full or unreachable); try again later";

/** A door whose port's opening the audit log did not store (a full audit stream): it does not serve. */
export class OpeningNotAudited extends Error {
  readonly code = "AUDIT_UNAVAILABLE";
}

/**
 * Audits a door's `port.opened` (spec 6 item 3) and waits until it is stored; when it is not, the
 * port is closed again (`close`) and the opening fails: the serving node reports it (servingError)
 * and tries again, as for a port it could not open.
 */
export async function announceOpening(
  storedAudit: StoredAudit,
  message: string,
  details: Record<string, unknown>,
  close: () => Promise<unknown>,
): Promise<void> {
  if (await storedAudit("info", "port.opened", message, details)) return;
  await close().catch(() => undefined);
  throw new OpeningNotAudited(`the audit log did not store the opening of port ${String(details.port)}`);
}

/** A wire export's (PostgreSQL, MySQL) `port.opened`, naming the datastore it fronts (announceOpening). */
export function announceWirePort(
  options: { storedAudit: StoredAudit; exportId: string; host: string; port: number; backend: { host: string; port: number } },
  component: "postgres" | "mysql",
  close: () => Promise<unknown>,
): Promise<void> {
  const { storedAudit, exportId, host, port, backend } = options;
  return announceOpening(
    storedAudit,
    `export ${exportId} listening on ${host}:${port}`,
    { exportId, datastore: `${backend.host}:${backend.port}`, component, host, port },
    close,
  );
}

/**
 * What every door of one export receives from its serving node: the same decider, audit,
 * trace and credential verification as every other door (architecture rule 9).
 */
export interface DoorServices {
  record: ExportRecord;
  /** The export's decisions: one verdict per user, cached and voided on change, traced before use. */
  decider: ExportDecider;
  /** Audit records in the category of the export's component. */
  audit: ExportAudit;
  /** The same, for what may go on only once its record is stored (a login admitted). */
  storedAudit: StoredAudit;
  /** Trace records (the decider traces decisions; a door traces what else it must, a connection's summary). */
  events: EventLog;
  nodeId: string;
  authenticator: Authenticator;
  /** Verification of credentials a client gives the door itself; absent when the export's component does not enforce authentication. */
  verification?: CredentialVerification;
  /** The export's own verifier settings (OAuth audience, cloud-signing id and key) over the profiles'. */
  overrides?: OverridesByVerifier;
  /** Address the door listens on (its port is `record.listen.port`). */
  listenHost: string;
  /** The exports' TLS certificate and key, and the context made of them. */
  tls?: { cert: Buffer; key: Buffer; context: SecureContext };
  nc: NatsConnection;
  log: Logger;
}

/** One export as its serving node runs it: open from `open` until `close`. */
export interface OpenDoor {
  /** What GET /export and the metrics show: connections, rows, the type's own counts. */
  serving(): ExportServing;
  /** Closes the port and every connection through it. */
  close(): Promise<void>;
}

/**
 * An export type: its checks of PUT /export, and how its door opens. Adding a type is a folder
 * under proxies/<type>/ with one of these, a codec under protocols/<type>/ when it speaks a wire
 * protocol, and one line in the registry (service/export-doors.ts).
 */
export interface ExportDoorType {
  readonly type: ExportType;
  /** The fields of PUT /export this type takes: the service refuses every other one before `validate` (exports/body-checks.ts). */
  readonly takes: TakenFields;
  /** Why this type refuses a field, where "does not apply" says too little. */
  readonly refusedBecause?: RefusalReasons;
  /** Problems with the body's type-specific fields, as HandlerError EXPORT_INVALID (nothing is stored then); may read the configuration (FHIR checks its mapping paths). */
  validate(body: ExportBody): void | Promise<void>;
  /** Runs before the export is stored: what must exist once it does (the pipeline's streams). */
  prepare?(): Promise<void>;
  /** Opens the export's door on its port; rejects (EADDRINUSE...) when it cannot. */
  open(services: DoorServices): Promise<OpenDoor>;
  /** A removed export's stored data (pipeline input and answers), purged. */
  discard?(exportId: string): Promise<void>;
  /** What the export's view adds for this type (a pipeline's subjects). */
  view?(record: ExportRecord): Partial<ExportView>;
  /** The node stops: what the type runs for all its exports (proxy worker processes) stops too. */
  stop?(): Promise<void>;
}

/** The export types a node serves, by type. */
export type ExportDoors = Readonly<Record<ExportType, ExportDoorType>>;
