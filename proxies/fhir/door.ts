import type { HttpListenerLimits } from "../../http/listener-limits";
import type { HostCheckSettings } from "../../http/host-check";
import { HandlerError } from "../../actors/runtime/errors";
import type { ExportBody } from "../../api/types";
import type { DoorServices, ExportDoorType, OpenDoor } from "../../exports/door";
import { isDatabaseCredentials } from "../../actors/export/export-actor";
import { refuseField, type RefusalReasons, takenFields } from "../../exports/body-checks";
import type { DecisionService } from "../../ports/decision-service";
import { BackendConnections } from "../../exports/backend-connections";
import { checkHttpBackendCa } from "../../exports/backend-tls";
import { FhirBackend } from "./fhir-backend";
import { mappingProblems } from "./fhir-mapping";
import { listenFhir } from "./fhir-server";
import { ResourceRedactor } from "./resource-redactor";

/** The fields of PUT /export a FHIR export takes. */
const taken = takenFields("endpoint", "credentials", "resourceServerId", "cloudSigning", "allowWrites", "backendCa");
const refusedBecause: RefusalReasons = {
  strict: "strict applies to SQL statements",
  backendTls:
    "a fhir export's TLS to its backend follows the endpoint's scheme (https:// verifies the certificate and host name; backendCa names the CA to trust)",
};

/** A FHIR base URL as PUT /export takes it: http or https, a host, no user info, query or fragment. */
function endpointProblem(endpoint: string): string | undefined {
  let url: URL;
  try {
    url = new URL(endpoint);
  } catch {
    return "must be the FHIR base URL of the backing server, http://host:port/base";
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") return "must be an http or https URL";
  if (url.username || url.password) return "must not carry credentials: give them as the export's credentials";
  if (url.search || url.hash) return "must be a base URL, without query or fragment";
  return undefined;
}

/**
 * FHIR exports (issue 23): a FHIR R4 REST endpoint in front of a FHIR server, each resource
 * decided by its own patient. docs/fhir-export.md says what is kept, removed and refused.
 */
export class FhirDoor implements ExportDoorType {
  readonly type = "fhir" as const;
  readonly takes = taken;
  readonly refusedBecause = refusedBecause;

  constructor(private readonly settings: { decisions: DecisionService; httpLimits?: HttpListenerLimits; hostCheck?: HostCheckSettings }) {}

  async validate(body: ExportBody): Promise<void> {
    if (body.endpoint === undefined)
      throw new HandlerError("EXPORT_INVALID", "a fhir export needs the FHIR base URL of its backing server", {
        details: [{ path: "endpoint", problem: "required: http://host:port/base" }],
      });
    const problem = endpointProblem(body.endpoint);
    if (problem) throw new HandlerError("EXPORT_INVALID", `endpoint '${body.endpoint}' ${problem}`, { details: [{ path: "endpoint", problem }] });
    checkHttpBackendCa(body, new URL(body.endpoint));
    if (body.credentials && !isDatabaseCredentials(body.credentials))
      refuseField(this.type, "credentials", "a FHIR export logs in to its backing server with {user, password} (HTTP Basic), not an access key");
    await this.checkMapping(body.resolverGroup);
  }

  /** Every record field of the mapping group must be a FHIR R4 path: unknown ones refused, each listed. A missing group is the service's to refuse. */
  private async checkMapping(groupName: string): Promise<void> {
    const compiled = await this.settings.decisions.policy();
    const group = compiled.config.mappingGroups.find((g) => g.name === groupName);
    if (!group) return;
    const problems = mappingProblems(group.fieldMappings.map((field) => ({ recordField: field.recordField, resourceContext: field.resourceContext === true })));
    if (problems.length > 0) {
      throw new HandlerError(
        "EXPORT_INVALID",
        `mapping group '${groupName}' names paths that are no FHIR R4 elements: ${problems.map((p) => p.expression).join(", ")}`,
        { details: problems.map((p) => ({ path: `resolverGroup:${p.expression}`, problem: p.diagnostics })) },
      );
    }
  }

  async open(services: DoorServices): Promise<OpenDoor> {
    const { record, tls } = services;
    const connections = new BackendConnections({
      exportId: record.id,
      component: "fhir",
      endpoint: new URL(record.endpoint!),
      storedAudit: services.storedAudit,
    });
    const backend = new FhirBackend(record.endpoint!, connections, record.backendCa);
    const redactor = new ResourceRedactor(services.decider, backend.base);
    const auth = { authenticator: services.authenticator, audit: (entry: Parameters<typeof services.events.audit>[0]) => services.events.audit(entry) };
    const port = await listenFhir({
      record,
      host: services.listenHost,
      backend,
      redactor,
      auth,
      overrides: services.overrides,
      audit: services.audit,
      storedAudit: services.storedAudit,
      logger: services.log,
      tls: tls && { cert: tls.cert, key: tls.key },
      listenerLimits: this.settings.httpLimits,
      hostCheck: this.settings.hostCheck,
    }).catch((error: unknown) => {
      backend.close();
      throw error;
    });
    return {
      serving: () => port.serving(),
      close: async () => {
        await port.close();
        backend.close();
      },
    };
  }
}
