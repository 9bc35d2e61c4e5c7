import type { FastifyError, FastifyInstance, FastifyRequest } from "fastify";
import { doorApp } from "../../http/door-app";
import type { HttpListenerLimits } from "../../http/listener-limits";
import type { HostCheckSettings } from "../../http/host-check";
import type { Logger } from "pino";
import { isDatabaseCredentials, type ExportRecord } from "../../actors/export/export-actor";
import { component } from "../../auth/components";
import type { OverridesByVerifier } from "../../auth/types";
import type { BackendIdentity } from "../../exports/backend-connections";
import type { ExportAudit, StoredAudit } from "../../exports/door";
import { authentication, domainOf, type HttpAuthentication } from "../../http/authentication";
import { HttpDoorPort } from "../../http/door-port";
import { toGatewayError } from "../../http/error-handler";
import type { IssueCode } from "../../protocols/fhir/operation-outcome";
import { answerOf } from "./fhir-answers";
import type { BackendAnswer, FhirBackend } from "./fhir-backend";
import { FhirError } from "./fhir-error";
import { interactionOf, type FhirInteraction } from "./fhir-interaction";
import type { ResourceRedactor } from "./resource-redactor";
import { searchRequirement } from "./search-requirement";

export interface FhirServerOptions {
  record: ExportRecord;
  host: string;
  backend: FhirBackend;
  redactor: ResourceRedactor;
  auth: HttpAuthentication;
  overrides?: OverridesByVerifier;
  audit: ExportAudit;
  /** For `port.opened`: the port serves only once it is stored. */
  storedAudit: StoredAudit;
  logger: Logger;
  tls?: { cert: Buffer; key: Buffer };
  /** A request body (a search form, a written resource), in bytes. */
  maxBodyBytes?: number;
  /** The listener's timeouts and connection cap (absent: the defaults). */
  listenerLimits?: HttpListenerLimits;
  /** ALLOWED_HOSTS and the refusal counter (http/host-check.ts). */
  hostCheck?: HostCheckSettings;
}

const fhirJson = "application/fhir+json; charset=utf-8";
/** `_format` values and Accept types that mean JSON (`+` in a query string reads as a space). */
const jsonFormats = new Set(["json", "application/json", "application/fhir+json", "application/fhir json", "application/json+fhir", "application/json fhir"]);
const acceptedTypes = new Set(["*/*", "application/*", "application/json", "application/fhir+json", "application/json+fhir"]);
const formType = "application/x-www-form-urlencoded";

/** JSON only: a `_format` or an Accept that asks for anything else (XML, Turtle) is answered 406. */
function checkFormat(formats: readonly string[], accept: string | undefined): void {
  for (const format of formats)
    if (!jsonFormats.has(format.trim().toLowerCase()))
      throw new FhirError(406, "not-supported", `_format '${format}' is not served: this export answers application/fhir+json only`);
  if (accept === undefined || accept.trim() === "") return;
  const types = accept.split(",").map((part) => part.split(";")[0]!.trim().toLowerCase());
  if (!types.some((type) => acceptedTypes.has(type)))
    throw new FhirError(406, "not-supported", `Accept '${accept}' is not served: this export answers application/fhir+json only`);
}

function mediaTypeOf(request: FastifyRequest): string {
  return (request.headers["content-type"] ?? "").split(";")[0]!.trim().toLowerCase();
}

/** The issue code of a shared HTTP error (authentication, body limits) by its status. */
function issueCodeOf(status: number): IssueCode {
  if (status === 401) return "login";
  if (status === 403) return "forbidden";
  // A Host this door does not answer to (http/host-check.ts): a security refusal, not a malformed request.
  if (status === 421) return "security";
  if (status === 404) return "not-found";
  if (status === 413) return "too-costly";
  if (status === 405 || status === 406 || status === 415) return "not-supported";
  if (status === 503) return "transient";
  if (status === 504) return "timeout";
  return status < 500 ? "invalid" : "exception";
}

/** Any failure as a FhirError: the door's own as they are, the shared HTTP ones (authentication, bodies) by their status. */
function fhirErrorOf(error: unknown, method: string): { failure: FhirError; retryAfter?: number } {
  if (error instanceof FhirError) return { failure: error };
  const http = toGatewayError(error as FastifyError, method);
  return {
    failure: new FhirError(http.statusCode, issueCodeOf(http.statusCode), http.message, undefined, { cause: error }),
    ...(http.retryAfterSeconds === undefined ? {} : { retryAfter: http.retryAfterSeconds }),
  };
}

/** Backend pages a search reads past a page that released nothing, before it answers that page empty. */
const maxSkippedPages = 20;

/** A search answer that had entries and released none of them. */
function allDropped(answer: BackendAnswer, released: { body?: unknown }): boolean {
  const entries = (answer.json as { entry?: unknown } | undefined)?.entry;
  return Array.isArray(entries) && entries.length > 0 && (released.body as { entry?: unknown } | undefined)?.entry === undefined;
}

