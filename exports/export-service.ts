import type { NatsConnection } from "@nats-io/transport-node";
import type { Authenticator } from "../auth/authenticator";
import { component } from "../auth/components";
import { cloudPropertyProblem, type CloudProperty } from "../auth/verifiers/cloud-verifier";
import { exportActor, exportPort, exportTypes, type ExportRecord, type ExportType } from "../actors/export/export-actor";
import { refuseFieldsNotTaken } from "./body-checks";
import type { ExportDoors } from "./door";
import type { EndpointAllowList } from "./endpoint-allow-list";
import { ExportSubjects } from "./subjects";
import { HandlerError, RuntimeError } from "../actors/runtime/errors";
import type { ActorRuntime } from "../actors/runtime/runtime";
import type { ExportBody, ExportPort, ExportView, Requester } from "../api/types";
import type { DecisionService } from "../ports/decision-service";
import type { ExportSupervisor, ServingReport } from "./export-supervisor";

/** How long GET /export waits for the serving node's counts. */
const servingTimeoutMs = 500;
/** A claim whose export does not exist is taken over only after this long: a create in progress claims before it stores the export. */
const abandonedClaimMs = 60_000;

export interface ExportServiceDeps {
  nc: NatsConnection;
  runtime: ActorRuntime;
  decisions: DecisionService;
  supervisor: ExportSupervisor;
  /** The host clients connect to (reported in answers) and the range ports are allocated from. */
  listenHost: string;
  portRange: { first: number; last: number };
  authenticator: Authenticator;
  /** The export types this node serves (service/export-doors.ts). */
  doors: ExportDoors;
  /** Backing endpoints exports may name; absent: any. */
  allowedEndpoints?: EndpointAllowList;
}

/**
 * The export lifecycle behind /export: validation before anything is stored, a port claimed
 * exclusively (asked for, or the lowest free one of the range), the export actor's state,
 * and an audit record for every change (category `export`).
 */
export class ExportService implements ExportPort {
  constructor(private readonly deps: ExportServiceDeps) {}

  async create(body: ExportBody, by: Requester, mayChooseDoorIdentity = true): Promise<ExportView> {
    const type = await this.validate(body);
    const identity = doorIdentityFields(body);
    if (identity.length > 0 && !mayChooseDoorIdentity) {
      await this.deps.runtime.events.audit({
        category: "export",
        level: "warn",
        event: "connection.forbidden",
        message: `PUT /export refused: '${by}' does not hold export:admin and sets the door's identity (${identity.join(", ")})`,
        details: { component: "export", action: "admin", subject: by, rule: null, fields: identity },
      });
      throw new HandlerError(
        "EXPORT_IDENTITY_FORBIDDEN",
        `setting ${identity.join(", ")} needs export:admin: a door's signing id and token audience decide which credentials it takes and which rules grant to them`,
      );
    }
    const id = crypto.randomUUID();
    const record = await this.audited(
      "create",
      id,
      { type, endpoint: body.endpoint ?? null, port: body.port ?? null },
      by,
      () => this.make(id, type, body),
      (made) => ({
        event: "export.created",
        message: `export ${id} created: ${type}${body.endpoint ? ` in front of ${body.endpoint}` : ""}, listening on port ${made.listen.port}`,
      }),
    );
    return this.view(record);
  }

  /** Claims the export's port and creates its actor (the port is released again if the actor is not made). */
  private async make(id: string, type: ExportType, body: ExportBody): Promise<ExportRecord> {
    await this.deps.doors[type].prepare?.();
    const port = body.port ?? (await this.allocatePort(id));
    if (body.port !== undefined) await this.claimPort(port, id);
    try {
      return await this.deps.runtime.client.ref(exportActor, id).create({
        type,
        ...(body.endpoint !== undefined ? { endpoint: body.endpoint } : {}),
        resolverGroup: body.resolverGroup,
        metadata: body.metadata,
        listen: { host: this.deps.listenHost, port },
        ...(body.credentials ? { credentials: body.credentials } : {}),
        ...(body.resourceServerId ? { resourceServerId: body.resourceServerId } : {}),
        ...(body.cloudSigning ? { cloudSigning: body.cloudSigning } : {}),
        ...(body.allowWrites ? { allowWrites: true } : {}),
        ...(body.strict ? { strict: true } : {}),
        ...(body.backendTls !== undefined && body.backendTls !== "disable" ? { backendTls: body.backendTls } : {}),
        ...(body.backendCa !== undefined ? { backendCa: body.backendCa } : {}),
        ...(body.pushdown ? { pushdown: true } : {}),
        ...(body.buckets !== undefined ? { buckets: body.buckets } : {}),
        ...(body.formats !== undefined ? { formats: body.formats } : {}),
        ...(body.rangedReads !== undefined ? { rangedReads: body.rangedReads } : {}),
      });
    } catch (error) {
      await this.deps.runtime.client
        .ref(exportPort, String(port))
        .release({ exportId: id })
        .catch(() => undefined);
      throw error;
    }
  }

