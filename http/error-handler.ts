import type { FastifyError, FastifyInstance } from "fastify";
import { problemFromSchemaError } from "../policy/check";
import { DeadlineExceededError, RuntimeError } from "../actors/runtime/errors";
import { HttpError, type HttpErrorCode } from "./errors";

/** Codes of errors raised by actors, translated into the registry (details travel along). */
const actorCodes: Record<string, ConstructorParameters<typeof HttpError>[0]> = {
  CONFIG_INVALID: "ERR_CONFIG_INVALID",
  CONFIG_REFERENCED: "ERR_CONFIG_REFERENCED",
  REVISION_MISMATCH: "ERR_CONFIG_REVISION_MISMATCH",
  NOT_FOUND: "ERR_RESOURCE_NOT_FOUND",
  OUTCOME_UNKNOWN: "ERR_ACTOR_OUTCOME_UNKNOWN",
  USER_EXISTS: "ERR_USER_EXISTS",
  USER_INVALID: "ERR_USER_INVALID",
  TERMS_CHANGED: "ERR_USER_TERMS_CHANGED",
  GUARDIAN_REQUIRED: "ERR_USER_GUARDIAN_REQUIRED",
  GUARDIAN_INVALID: "ERR_USER_GUARDIAN_INVALID",
  NOT_A_GUARDIAN: "ERR_USER_GUARDIAN_INVALID",
  CONSENT_INVALID: "ERR_USER_CONSENT_INVALID",
  FLOW_NOT_DISABLEABLE: "ERR_USER_FLOW_NOT_ALLOWED",
  REDACT_INVALID: "ERR_REDACT_INVALID",
  REDACT_RECORD_INVALID: "ERR_REDACT_RECORD_INVALID",
  BAD_ACTOR_ID: "ERR_REQUEST_INVALID",
  JOB_NOT_FOUND: "ERR_REDACT_JOB_NOT_FOUND",
  JOB_RUNNING: "ERR_REDACT_JOB_RUNNING",
  JOB_FAILED: "ERR_REDACT_JOB_FAILED",
  JOB_OUTPUT_LOST: "ERR_REDACT_OUTPUT_LOST",
  DOCUMENT_TOO_LARGE: "ERR_REDACT_DOCUMENT_TOO_LARGE",
  DOCUMENT_STORAGE_FULL: "ERR_REDACT_STORAGE_FULL",
  EXPORT_INVALID: "ERR_EXPORT_INVALID",
  EXPORT_NOT_FOUND: "ERR_EXPORT_NOT_FOUND",
  EXPORT_PORT_TAKEN: "ERR_EXPORT_PORT_TAKEN",
  EXPORT_NO_PORT: "ERR_EXPORT_NO_PORT",
  TRACE_UNAVAILABLE: "ERR_TRACE_UNAVAILABLE",
  AUDIT_UNAVAILABLE: "ERR_AUDIT_UNAVAILABLE",
  GUARDIAN_CATEGORIES: "ERR_USER_GUARDIAN_CATEGORIES",
  REPORT_INVALID: "ERR_REQUEST_INVALID",
  INDEX_BEHIND: "ERR_REPORT_UNAVAILABLE",
  MAPPING_WRITE_FORBIDDEN: "ERR_AUTH_FORBIDDEN",
  EXPORT_IDENTITY_FORBIDDEN: "ERR_AUTH_FORBIDDEN",
};

/** Actor errors whose message and details are written for clients; others get the registry's message. */
const clientFacingMessages = new Set([
  "CONFIG_INVALID",
  "CONFIG_REFERENCED",
  "REVISION_MISMATCH",
  "NOT_FOUND",
  "USER_EXISTS",
  "USER_INVALID",
  "TERMS_CHANGED",
  "GUARDIAN_REQUIRED",
  "GUARDIAN_INVALID",
  "NOT_A_GUARDIAN",
  "CONSENT_INVALID",
  "FLOW_NOT_DISABLEABLE",
  "GUARDIAN_CATEGORIES",
  "REPORT_INVALID",
  "INDEX_BEHIND",
  "MAPPING_WRITE_FORBIDDEN",
  "EXPORT_IDENTITY_FORBIDDEN",
  "REDACT_INVALID",
  "REDACT_RECORD_INVALID",
  "BAD_ACTOR_ID",
  "JOB_NOT_FOUND",
  "JOB_RUNNING",
  "JOB_FAILED",
  "JOB_OUTPUT_LOST",
  "DOCUMENT_TOO_LARGE",
  "DOCUMENT_STORAGE_FULL",
  "EXPORT_INVALID",
  "EXPORT_NOT_FOUND",
  "EXPORT_PORT_TAKEN",
  "EXPORT_NO_PORT",
]);

/** Fastify's own error codes, translated into the registry. */
const fastifyCodes: Record<string, ConstructorParameters<typeof HttpError>[0]> = {
  FST_ERR_CTP_BODY_TOO_LARGE: "ERR_REQUEST_BODY_TOO_LARGE",
  FST_ERR_CTP_INVALID_MEDIA_TYPE: "ERR_REQUEST_CONTENT_TYPE",
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: "ERR_REQUEST_INVALID",
  FST_ERR_CTP_EMPTY_JSON_BODY: "ERR_REQUEST_BODY_MALFORMED",
  FST_ERR_CTP_INVALID_JSON_BODY: "ERR_REQUEST_BODY_MALFORMED",
};

