import type { DecisionRequest } from "../../decision/types";
import type { DocumentFormat } from "../../redaction/types";
import { actor, exclusive, shared } from "../runtime/define";
import { HandlerError } from "../runtime/errors";
import type { ExclusiveContext, SharedContext } from "../runtime/types";

/** Spec 3.1: an export is active or inactive; DELETE removes it. */
export type ExportStatus = "active" | "inactive";

/** Export types this service knows; each has its own proxy. */
export const exportTypes = ["postgres", "pipeline", "fhir", "objectstore", "mysql"] as const;
export type ExportType = (typeof exportTypes)[number];
/** How a PostgreSQL export protects its connections to the backend: libpq's sslmode names (`disable`, the default: plain TCP). */
export const backendTlsModes = ["disable", "prefer", "require", "verify-ca", "verify-full"] as const;
export type BackendTlsMode = (typeof backendTlsModes)[number];

/** A SQL export's own back-end login (PostgreSQL). */
export interface DatabaseCredentials {
  user: string;
  password: string;
}

/** An object-storage export's own back-end identity: the S3 access key its requests to the store are signed with. */
export interface ObjectstoreCredentials {
  accessKeyId: string;
  secretAccessKey: string;
  /** The store's signing region (default `us-east-1`). */
  region?: string;
  /** A temporary credential's session token, sent as x-amz-security-token. */
  sessionToken?: string;
}

/** An export's own back-end identity, in the shape its type takes (each door refuses the other shapes). */
export type ExportCredentials = DatabaseCredentials | ObjectstoreCredentials;

export function isDatabaseCredentials(credentials: ExportCredentials | undefined): credentials is DatabaseCredentials {
  return credentials !== undefined && "user" in credentials;
}

export function isObjectstoreCredentials(credentials: ExportCredentials | undefined): credentials is ObjectstoreCredentials {
  return credentials !== undefined && "accessKeyId" in credentials;
}

export interface CloudSigningProperties {
  id?: string;
  key?: string;
  region?: string;
}

/** One export (spec 2.12) as stored: durable across restarts of every node. */
export interface ExportRecord {
  id: string;
  type: ExportType;
  /** The backing store: `host:port` (PostgreSQL), the FHIR base URL of the backing server (FHIR), `http://host:port` (object storage). A pipeline export has none: records come in and go out through it. */
  endpoint?: string;
  /** The mapping group that ties result columns to categories. */
  resolverGroup: string;
  /** The one purpose the endpoint may assert. */
  metadata: DecisionRequest;
  status: ExportStatus;
  /** Where the export listens: the port is fixed at creation and kept across restarts. */
  listen: { host: string; port: number };
  /**
   * The export's own back-end identity (spec 5.1): with it every back-end connection logs in
   * as this user, whatever the client's identity. Needs direct verification. Never shown by a
   * read or written to a log (ExportView leaves it out).
   */
  credentials?: ExportCredentials;
  /** The OAuth audience tokens given to this export must carry, instead of the verifier's `resourceServerId` (spec 5.5). */
  resourceServerId?: string;
  /**
   * Cloud-signing properties of this export (spec 5.5: each settable or overridable at export
   * time) over the verifier profile's. HTTP doors only. The key is never shown (ExportView).
   */
  cloudSigning?: CloudSigningProperties;
  /** Object-storage exports: the buckets clients may see and use; absent: every bucket the store shows. */
  buckets?: string[];
  /** Object-storage exports: formats by content type (`text/csv`) or key suffix (`.csv`), over the defaults (docs/objectstore-export.md). */
  formats?: Record<string, DocumentFormat>;
  /**
   * Object-storage exports: a document longer than `rangeBytes` is read from the store as
   * consecutive ranges, `parallel` at once (`parallel: 1`: one GET); absent: the defaults
   * (docs/objectstore-export.md, "Ranged reads").
   */
  rangedReads?: Partial<RangedReads>;
  /** SQL, FHIR and object-storage exports: clients may write; absent or false: read-only (docs/postgres-export.md, docs/fhir-export.md, docs/objectstore-export.md). */
  allowWrites?: boolean;
  /** SQL exports: statements may choose, group and order rows only by resource-context columns. */
  strict?: boolean;
  /** PostgreSQL exports: TLS to the backend (absent: `disable`). */
  backendTls?: BackendTlsMode;
  /** PostgreSQL exports, `verify-ca` and `verify-full`: the CA certificates (PEM) the backend's certificate must chain to; absent: the system's. */
  backendCa?: string;
  /** PostgreSQL exports: policy pushdown (docs/postgres-export.md, "Pushdown"); needs `credentials`. */
  pushdown?: boolean;
  createdAt: string;
  updatedAt: string;
}