/** The backend's `next` page of a search answer, as a path and query under its base; undefined when it has none there. */
function backendNext(answer: BackendAnswer, base: string): string | undefined {
  const links = (answer.json as { link?: unknown } | undefined)?.link;
  if (!Array.isArray(links)) return undefined;
  const url = links.find((link: { relation?: unknown; url?: unknown } | null) => link?.relation === "next")?.url;
  return typeof url === "string" && url.startsWith(base) && url.length > base.length ? url.slice(base.length) : undefined;
}

/** A batch or transaction Bundle's entry methods, in order; undefined when the body is no such Bundle (its answer's entries then count as reads). */
function entryMethodsOf(body: Buffer | undefined): Array<string | undefined> | undefined {
  try {
    const bundle = JSON.parse(body?.toString("utf8") ?? "null") as { entry?: unknown };
    if (!Array.isArray(bundle?.entry)) return undefined;
    return bundle.entry.map((entry: { request?: { method?: unknown } } | null) =>
      typeof entry?.request?.method === "string" ? entry.request.method.toUpperCase() : undefined,
    );
  } catch {
    return undefined;
  }
}

/**
 * What a request target asks, parsed once for the permission check and the handler alike: a
 * target with a fragment (`#`, which Node's parser lets through and URL parsing cuts off) is
 * refused, so that no other reading of the path can be checked than the one that is served.
 */
function targetOf(request: FastifyRequest): { url: URL; segments: string[]; interaction: FhirInteraction } {
  if (request.url.includes("#")) throw new FhirError(400, "invalid", "a request target has no fragment ('#')");
  const url = new URL(request.url, "http://export.invalid");
  let segments: string[];
  try {
    segments = url.pathname
      .split("/")
      .filter(Boolean)
      .map((segment) => decodeURIComponent(segment));
  } catch {
    throw new FhirError(400, "invalid", "the path is not well-formed");
  }
  return { url, segments, interaction: interactionOf(request.method, segments) };
}

/** Reads, vreads, searches (POST `_search` too) and the capabilities read; everything else (and a target that is refused anyway) writes. */
function isFhirRead(request: FastifyRequest): boolean {
  try {
    return targetOf(request).interaction.kind !== "write";
  } catch {
    return false;
  }
}

/**
 * The backend identity (spec 5.1): the export's own credentials when it has them, else the
 * client's Basic or Bearer Authorization passed through. A cloud signature is made for this
 * export, not for the backend, and is not passed on. With it, who the backend connection's
 * audit record names (`connection.outgoing`): the export's user, the client's Basic user or
 * the subject the door verified the client's bearer token as, or nobody.
 */
function backendAuthorization(record: ExportRecord, request: FastifyRequest): { headers: Record<string, string>; identity: BackendIdentity } {
  if (isDatabaseCredentials(record.credentials))
    return {
      headers: { authorization: `Basic ${Buffer.from(`${record.credentials.user}:${record.credentials.password}`).toString("base64")}` },
      identity: { name: record.credentials.user, source: "export" },
    };
  const offered = request.headers.authorization;
  if (!offered || !/^(basic|bearer) /i.test(offered)) return { headers: {}, identity: { name: null, source: "none" } };
  const basicUser = /^basic /i.test(offered) ? Buffer.from(offered.slice(6).trim(), "base64").toString("utf8").split(":")[0] : undefined;
  return { headers: { authorization: offered }, identity: { name: basicUser ?? request.access?.subject ?? "(bearer token)", source: "client" } };
}

/**
 * The FHIR door of an export (its own port, a FHIR R4 base at `/`): read, vread and search
 * (GET, POST `_search`, type and system level) with every resource decided by its
 * own patient; writes only with allowWrites; everything else refused. Every error is an
 * OperationOutcome. Credentials as on the gateway, selected for component `fhir`.
 */
