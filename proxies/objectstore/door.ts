import type { HttpListenerLimits } from "../../http/listener-limits";
import type { HostCheckSettings } from "../../http/host-check";
import { isObjectstoreCredentials } from "../../actors/export/export-actor";
import { HandlerError } from "../../actors/runtime/errors";
import type { ExportBody } from "../../api/types";
import type { DoorServices, ExportDoorType, OpenDoor } from "../../exports/door";
import { BackendConnections } from "../../exports/backend-connections";
import { checkHttpBackendCa } from "../../exports/backend-tls";
import { refuseField, type RefusalReasons, takenFields } from "../../exports/body-checks";
import type { CsvThreading } from "../../redaction/types";
import { formatKeyProblem } from "./object-formats";
import { ObjectServer } from "./object-server";
import { ObjectStore } from "./object-store";
import { bucketName } from "./s3-operation";

function invalid(path: string, problem: string, message = `${path} ${problem}`): never {
  throw new HandlerError("EXPORT_INVALID", message, { details: [{ path, problem }] });
}

/** The store's S3 endpoint: `http://host:port` or `https://host:port`, nothing after the port. */
export function storeEndpoint(endpoint: string): URL {
  let url: URL;
  try {
    url = new URL(endpoint);
  } catch {
    return invalid("endpoint", "must be http://host:port", `endpoint '${endpoint}' is not http://host:port`);
  }
  if (url.protocol !== "http:" && url.protocol !== "https:")
    invalid("endpoint", "must be http://host:port", `endpoint '${endpoint}' is not http:// or https://`);
  if (url.username || url.password)
    invalid("endpoint", "must not carry credentials", "the endpoint must not carry credentials: give them as credentials (never shown)");
  if ((url.pathname !== "/" && url.pathname !== "") || url.search || url.hash || !/^https?:\/\/[^/]+\/?$/.test(endpoint))
    invalid(
      "endpoint",
      "must be http://host:port",
      `endpoint '${endpoint}' has a path or query: name the store only (path-style buckets are added per request)`,
    );
  return url;
}

/** The fields of PUT /export an objectstore export takes. */
const taken = takenFields("endpoint", "credentials", "cloudSigning", "allowWrites", "buckets", "formats", "rangedReads", "backendCa");
const noSql = "an objectstore export runs no SQL";
const refusedBecause: RefusalReasons = {
  strict: noSql,
  pushdown: noSql,
  backendTls:
    "an objectstore export reaches its store by the endpoint's scheme (https:// verifies the certificate and host name; backendCa names the CA to trust)",
  // S3 clients sign requests; they send no bearer tokens whose audience this would set.
  resourceServerId: "an objectstore export takes SigV4-signed requests, not OAuth tokens",
};

/**
 * Object-storage exports (docs/objectstore-export.md): an S3 endpoint in front of an
 * S3-compatible store that hands out CSV, JSON and NDJSON documents redacted per record.
 */
export class ObjectstoreDoor implements ExportDoorType {
  readonly type = "objectstore" as const;
  readonly takes = taken;
  readonly refusedBecause = refusedBecause;

  constructor(private readonly settings: { csvThreading: CsvThreading; httpLimits?: HttpListenerLimits; hostCheck?: HostCheckSettings }) {}

  validate(body: ExportBody): void {
    if (body.endpoint === undefined)
      invalid("endpoint", "required: http://host:port", "an objectstore export needs the S3 endpoint of its store (http://host:port)");
    checkHttpBackendCa(body, storeEndpoint(body.endpoint));
    if (body.credentials && !isObjectstoreCredentials(body.credentials))
      refuseField(this.type, "credentials", "an objectstore export signs with {accessKeyId, secretAccessKey, region?, sessionToken?}, not {user, password}");
    for (const [index, bucket] of (body.buckets ?? []).entries())
      if (!bucketName.test(bucket)) invalid(`buckets[${index}]`, "must be an S3 bucket name (3-63 of a-z 0-9 . -)");
    for (const [name, format] of Object.entries(body.formats ?? {})) {
      const problem = formatKeyProblem(name);
      if (problem) invalid(`formats.${name}`, problem);
      if (format !== "csv" && format !== "json" && format !== "ndjson") invalid(`formats.${name}`, "must be csv, json or ndjson");
    }
  }

  async open(services: DoorServices): Promise<OpenDoor> {
    const { record } = services;
    const endpoint = storeEndpoint(record.endpoint ?? "");
    const connections = new BackendConnections({ exportId: record.id, component: "objectstore", endpoint, storedAudit: services.storedAudit });
    const store = new ObjectStore(endpoint, isObjectstoreCredentials(record.credentials) ? record.credentials : undefined, connections, record.backendCa);
    const auth = { authenticator: services.authenticator, audit: (entry: Parameters<typeof services.events.audit>[0]) => services.events.audit(entry) };
    try {
      return await ObjectServer.listen({
        record,
        host: services.listenHost,
        store,
        decider: services.decider,
        auth,
        audit: services.audit,
        storedAudit: services.storedAudit,
        events: services.events,
        nodeId: services.nodeId,
        logger: services.log,
        threading: this.settings.csvThreading,
        tls: services.tls && { cert: services.tls.cert, key: services.tls.key },
        overrides: services.overrides,
        listenerLimits: this.settings.httpLimits,
        hostCheck: this.settings.hostCheck,
      }).then((server) => ({
        serving: () => server.serving(),
        close: async () => {
          await server.close();
          store.close();
        },
      }));
    } catch (error) {
      store.close();
      throw error;
    }
  }
}