type State = ExportRecord | null;
type Exclusive = ExclusiveContext<State>;

function existing(ctx: { state: Readonly<State>; id: string }): ExportRecord {
  if (!ctx.state) throw new HandlerError("EXPORT_NOT_FOUND", `no export '${ctx.id}'`);
  return ctx.state as ExportRecord;
}

function withStatus(ctx: Exclusive, status: ExportStatus): ExportRecord {
  const current = existing(ctx);
  if (current.status === status) return current;
  const next = { ...current, status, updatedAt: new Date().toISOString() };
  ctx.setState(next);
  return next;
}

/** How an object-storage export reads a document from its store (ExportRecord.rangedReads). */
export interface RangedReads {
  /** Ranges asked for at once; 1: the object in one GET. */
  parallel: number;
  /** The bytes of each range. */
  rangeBytes: number;
}

export type NewExport = Omit<ExportRecord, "id" | "status" | "createdAt" | "updatedAt">;

/**
 * An export's durable state and lifecycle (spec 3.1). The node that owns the export's
 * partition serves it (see ExportSupervisor): it listens while the export is active.
 * Stop and start are idempotent: stopping a stopped export answers its state unchanged.
 */
export const exportActor = actor({
  type: "export",
  initialState: (): State => null,
  handlers: {
    get: shared((ctx: SharedContext<State>) => existing(ctx)),

    create: exclusive((ctx: Exclusive, arg: NewExport) => {
      if (ctx.state) throw new HandlerError("EXPORT_EXISTS", `export '${ctx.id}' exists`);
      const now = new Date().toISOString();
      const record: ExportRecord = { id: ctx.id, ...arg, status: "active", createdAt: now, updatedAt: now };
      ctx.setState(record);
      return record;
    }),

    stop: exclusive((ctx: Exclusive) => withStatus(ctx, "inactive")),
    start: exclusive((ctx: Exclusive) => withStatus(ctx, "active")),

    remove: exclusive((ctx: Exclusive) => {
      const removed = existing(ctx);
      ctx.clearState();
      return removed;
    }),
  },
});

/** Who holds a port, since when. */
export interface PortClaim {
  exportId: string;
  claimedAt: string;
}

type ClaimState = PortClaim | null;

/**
 * A claim on a listen port, keyed by the port number: two exports never share a port, even
 * when created at the same moment on different nodes (the claim is an exclusive write).
 */
export const exportPort = actor({
  type: "export-port",
  initialState: (): ClaimState => null,
  handlers: {
    holder: shared((ctx: SharedContext<ClaimState>) => ctx.state),

    claim: exclusive((ctx: ExclusiveContext<ClaimState>, arg: { exportId: string }) => {
      if (ctx.state && ctx.state.exportId !== arg.exportId)
        throw new HandlerError("EXPORT_PORT_TAKEN", `port ${ctx.id} is used by export '${ctx.state.exportId}'`);
      ctx.setState({ exportId: arg.exportId, claimedAt: new Date().toISOString() });
    }),

    release: exclusive((ctx: ExclusiveContext<ClaimState>, arg: { exportId: string }) => {
      if (ctx.state?.exportId === arg.exportId) ctx.clearState();
    }),
  },
});
