import Fastify, { LogController, type FastifyBaseLogger, type FastifyHttpOptions, type FastifyInstance } from "fastify";
import type { Server } from "node:http";
import type { Logger } from "pino";
import { RepeatedAudit } from "../auth/repeated-audit";
import type { ExportAudit } from "../exports/door";
import { AllowedHosts } from "./allowed-hosts";
import { HttpError } from "./errors";
import { installHostCheck, type HostCheckSettings } from "./host-check";
import { sentForAnotherSite } from "./other-site";
import { defaultHttpListenerLimits, limitedServerFactory, streamingLimits, type HttpListenerLimits } from "./listener-limits";

/** Per door app: the connections its listener refused at its cap. */
const refusedByDoor = new WeakMap<FastifyInstance, { count: number }>();

/** Connections a door's listener refused over its cap (GET /export's serving.connections.refused, warden_export_connections_refused_total). */
export function connectionsRefused(app: FastifyInstance): number {
  return refusedByDoor.get(app)?.count ?? 0;
}

export interface DoorAppOptions {
  exportId: string;
  /** The export type: audit category, log component and messages. */
  component: string;
  tls?: { cert: Buffer; key: Buffer };
  /** The address it listens on (EXPORT_HOST), and the names it serves under it (virtual-host buckets): the Host check's (http/host-check.ts). */
  listenHost: string;
  hostNames?: readonly string[];
  /** ALLOWED_HOSTS and the refusal counter; absent: none set, nothing counted. */
  hostCheck?: HostCheckSettings;
  logger: Logger;
  audit: ExportAudit;
  /** The listener's timeouts and connection cap (absent: the defaults). */
  limits?: HttpListenerLimits;
  /** Requests or answers are streams of any length: no whole-request deadline (idle and header timeouts still apply). */
  streaming?: boolean;
  /**
   * Refuse requests a browser sent for another site's page (http/other-site.ts; 403 ERR_REQUEST_CROSS_SITE), before their
   * credentials are looked at: doors that take Basic credentials, which browsers cache and send with any site's navigation.
   * Not the object-storage door: presigned URLs are meant to be opened from any page.
   */
  refuseOtherSites?: boolean;
  /** Fastify's other options for this door (body limits, request ids...). */
  fastify?: Omit<FastifyHttpOptions<Server>, "serverFactory" | "https" | "loggerInstance" | "logger" | "logController">;
}

/**
 * The Fastify instance of an HTTP export door (pipeline, FHIR, object storage): its listener
 * with the node's limits (http/listener-limits.ts; connections over the cap refused and audited
 * as counts), TLS when the export has it, its own logger and no per-request logging, and the
 * Host check before every other hook (a name not its own is refused in the door's error form).
 */
export function doorApp(options: DoorAppOptions): FastifyInstance {
  const limits = options.limits ?? defaultHttpListenerLimits;
  const listener = options.streaming ? streamingLimits(limits) : limits;
  const { exportId, component } = options;
  const refusals = new RepeatedAudit((message, details, count) => options.audit("warn", "connection.refused", message, { ...details, count }));
  const refused = { count: 0 };
  const onRefused = (remote: string | undefined) => {
    refused.count++;
    refusals.record("connections", `${component} export ${exportId} is at its limit of ${listener.maxConnections} connections`, {
      exportId,
      component,
      remote: remote ?? null,
    });
  };
  const app = Fastify({
    onProtoPoisoning: "error",
    onConstructorPoisoning: "error",
    ...options.fastify,
    serverFactory: limitedServerFactory(listener, { tls: options.tls, onRefused }),
    loggerInstance: options.logger.child({ component, exportId }) as FastifyBaseLogger,
    logController: new LogController({ disableRequestLogging: true }),
  }) as unknown as FastifyInstance;
  installHostCheck(app, {
    allowed: options.hostCheck?.allowed ?? AllowedHosts.unset,
    refused: options.hostCheck?.refused,
    knownNames: options.hostCheck?.knownNames,
    listenHost: options.listenHost,
    names: options.hostNames,
    what: `this ${component} export`,
    audit: (message, details, count) => options.audit("warn", "host.refused", message, { ...details, exportId, component, count }),
  });
  refusedByDoor.set(app, refused);
  if (options.refuseOtherSites)
    app.addHook("onRequest", (request, _reply, done) => done(sentForAnotherSite(request) ? new HttpError("ERR_REQUEST_CROSS_SITE") : undefined));
  return app;
}