  private async validate(body: ExportBody): Promise<ExportType> {
    if (!(exportTypes as readonly string[]).includes(body.type))
      throw new HandlerError("EXPORT_INVALID", `unknown export type '${body.type}' (known: ${exportTypes.join(", ")})`, {
        details: [{ path: "type", problem: "unknown export type" }],
      });
    const type = body.type as ExportType;
    const door = this.deps.doors[type];
    refuseFieldsNotTaken(type, body, door.takes, door.refusedBecause);
    await door.validate(body);
    const notAllowed = this.deps.allowedEndpoints?.problem(body.endpoint);
    if (notAllowed)
      throw new HandlerError("EXPORT_INVALID", `${notAllowed}: EXPORT_ALLOWED_ENDPOINTS`, { details: [{ path: "endpoint", problem: "not allowed" }] });
    for (const [name, value] of Object.entries(body.cloudSigning ?? {})) {
      const problem = cloudPropertyProblem(name as CloudProperty, value);
      if (problem) throw new HandlerError("EXPORT_INVALID", `cloudSigning.${name} ${problem}`, { details: [{ path: `cloudSigning.${name}`, problem }] });
    }
    try {
      await this.deps.decisions.redactionPlan({ ...body.metadata, mappingGroup: body.resolverGroup });
    } catch (error) {
      if (error instanceof RuntimeError && error.code === "REDACT_INVALID")
        throw new HandlerError("EXPORT_INVALID", error.message.replace("no mapping group", "no resolverGroup"), {
          details: [{ path: error.message.includes("mapping group") ? "resolverGroup" : "metadata", problem: error.message }],
        });
      throw error;
    }
    // Export credentials with pass-through would let anyone in as the export's user: they need the proxy to verify clients itself.
    if (body.credentials && !this.deps.authenticator.isEnforced(component(type))) {
      throw new HandlerError(
        "EXPORT_INVALID",
        `export credentials need direct verification: enforce authentication on component '${body.type}' in the security configuration`,
        { details: [{ path: "credentials", problem: "needs an enforced component" }] },
      );
    }
    return type;
  }

  /** Claims a port for an export; a claim left long ago by an export that does not exist (a create that failed half-way) is taken over. */
  private async claimPort(port: number, exportId: string): Promise<void> {
    const claim = this.deps.runtime.client.ref(exportPort, String(port));
    try {
      await claim.claim({ exportId });
    } catch (error) {
      if (!(error instanceof RuntimeError) || error.code !== "EXPORT_PORT_TAKEN") throw error;
      const holder = await claim.holder();
      if (holder === null || Date.now() - Date.parse(holder.claimedAt) < abandonedClaimMs || (await this.exists(holder.exportId))) throw error;
      await claim.release({ exportId: holder.exportId });
      await claim.claim({ exportId });
    }
  }

  private async exists(id: string): Promise<boolean> {
    try {
      await this.deps.runtime.client.ref(exportActor, id).get();
      return true;
    } catch (error) {
      if (error instanceof RuntimeError && error.code === "EXPORT_NOT_FOUND") return false;
      throw error;
    }
  }

  private async allocatePort(exportId: string): Promise<number> {
    const used = new Set(this.deps.supervisor.list().map((e) => e.listen.port));
    const { first, last } = this.deps.portRange;
    for (let port = first; port <= last; port++) {
      if (used.has(port)) continue;
      try {
        await this.claimPort(port, exportId);
        return port;
      } catch (error) {
        if (error instanceof RuntimeError && error.code === "EXPORT_PORT_TAKEN") continue;
        throw error;
      }
    }
    throw new HandlerError("EXPORT_NO_PORT", `every port from ${first} to ${last} is used by an export`);
  }

