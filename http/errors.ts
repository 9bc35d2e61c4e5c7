/**
 * The one registry of gateway errors: code -> HTTP status, default message and, for a 503 worth
 * waiting longer than a second for, the Retry-After seconds. Every error body is
 * `{error: {code, message, details?}}` with one of these codes.
 */
export const httpErrors = {
  ERR_REQUEST_INVALID: { status: 400, message: "the request is not valid" },
  ERR_REQUEST_BODY_MALFORMED: { status: 400, message: "the request body is not well-formed" },
  ERR_REQUEST_NOT_FOUND: { status: 404, message: "no such path" },
  ERR_RESOURCE_NOT_FOUND: { status: 404, message: "no such item" },
  ERR_CONFIG_INVALID: { status: 400, message: "the configuration is not valid; nothing was changed" },
  ERR_CONFIG_REFERENCED: { status: 409, message: "the item is still referenced; nothing was changed" },
  ERR_USER_EXISTS: { status: 409, message: "the user already exists" },
  ERR_USER_INVALID: { status: 400, message: "the user is not valid" },
  ERR_USER_TERMS_CHANGED: { status: 409, message: "the user's personalized terms are not the ones named: read them again" },
  ERR_USER_GUARDIAN_REQUIRED: { status: 403, message: "a guardian must act for this user" },
  ERR_USER_GUARDIAN_INVALID: { status: 403, message: "not a valid guardian for this user" },
  ERR_USER_CONSENT_INVALID: { status: 400, message: "the consent is not valid; nothing was recorded" },
  ERR_USER_FLOW_NOT_ALLOWED: { status: 403, message: "guardian rights do not allow turning off this flow" },
  ERR_USER_GUARDIAN_CATEGORIES: { status: 403, message: "a guardian acts only on the guardian categories; nothing was changed" },
  ERR_USER_NOT_YOURS: { status: 403, message: "a subject reads and acts on its own report only" },
  ERR_REPORT_UNAVAILABLE: { status: 503, message: "the decision index is catching up; try again" },
  ERR_REDACT_INVALID: { status: 400, message: "the redaction request names an unknown type, purpose or mapping group" },
  ERR_REDACT_RECORD_INVALID: { status: 400, message: "the record cannot be redacted" },
  ERR_REDACT_JOB_NOT_FOUND: { status: 404, message: "no such redaction job (finished jobs are deleted after their retention)" },
  ERR_REDACT_JOB_RUNNING: { status: 404, message: "the redaction job is still running; GET /redact/progress shows how far it is" },
  ERR_REDACT_JOB_FAILED: { status: 409, message: "the redaction job failed and has no output; GET /redact/stats says why" },
  ERR_REDACT_OUTPUT_LOST: { status: 410, message: "the redaction job is complete but its output is no longer stored whole; submit the document again" },
  ERR_REDACT_DOCUMENT_TOO_LARGE: { status: 413, message: "the document is larger than one redaction job may upload; nothing was kept" },
  ERR_REDACT_STORAGE_FULL: { status: 507, message: "redaction storage is full; nothing was kept" },
  ERR_EXPORT_INVALID: { status: 400, message: "the export is not valid; nothing was created" },
  ERR_EXPORT_NOT_FOUND: { status: 404, message: "no such export" },
  ERR_EXPORT_PORT_TAKEN: { status: 409, message: "the port is used by another export" },
  ERR_EXPORT_NO_PORT: { status: 503, message: "no free port is left in the export port range", retryAfterSeconds: 60 },
  ERR_PIPELINE_RECORD_INVALID: { status: 400, message: "a pipeline record is one JSON object" },
  ERR_PIPELINE_UNAVAILABLE: { status: 503, message: "the pipeline export cannot redact now; try again" },
  ERR_CONFIG_REVISION_MISMATCH: { status: 412, message: "the configuration changed since the revision named in If-Match; nothing was changed" },
  ERR_AUTH_REQUIRED: { status: 401, message: "this path needs credentials" },
  ERR_AUTH_INVALID: { status: 401, message: "the credentials are not valid" },
  ERR_AUTH_UNSUPPORTED: { status: 401, message: "this path does not take this kind of credentials" },
  ERR_AUTH_FORBIDDEN: { status: 403, message: "the caller is authenticated but does not hold the permission this needs" },
  ERR_AUTH_THROTTLED: { status: 429, message: "too many failed logins from this address or for this user; try again after Retry-After seconds" },
  ERR_AUTH_UNAVAILABLE: { status: 503, message: "the credentials could not be verified now; try again" },
  ERR_REQUEST_METHOD: { status: 405, message: "method not allowed on this path" },
  ERR_REQUEST_CROSS_SITE: {
    status: 403,
    message: "a browser sent this request for a page of another site; the APIs answer this origin's pages and clients other than browsers",
  },
  ERR_REQUEST_HOST: {
    status: 421,
    message: "the request's Host is not a name this listener answers to (localhost, an IP address, or a name of ALLOWED_HOSTS)",
  },
  ERR_REQUEST_BODY_TOO_LARGE: { status: 413, message: "the request body is too large" },
  ERR_REQUEST_CONTENT_TYPE: { status: 415, message: "unsupported content type" },
  ERR_SERVICE_NOT_READY: { status: 503, message: "this node is not ready" },
  /** Never sent: a connection over a listener's cap is closed as it arrives; counted under this code in warden_refusals_total. */
  ERR_SERVICE_CONNECTIONS_FULL: { status: 503, message: "the listener is at its connection limit" },
  ERR_SERVICE_NOT_IMPLEMENTED: { status: 501, message: "not implemented yet" },
  ERR_ACTOR_TIMEOUT: { status: 504, message: "the service did not answer in time" },
  ERR_ACTOR_UNAVAILABLE: { status: 503, message: "the service is temporarily unavailable; try again" },
  ERR_TRACE_UNAVAILABLE: { status: 503, message: "the decision could not be traced, so it is not answered; try again" },
  ERR_AUDIT_UNAVAILABLE: {
    status: 503,
    message: "the request could not be audited (the audit log is full or unavailable), so it is not served; try again later",
  },
  ERR_ACTOR_OUTCOME_UNKNOWN: {
    status: 504,
    message: "the service could not confirm whether the change was stored; read the current state before trying again",
  },
  ERR_INTERNAL: { status: 500, message: "internal error" },
} as const satisfies Record<string, { status: number; message: string; retryAfterSeconds?: number }>;

export type HttpErrorCode = keyof typeof httpErrors;

export interface ErrorBody {
  error: { code: HttpErrorCode; message: string; details?: unknown };
}

/** An error with a registered code; thrown by routes, rendered by the gateway's error handler. */
export class HttpError extends Error {
  readonly statusCode: number;
  /** Retry-After of this code, when the registry names one (other 503s and 429s get the gateway's default). */
  readonly retryAfterSeconds: number | undefined;
  constructor(
    readonly code: HttpErrorCode,
    message?: string,
    readonly details?: unknown,
    options?: { cause?: unknown },
  ) {
    super(message ?? httpErrors[code].message, options);
    this.name = "HttpError";
    this.statusCode = httpErrors[code].status;
    const entry = httpErrors[code];
    this.retryAfterSeconds = "retryAfterSeconds" in entry ? entry.retryAfterSeconds : undefined;
  }

  toBody(): ErrorBody {
    return { error: { code: this.code, message: this.message, ...(this.details === undefined ? {} : { details: this.details }) } };
  }
}
