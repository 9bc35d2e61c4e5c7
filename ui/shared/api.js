// @ts-check
/**
 * The API client of the web UIs: same-origin calls with `credentials: "omit"` and the
 * Authorization header of the sign-in; a 401 opens the sign-in dialog (with the credential
 * types the gateway's WWW-Authenticate offers) and the call is tried again.
 */
import { authorizationHeader, challengeSchemes, signIn } from "./auth.js";

/** An error answer of the gateway: `{error: {code, message, details?}}`, or a failure to reach it. */
export class ApiError extends Error {
  /**
   * @param {number} status
   * @param {string} code
   * @param {string} message
   * @param {unknown} [details]
   */
  constructor(status, code, message, details) {
    super(message);
    this.name = "ApiError";
    this.status = status;
    this.code = code;
    this.details = details;
  }

  /** The credentials could not be checked (directory or identity provider unreachable): not the user's fault. */
  get authUnavailable() {
    return this.code === "ERR_AUTH_UNAVAILABLE";
  }

  /** Validation problems, `[{path, problem}]`, when the answer lists them. */
  get problems() {
    return Array.isArray(this.details)
      ? /** @type {Array<{path: string, problem: string}>} */ (this.details.filter((d) => d && typeof d.path === "string"))
      : [];
  }
}

/** @param {Response} response @returns {Promise<ApiError>} */
export async function errorOf(response) {
  let body = null;
  try {
    body = await response.json();
  } catch {
    // not JSON: the status says enough
  }
  const error = body?.error;
  if (error && typeof error.code === "string") return new ApiError(response.status, error.code, String(error.message ?? error.code), error.details);
  return new ApiError(response.status, `HTTP_${response.status}`, `${response.status} ${response.statusText}`.trim());
}

/**
 * The headers every call sends: the credentials, if any, and what is accepted.
 * @param {Record<string, string>} [extra]
 */
export function requestHeaders(extra = {}) {
  const headers = { accept: "application/json", ...extra };
  const authorization = authorizationHeader();
  if (authorization) headers.authorization = authorization;
  return headers;
}

/**
 * Asks for credentials after a 401; false when the user cancels.
 * @param {Response | XMLHttpRequest} answer
 * @param {ApiError} error
 */
export async function askForCredentials(answer, error) {
  const header = answer instanceof Response ? answer.headers.get("www-authenticate") : answer.getResponseHeader("www-authenticate");
  const message =
    error.code === "ERR_AUTH_REQUIRED"
      ? "This page needs credentials."
      : error.code === "ERR_AUTH_UNSUPPORTED"
        ? "These credentials are not the kind this service takes here."
        : "The credentials were not accepted.";
  return signIn({ schemes: challengeSchemes(header), message });
}

/**
 * @typedef {object} CallOptions
 * @property {string} [method]
 * @property {unknown} [json] a body sent as JSON
 * @property {BodyInit} [body] any other body (with its content-type in headers)
 * @property {Record<string, string>} [headers]
 * @property {boolean} [askToSignIn] default true: a 401 opens the sign-in dialog and the call is retried
 * @property {AbortSignal} [signal]
 */

/**
 * A call whose answer is a successful Response (not yet read); error answers throw ApiError.
 * @param {string} path
 * @param {CallOptions} [options]
 * @returns {Promise<Response>}
 */
export async function request(path, options = {}) {
  const { method = "GET", json, body, headers = {}, askToSignIn = true, signal } = options;
  for (;;) {
    const extra = json === undefined ? headers : { "content-type": "application/json", ...headers };
    let response;
    try {
      response = await fetch(path, {
        method,
        headers: requestHeaders(extra),
        body: json === undefined ? body : JSON.stringify(json),
        credentials: "omit",
        cache: "no-store",
        redirect: "error",
        signal,
      });
    } catch (error) {
      if (signal?.aborted) throw error;
      throw new ApiError(0, "ERR_NETWORK", `The service could not be reached (${error instanceof Error ? error.message : String(error)}).`);
    }
    notePermissions(response);
    if (response.ok) return response;
    const error = await errorOf(response);
    if (response.status === 401 && askToSignIn && (await askForCredentials(response, error))) continue;
    throw error;
  }
}

/**
 * A JSON call: the parsed body and the configuration revision (ETag), if any.
 * @param {string} path
 * @param {CallOptions} [options]
 * @returns {Promise<{ body: any, revision: number | null, response: Response }>}
 */
export async function api(path, options = {}) {
  const response = await request(path, options);
  const text = await response.text();
  const etag = response.headers.get("etag");
  const revision = etag && /^(?:W\/)?"(\d+)"$/.test(etag) ? Number(/"(\d+)"/.exec(etag)?.[1]) : null;
  return { body: text ? JSON.parse(text) : null, revision, response };
}

/**
 * What the signed-in caller may do, as the gateway's `x-warden-permissions` header says (`*`, or
 * `component:action` words). Unknown until an answer carries it: then nothing is disabled.
 * @type {Set<string> | "*" | null}
 */
let permissions = null;
/** @type {Array<() => void>} */
const permissionListeners = [];

/** @param {Response} response */
function notePermissions(response) {
  const header = response.headers.get("x-warden-permissions");
  if (header === null) return;
  const next = header === "*" ? "*" : new Set(header.split(" ").filter(Boolean));
  const same =
    next === permissions ||
    (next instanceof Set &&
      permissions instanceof Set &&
      next.size === permissions.size &&
      [...next].every((p) => permissions instanceof Set && permissions.has(p)));
  if (same) return;
  permissions = next;
  for (const listener of permissionListeners) listener();
}

/** Whether the caller holds `permission` (true while unknown: the gateway still refuses with 403). @param {string} permission */
export function holds(permission) {
  return permissions === null || permissions === "*" || permissions.has(permission);
}

/** @param {() => void} listener */
export function onPermissionsChange(listener) {
  permissionListeners.push(listener);
}
