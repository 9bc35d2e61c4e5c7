import { isDatabaseCredentials } from "../../actors/export/export-actor";
import type { ExportBody } from "../../api/types";
import { backendTlsOf, checkBackendCa } from "../../exports/backend-tls";
import { connectionTracer } from "../../exports/connection-trace";
import type { DoorServices, ExportDoorType, OpenDoor } from "../../exports/door";
import { refuseField, type RefusalReasons, takenFields } from "../../exports/body-checks";
import { checkHostPortEndpoint, splitEndpoint } from "../../exports/endpoint";
import { MysqlExportServer } from "./server";
import { defaultMysqlLimits, type MysqlLimits } from "./session/session-deps";

/** The fields of PUT /export a MySQL export takes (object-storage fields and pushdown refused). */
const taken = takenFields("endpoint", "credentials", "resourceServerId", "allowWrites", "strict", "backendTls", "backendCa");
const refusedBecause: RefusalReasons = {
  cloudSigning: "a mysql export's clients cannot sign requests",
  pushdown: "pushdown is built for postgres exports only",
};

/**
 * MySQL exports (docs/mysql-export.md): a MySQL-protocol proxy in front of a MariaDB or MySQL
 * server. Sessions run on the node's own loop.
 */
export class MysqlDoor implements ExportDoorType {
  readonly type = "mysql" as const;
  readonly takes = taken;
  readonly refusedBecause = refusedBecause;

  constructor(private readonly limits: MysqlLimits = defaultMysqlLimits) {}

  validate(body: ExportBody): void {
    if (body.credentials && !isDatabaseCredentials(body.credentials))
      refuseField(this.type, "credentials", "a mysql export logs in with {user, password}, not an access key");
    checkHostPortEndpoint(this.type, body.endpoint);
    // prefer would fall back to cleartext when the server does not offer TLS: a MySQL export asks for TLS or not.
    if (body.backendTls === "prefer")
      refuseField(this.type, "backendTls", "a mysql export takes backendTls disable, require, verify-ca or verify-full (prefer could fall back to cleartext)");
    checkBackendCa(body);
  }

  async open(services: DoorServices): Promise<OpenDoor> {
    const { record } = services;
    const [host, port] = splitEndpoint(record.endpoint ?? "");
    const { tls: backendTls } = backendTlsOf(record);
    return MysqlExportServer.listen({
      exportId: record.id,
      host: services.listenHost,
      port: record.listen.port,
      backend: { host, port },
      decider: services.decider,
      audit: services.audit,
      storedAudit: services.storedAudit,
      limits: this.limits,
      ...(services.tls ? { tls: services.tls.context } : {}),
      ...(services.verification ? { verification: services.verification } : {}),
      policy: { allowWrites: record.allowWrites === true, strict: record.strict === true },
      ...(backendTls ? { backendTls } : {}),
      onConnectionEnd: connectionTracer(services),
    });
  }
}