  async list(): Promise<ExportView[]> {
    const records = this.deps.supervisor.list().sort((a, b) => a.createdAt.localeCompare(b.createdAt) || a.id.localeCompare(b.id));
    return Promise.all(records.map((r) => this.view(r)));
  }

  async get(id: string): Promise<ExportView> {
    return this.view(await this.deps.runtime.client.ref(exportActor, id).get());
  }

  async stop(id: string, by: Requester): Promise<ExportView> {
    const record = await this.audited(
      "stop",
      id,
      {},
      by,
      () => this.deps.runtime.client.ref(exportActor, id).stop(),
      () => ({
        event: "export.stopped",
        message: `export ${id} stopped`,
      }),
    );
    return this.view(record);
  }

  async start(id: string, by: Requester): Promise<ExportView> {
    const record = await this.audited(
      "start",
      id,
      {},
      by,
      () => this.deps.runtime.client.ref(exportActor, id).start(),
      () => ({
        event: "export.started",
        message: `export ${id} started`,
      }),
    );
    return this.view(record);
  }

  async remove(id: string, by: Requester): Promise<ExportView> {
    const record = await this.audited(
      "remove",
      id,
      {},
      by,
      async () => {
        const removed = await this.deps.runtime.client.ref(exportActor, id).remove();
        await this.deps.runtime.client.ref(exportPort, String(removed.listen.port)).release({ exportId: id });
        return removed;
      },
      () => ({ event: "export.removed", message: `export ${id} removed` }),
    );
    // Purged again by the serving node once it has closed the export; a failure here is not the removal's.
    await this.deps.doors[record.type].discard?.(id).catch(() => undefined);
    return { ...this.publicRecord(record), serving: null, servingError: null };
  }

  private async view(record: ExportRecord): Promise<ExportView> {
    if (record.status !== "active") return { ...this.publicRecord(record), serving: null, servingError: null };
    try {
      const reply = await this.deps.nc.request(ExportSubjects.serving(record.id), "", { timeout: servingTimeoutMs });
      const report = reply.json<ServingReport>();
      return { ...this.publicRecord(record), serving: report.serving && { ...report.serving, nodeId: report.nodeId }, servingError: report.error };
    } catch {
      return { ...this.publicRecord(record), serving: null, servingError: "no node reports serving this export yet" };
    }
  }

  /**
   * A change is in the audit log before it is made (`export.<change>-requested`; EventLog.auditedChange): a full audit stream
   * refuses it with nothing changed (503), instead of it being made and answered 503, after which a retried create made a
   * second export. The record of the change made follows, best effort: one the stream refuses leaves the change standing.
   */
  private audited(
    change: string,
    id: string,
    details: Record<string, unknown>,
    by: Requester,
    apply: () => Promise<ExportRecord>,
    done: (record: ExportRecord) => { event: string; message: string },
  ): Promise<ExportRecord> {
    return this.deps.runtime.events.auditedChange(
      {
        category: "export",
        level: "info",
        event: `export.${change}-requested`,
        message: `${change} of export ${id} requested`,
        details: { exportId: id, ...details, by },
      },
      apply,
      (record) => ({
        category: "export",
        level: "info",
        ...done(record),
        details: { exportId: record.id, type: record.type, endpoint: record.endpoint, port: record.listen.port, status: record.status, by },
      }),
    );
  }

  /** The record as reads show it: the export's credentials never leave the service. */
  private publicRecord(record: ExportRecord): Omit<ExportView, "serving" | "servingError"> {
    const { credentials, cloudSigning, ...rest } = record;
    const signing = cloudSigning
      ? {
          cloudSigning: {
            ...(cloudSigning.id ? { id: cloudSigning.id } : {}),
            ...(cloudSigning.region ? { region: cloudSigning.region } : {}),
            ...(cloudSigning.key ? { key: "(set)" as const } : {}),
          },
        }
      : {};
    return { ...rest, ...signing, backendIdentity: credentials ? "export" : "client", ...this.deps.doors[record.type].view?.(record) };
  }
}

/** The fields of an export body that choose who its door takes as whom (docs/authorization.md): not the region. */
function doorIdentityFields(body: ExportBody): string[] {
  return [
    ...(body.cloudSigning?.id !== undefined ? ["cloudSigning.id"] : []),
    ...(body.cloudSigning?.key !== undefined ? ["cloudSigning.key"] : []),
    ...(body.resourceServerId !== undefined ? ["resourceServerId"] : []),
  ];
}
