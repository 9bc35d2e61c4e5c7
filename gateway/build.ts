import { componentOfRequest } from "./route-components";
import { otherSiteRefusal } from "./cross-site";
import { permissionOfRequest } from "./route-permissions";
import { unenforcedRights } from "../auth/authorization";
import { randomUUID } from "node:crypto";
import Fastify, { LogController, type FastifyBaseLogger, type FastifyInstance, type FastifyPluginAsync, type FastifyReply } from "fastify";
import swagger from "@fastify/swagger";
import swaggerUi from "@fastify/swagger-ui";
import { authentication, type HttpAuthentication } from "../http/authentication";
import type { RepeatedAuditWrite } from "../auth/repeated-audit";
import { configRoutes } from "./config-routes";
import { decisionRoutes } from "./decision-routes";
import { installErrorHandling, toGatewayError } from "../http/error-handler";
import { AllowedHosts } from "../http/allowed-hosts";
import { installHostCheck } from "../http/host-check";
import { defaultHttpListenerLimits, limitedServerFactory } from "../http/listener-limits";
import { documentResponses, security, securitySchemes } from "./openapi";
import { healthRoutes } from "./health";
import { mappingRoutes } from "./mapping-routes";
import { metricsRoutes, refusalCounter } from "./metrics";
import { notImplemented } from "./not-implemented";
import { exportRoutes } from "./export-routes";
import { redactRoutes } from "./redact-routes";
import { userRoutes } from "./user-routes";
import { uiRoutes, uiSecurityHeaders } from "./ui-routes";
import { rootPaths, type GatewayDeps, type RootPath } from "./types";
import { version } from "./version";

/**
 * On every answer (the UI files and the API browser set their own caching over it): API answers hold
 * personal data (access reports, decisions, redacted documents), so no browser reads one as another
 * type than it says, and no browser or proxy cache keeps one.
 */
const answerHeaders = { "x-content-type-options": "nosniff", "cache-control": "no-store" } as const;

const requestIdPattern = /^[A-Za-z0-9._:-]{1,128}$/;
const defaultBodyLimit = 1024 * 1024;
/** The node's default HOST: what a gateway built without one is judged as. */
const defaultHost = "127.0.0.1";

/** The gateway's Host refusals in the audit log: one record per source a minute, with the count (written from a timer: a failure is only logged). */
function hostRefusalAudit(auth: HttpAuthentication): RepeatedAuditWrite {
  return (message, details, count) => {
    auth.audit({ category: "service", level: "warn", event: "host.refused", message, details: { ...details, count } }).catch(() => undefined);
  };
}

/**
 * Builds the gateway without listening: tests drive it with inject(), the node calls listen().
 * Every response carries `x-request-id` (the client's, when it sent a sane one).
 */
export function build(deps: GatewayDeps): FastifyInstance {
  const refused = refusalCounter(deps.metrics);
  const app = Fastify({
    serverFactory: limitedServerFactory(deps.limits ?? defaultHttpListenerLimits, {
      tls: deps.https,
      onRefused: () => refused("ERR_SERVICE_CONNECTIONS_FULL"),
    }),
    loggerInstance: deps.logger.child({ component: "gateway" }) as FastifyBaseLogger,
    bodyLimit: deps.bodyLimit ?? defaultBodyLimit,
    requestIdHeader: false,
    genReqId: (request) => {
      const offered = request.headers["x-request-id"];
      return typeof offered === "string" && requestIdPattern.test(offered) ? offered : randomUUID();
    },
    // Prototype poisoning through JSON bodies is refused outright.
    onProtoPoisoning: "error",
    onConstructorPoisoning: "error",
    // Two info lines per request would drown the log of a busy node; metrics count requests instead.
    logController: new LogController({ disableRequestLogging: true }),
    // A target Fastify cannot route (a malformed percent-escape) is answered in the registry's form like every other error.
    frameworkErrors: (error, request, reply) => {
      const failure = toGatewayError(error, request.method);
      void (reply as FastifyReply).status(failure.statusCode).send(failure.toBody());
    },
    // Unknown keys are refused, not stripped; nothing is coerced; every problem is listed.
    ajv: { customOptions: { allErrors: true, removeAdditional: false, coerceTypes: false, useDefaults: true } },
  });
  app.addHook("onRequest", async (request, reply) => {
    void reply.header("x-request-id", request.id).headers(answerHeaders);
  });
  installErrorHandling(app, refused);
  // First of all: a name that is not this node's may be another site's, rebound to this address (http/host-check.ts).
  installHostCheck(app, {
    allowed: deps.allowedHosts ?? AllowedHosts.unset,
    knownNames: deps.knownHostNames,
    listenHost: deps.host ?? defaultHost,
    what: "this node",
    audit: deps.auth && hostRefusalAudit(deps.auth),
  });
  // Before authentication: a request another site's page made is refused without using the credentials it carries.
  app.addHook("onRequest", (request, _reply, done) => done(otherSiteRefusal(request)));
  if (deps.auth) void app.register(authentication, { auth: deps.auth, componentOf: componentOfRequest, permissionOf: permissionOfRequest });
  // A gateway built without authentication (tests, tools) enforces nothing: every caller holds every permission.
  else
    app.addHook("onRequest", (request, _reply, done) => {
      request.rights = unenforcedRights;
      done();
    });
  documentResponses(app);
  void app.register(swagger, {
    openapi: {
      info: {
        title: "warden",
        description: "Data-use policy enforcement service: REST APIs by root path",
        version,
        license: { name: "Apache-2.0", url: "https://www.apache.org/licenses/LICENSE-2.0" },
      },
      tags: [...rootPaths, "health"].map((name) => ({ name })),
      components: { securitySchemes },
      security,
    },
    // Shared schemas keep their $id as their component name (ErrorBody), not def-0.
    refResolver: { buildLocalReference: (json, _baseUri, _fragment, i) => String(json.$id ?? `def-${i}`) },
  });
  // The API browser sends requests from this origin ("Authorize", "Try it out"): the pages' headers keep it out of other sites' frames.
  void app.register(async (docs) => {
    docs.addHook("onRequest", (_request, reply, done) => {
      void reply.headers(uiSecurityHeaders);
      done();
    });
    await docs.register(swaggerUi, { routePrefix: "/docs" });
  });
  void app.register(metricsRoutes, { metrics: deps.metrics });
  void app.register(healthRoutes, { health: deps.health, nodeId: deps.nodeId });
  const implemented: Partial<Record<RootPath, FastifyPluginAsync>> = {
    ...(deps.policy ? { config: configRoutes(deps.policy), mapping: mappingRoutes(deps.policy) } : {}),
    ...(deps.users ? { user: userRoutes(deps.users, deps.rights) } : {}),
    ...(deps.decisions ? { decision: decisionRoutes(deps.decisions) } : {}),
    ...(deps.redact ? { redact: redactRoutes(deps.redact, deps.documents) } : {}),
    ...(deps.exports ? { export: exportRoutes(deps.exports) } : {}),
  };
  for (const root of rootPaths) void app.register(implemented[root] ?? notImplemented(root));
  // The web UIs: static pages under /config/, /mapping/ and /redact/ (a root not implemented here keeps its bare path for the 501).
  void app.register(
    uiRoutes({ manifest: deps.uiManifest, redirects: [...(deps.policy ? (["mapping"] as const) : []), ...(deps.redact ? (["redact"] as const) : [])] }),
  );
  app.get("/openapi.json", { schema: { hide: true } }, async () => app.swagger());
  if (deps.extraRoutes) void app.register(deps.extraRoutes);
  return app;
}