export function buildFhirApp(options: FhirServerOptions): FastifyInstance {
  const { record, backend, redactor } = options;
  const app = doorApp({
    exportId: record.id,
    component: "fhir",
    tls: options.tls,
    refuseOtherSites: true,
    listenHost: options.host,
    hostCheck: options.hostCheck,
    logger: options.logger,
    audit: options.audit,
    limits: options.listenerLimits,
    fastify: { bodyLimit: options.maxBodyBytes ?? 16 * 1024 * 1024 },
  });
  app.setErrorHandler((error, request, reply) => {
    const { failure, retryAfter } = fhirErrorOf(error, request.method);
    if (failure.status >= 500) request.log.warn({ err: failure.cause ?? failure, status: failure.status }, failure.message);
    // Every 503 says when to try again (1 s unless the error names more).
    if (retryAfter !== undefined || failure.status === 503) void reply.header("retry-after", String(retryAfter ?? 1));
    void reply.status(failure.status).type(fhirJson).send(JSON.stringify(failure.outcome()));
  });
  app.setNotFoundHandler((request, reply) => {
    void reply
      .status(404)
      .type(fhirJson)
      .send(JSON.stringify(new FhirError(404, "not-found", `no such path: ${request.method} ${request.url.split("?")[0]}`).outcome()));
  });
  app.removeAllContentTypeParsers();
  // Bodies are passed on as bytes (a search form is also read for its parameters).
  app.addContentTypeParser("*", { parseAs: "buffer" }, (_request, body, done) => done(null, body));
  void app.register(authentication, {
    auth: options.auth,
    overrides: options.overrides,
    componentOf: (request) => component("fhir", domainOf(request)),
    // Reads and searches (POST _search too) are fhir:read; writes (allowWrites exports) fhir:write (docs/authorization.md).
    permissionOf: (request) => ({ component: "fhir", action: isFhirRead(request) ? "read" : "write" }),
  });
  const exportBaseOf = (request: FastifyRequest): string => {
    const host = request.headers.host && /^[A-Za-z0-9.\-:[\]]+$/.test(request.headers.host) ? request.headers.host : `${options.host}:${record.listen.port}`;
    return `${options.tls ? "https" : "http"}://${host}/`;
  };
  void app.register(async (scope) => {
    scope.route({
      method: ["GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"],
      url: "/*",
      handler: async (request, reply) => {
        const { url, segments, interaction } = targetOf(request);
        const body = Buffer.isBuffer(request.body) && request.body.length > 0 ? request.body : undefined;
        const type = mediaTypeOf(request);
        // A search's parameters: the query's and, for POST _search, the form's.
        const params = new URLSearchParams(url.searchParams);
        if (interaction.kind === "search" && request.method === "POST" && body) {
          if (type !== formType) throw new FhirError(415, "not-supported", `a POST _search sends its parameters as ${formType}`);
          for (const [name, value] of new URLSearchParams(body.toString("utf8"))) params.append(name, value);
        }
        checkFormat(params.getAll("_format"), request.headers.accept);
        if (interaction.kind === "write") {
          if (!record.allowWrites) throw new FhirError(403, "forbidden", "this export is read-only: it serves read, vread and search");
          if (body && !["application/fhir+json", "application/json", "application/json+fhir", "application/json-patch+json"].includes(type))
            throw new FhirError(415, "not-supported", `'${type || "no content type"}' is not taken: this export takes application/fhir+json`);
        }
        // The mapping is checked (and the configuration in memory) before the backend is asked anything.
        const plan = interaction.kind === "capabilities" ? undefined : await redactor.plan();
        const requirement = interaction.kind === "search" ? searchRequirement(params, interaction.types, plan!) : undefined;
        const { headers, identity } = backendAuthorization(record, request);
        if (body) headers["content-type"] = request.headers["content-type"]!;
        if (interaction.kind === "write")
          for (const name of ["if-match", "if-none-exist", "if-none-match", "prefer"])
            if (typeof request.headers[name] === "string") headers[name] = request.headers[name] as string;
        const pathAndQuery = segments.map((segment) => encodeURIComponent(segment)).join("/") + url.search;
        const context = {
          interaction,
          plan,
          requirement,
          redactor,
          backendBase: backend.base,
          exportBase: exportBaseOf(request),
          ...(interaction.kind === "write" && segments.length === 0 ? { entryMethods: entryMethodsOf(body) } : {}),
        };
        // HEAD is answered as GET without the body (Fastify drops it): the backend is asked GET, so its answer can be decided.
        let answer = await backend.send(request.method === "HEAD" ? "GET" : request.method, pathAndQuery, headers, identity, body);
        const released = await answerOf(answer, context);
        // A search page whose every entry was dropped is not answered as such (with its `next`, paging on would count
        // what was dropped): the backend's next pages are read here, with the same search's requirement, until one
        // releases something, up to maxSkippedPages; if none does, the empty page is answered with its self link only.
        for (let skipped = 0; interaction.kind === "search" && skipped < maxSkippedPages && allDropped(answer, released); skipped++) {
          const next = backendNext(answer, backend.base);
          if (next === undefined) break;
          answer = await backend.send("GET", next, headers, identity);
          const later = await answerOf(answer, context);
          if (!allDropped(answer, later)) {
            released.body = later.body;
            break;
          }
        }
        if (released.headers) void reply.headers(released.headers);
        void reply.status(released.status);
        if (released.body === undefined) return reply.send();
        return reply.type(fhirJson).send(JSON.stringify(released.body));
      },
    });
  });
  return app;
}

/** A FHIR export's listening port. */
export function listenFhir(options: FhirServerOptions): Promise<HttpDoorPort> {
  const { record, redactor } = options;
  return HttpDoorPort.listen(buildFhirApp(options), {
    exportId: record.id,
    component: "fhir",
    host: options.host,
    port: record.listen.port,
    tls: options.tls !== undefined,
    audit: options.audit,
    storedAudit: options.storedAudit,
    rows: () => ({ ...redactor.counts }),
  });
}
