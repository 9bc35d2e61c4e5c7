import { isDatabaseCredentials } from "../../actors/export/export-actor";
import type { ExportBody } from "../../api/types";
import { connectionTracer } from "../../exports/connection-trace";
import type { DoorServices, ExportDoorType, OpenDoor } from "../../exports/door";
import { refuseField, type RefusalReasons, takenFields } from "../../exports/body-checks";
import { checkHostPortEndpoint, splitEndpoint } from "../../exports/endpoint";
import { MysqlExportServer } from "./server";
import { defaultMysqlLimits, type MysqlLimits } from "./session/session-deps";

/** The fields of PUT /export a MySQL export takes (strict only false; object-storage fields, pushdown and backend TLS refused). */
const taken = takenFields("endpoint", "credentials", "resourceServerId", "allowWrites", "strict");
const refusedBecause: RefusalReasons = {
  cloudSigning: "a mysql export's clients cannot sign requests",
  // TLS to the backend is not built for MySQL exports yet: refused rather than stored and ignored.
  backendTls: "a mysql export connects to its backend in plain TCP (docs/mysql-export.md)",
  backendCa: "a mysql export connects to its backend in plain TCP (docs/mysql-export.md)",
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
    if (body.strict) refuseField(this.type, "strict", "strict predicates are not built for mysql exports yet (docs/mysql-export.md)");
    if (body.credentials && !isDatabaseCredentials(body.credentials))
      refuseField(this.type, "credentials", "a mysql export logs in with {user, password}, not an access key");
    checkHostPortEndpoint(this.type, body.endpoint);
  }

  async open(services: DoorServices): Promise<OpenDoor> {
    const { record } = services;
    const [host, port] = splitEndpoint(record.endpoint ?? "");
    return MysqlExportServer.listen({
      exportId: record.id,
      host: services.listenHost,
      port: record.listen.port,
      backend: { host, port },
      decider: services.decider,
      audit: services.audit,
      limits: this.limits,
      ...(services.tls ? { tls: services.tls.context } : {}),
      ...(services.verification ? { verification: services.verification } : {}),
      policy: { allowWrites: record.allowWrites === true },
      onConnectionEnd: connectionTracer(services),
    });
  }
}
