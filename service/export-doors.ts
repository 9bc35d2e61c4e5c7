import type { NatsConnection } from "@nats-io/transport-node";
import type { Logger } from "pino";
import type { ExportDoors } from "../exports/door";
import type { DecisionService } from "../ports/decision-service";
import { FhirDoor } from "../proxies/fhir/door";
import { ObjectstoreDoor } from "../proxies/objectstore/door";
import { MysqlDoor } from "../proxies/mysql/door";
import { defaultMysqlLimits } from "../proxies/mysql/session/session-deps";
import { PipelineDoor } from "../proxies/pipeline/door";
import { csvThreading } from "../redaction/threaded-csv-redactor";
import { PostgresDoor } from "../proxies/postgres/door";
import { defaultProxyLimits } from "../proxies/postgres/types";
import type { HttpListenerLimits } from "../http/listener-limits";
import type { HostCheckSettings } from "../http/host-check";
import type { WireExportLimits } from "../exports/wire-limits";

export interface ExportDoorSettings {
  nc: NatsConnection;
  decisions: DecisionService;
  log: Logger;
  /** The exports' TLS certificate and key (doors that run in other processes load them there). */
  tls?: { cert: Buffer; key: Buffer };
  /** JetStream replicas of what a door stores (the pipeline streams). */
  jsReplicas: number;
  /** Proxy worker processes for PostgreSQL export sessions (0: sessions run on the node's loop). */
  proxyWorkers: number;
  /** Worker threads the CSV of one objectstore GetObject uses (0: the event loop's thread). */
  objectstoreRedactionThreads: number;
  /** Timeouts and connection cap of every HTTP export door's listener (http/listener-limits.ts). */
  httpLimits: HttpListenerLimits;
  /** ALLOWED_HOSTS and the refusal counter of every HTTP export door (http/host-check.ts). */
  hostCheck: HostCheckSettings;
  /** Limits of every wire export door (exports/wire-limits.ts, exports/login-slots.ts). */
  wireLimits: WireExportLimits;
}

/** The registry of export types: one line per type (exports/door.ts says what a type provides). */
export function exportDoors(settings: ExportDoorSettings): { doors: ExportDoors; postgres: PostgresDoor } {
  const postgres = new PostgresDoor({
    limits: { ...defaultProxyLimits, ...settings.wireLimits },
    workers: settings.proxyWorkers,
    tls: settings.tls,
    decisions: settings.decisions,
    log: settings.log,
  });
  const doors: ExportDoors = {
    postgres,
    pipeline: new PipelineDoor({ nc: settings.nc, jsReplicas: settings.jsReplicas, httpLimits: settings.httpLimits, hostCheck: settings.hostCheck }),
    fhir: new FhirDoor({ decisions: settings.decisions, httpLimits: settings.httpLimits, hostCheck: settings.hostCheck }),
    objectstore: new ObjectstoreDoor({
      csvThreading: csvThreading(settings.objectstoreRedactionThreads),
      httpLimits: settings.httpLimits,
      hostCheck: settings.hostCheck,
    }),
    mysql: new MysqlDoor({ ...defaultMysqlLimits, ...settings.wireLimits }),
  };
  return { doors, postgres };
}