export function toGatewayError(error: FastifyError | Error, method: string): HttpError {
  if (error instanceof HttpError) return error;
  // A stream that failed for a gateway reason (a body whose signature did not verify) says so through its cause.
  let cause = (error as Error).cause;
  for (let depth = 0; depth < 8 && cause instanceof Error; depth++, cause = cause.cause) {
    if (cause instanceof HttpError) return cause;
  }
  const fastifyError = error as FastifyError;
  if (fastifyError.validation) {
    const details = fastifyError.validation.map(problemFromSchemaError);
    return new HttpError("ERR_REQUEST_INVALID", `the request is not valid: ${details.map((d) => `${d.path} ${d.problem}`).join("; ")}`, details);
  }
  if (fastifyError.code && fastifyCodes[fastifyError.code]) return new HttpError(fastifyCodes[fastifyError.code], undefined, undefined, { cause: error });
  if (error instanceof SyntaxError && fastifyError.statusCode === 400)
    return new HttpError("ERR_REQUEST_BODY_MALFORMED", undefined, undefined, { cause: error });
  if (fastifyError.code?.startsWith("FST_") && fastifyError.statusCode && fastifyError.statusCode < 500)
    return new HttpError("ERR_REQUEST_INVALID", undefined, undefined, { cause: error });
  // A write that ran out of time may still have been stored: say so rather than "did not answer".
  if (error instanceof DeadlineExceededError)
    return new HttpError(method === "GET" ? "ERR_ACTOR_TIMEOUT" : "ERR_ACTOR_OUTCOME_UNKNOWN", undefined, undefined, { cause: error });
  if (error instanceof RuntimeError && actorCodes[error.code]) {
    const message = clientFacingMessages.has(error.code) ? error.message : undefined;
    return new HttpError(actorCodes[error.code], message, clientFacingMessages.has(error.code) ? error.details : undefined, { cause: error });
  }
  if (error instanceof RuntimeError && error.retryable) return new HttpError("ERR_ACTOR_UNAVAILABLE", undefined, undefined, { cause: error });
  return new HttpError("ERR_INTERNAL", undefined, undefined, { cause: error });
}

/** A route's URL pattern as a RegExp over paths: `:param` is one segment, `*` the rest. */
function patternOf(url: string): RegExp {
  const source = url
    .split(/(:[A-Za-z0-9_]+|\*)/)
    .map((part) => (part === "*" ? ".*" : part.startsWith(":") ? "[^/]+" : part.replace(/[.+?^${}()|[\]\\]/g, "\\$&")))
    .join("");
  return new RegExp(`^${source}$`);
}

/** The methods some route answers on a path, from every route registered (including those of plugins). */
function knownMethods(app: FastifyInstance): (path: string) => string[] {
  const routes: Array<{ pattern: RegExp; methods: string[] }> = [];
  app.addHook("onRoute", (route) => {
    routes.push({ pattern: patternOf(route.url), methods: ([] as string[]).concat(route.method) });
  });
  return (path) => [...new Set(routes.filter((route) => route.pattern.test(path)).flatMap((route) => route.methods))].sort();
}

/** Seconds a client should wait before retrying a 503 or 429 that names no better figure (every such answer says one). */
const defaultRetryAfterSeconds = 1;

/** Every failure leaves as a registered code; internal error text never reaches the client. `refused` hears each code sent (the refusal metrics). */
export function installErrorHandling(app: FastifyInstance, refused?: (code: HttpErrorCode) => void): void {
  const methodsOf = knownMethods(app);
  app.addHook("onSend", async (_request, reply) => {
    if ((reply.statusCode === 503 || reply.statusCode === 429) && !reply.hasHeader("retry-after"))
      void reply.header("retry-after", String(defaultRetryAfterSeconds));
  });
  app.setErrorHandler((error, request, reply) => {
    const failure = toGatewayError(error as FastifyError, request.method);
    // Only failures nobody anticipated deserve a stack in the log; the rest are ordinary answers.
    if (failure.code === "ERR_INTERNAL") request.log.error({ err: error, code: failure.code }, "request failed");
    else request.log.info({ code: failure.code }, failure.message);
    if (failure.retryAfterSeconds !== undefined) void reply.header("retry-after", String(failure.retryAfterSeconds));
    refused?.(failure.code);
    void reply.status(failure.statusCode).send(failure.toBody());
  });
  app.setNotFoundHandler((request, reply) => {
    const path = request.url.split("?")[0]!;
    // A known path asked with a method it does not take: 405 and the methods it does (RFC 9110 15.5.6).
    const allowed = methodsOf(path);
    if (allowed.length > 0) {
      const failure = new HttpError("ERR_REQUEST_METHOD", `${request.method} is not allowed on ${path}; allowed: ${allowed.join(", ")}`);
      refused?.(failure.code);
      void reply.status(failure.statusCode).header("allow", allowed.join(", ")).send(failure.toBody());
      return;
    }
    const failure = new HttpError("ERR_REQUEST_NOT_FOUND", `no such path: ${request.method} ${path}`);
    refused?.(failure.code);
    void reply.status(failure.statusCode).send(failure.toBody());
  });
}
