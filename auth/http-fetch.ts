import { request as httpRequest, type ClientRequest, type IncomingMessage, type RequestOptions } from "node:http";
import { request as httpsRequest } from "node:https";
import { withoutUserInfo } from "./redacted-url";
import { VerifierUnavailable } from "./types";

export interface FetchJsonOptions {
  /** Limit on the whole exchange: connect, send, and the last byte of the answer. */
  timeoutMs: number;
  /** Largest answer body accepted, in bytes; 0 means no limit. */
  maxBytes: number;
  /** False accepts any server certificate (https only). */
  verifyCertificate: boolean;
  /** Default GET, or POST when `form` is given. */
  method?: "GET" | "POST";
  /** Sent as an application/x-www-form-urlencoded body. */
  form?: Record<string, string>;
  /** HTTP Basic credentials, form-encoded first as RFC 6749 2.3.1 requires for OAuth clients. */
  basicAuth?: { user: string; password: string };
}

/** The URL as error messages show it: without user info, which may hold a password. */
export function displayUrl(url: string | URL): string {
  return URL.canParse(String(url)) ? withoutUserInfo(String(url)) : "(invalid URL)";
}

function formEncode(value: string): string {
  return encodeURIComponent(value).replace(/%20/g, "+");
}

/** The OAuth `error` code of an error answer (RFC 6749 5.2), when it has one that is safe to log. */
function oauthErrorCode(text: string): string | undefined {
  try {
    const { error } = JSON.parse(text) as { error?: unknown };
    // Error codes are short ASCII words; anything else could echo request data.
    return typeof error === "string" && /^[A-Za-z0-9_.-]{1,64}$/.test(error) ? error : undefined;
  } catch {
    return undefined;
  }
}

/**
 * One HTTP(S) request whose answer must be a 2xx with a JSON object body. Every failure
 * (unreachable, timeout, oversize answer, other status, not a JSON object) rejects with a
 * `VerifierUnavailable` naming the URL; request bodies (which may carry a token) are never quoted.
 */
export function fetchJson(url: string, options: FetchJsonOptions): Promise<Record<string, unknown>> {
  const shown = displayUrl(url);
  let target: URL;
  try {
    target = new URL(url);
  } catch (cause) {
    return Promise.reject(new VerifierUnavailable(`${shown} is not a URL`, { cause }));
  }
  if (target.protocol !== "http:" && target.protocol !== "https:") {
    return Promise.reject(new VerifierUnavailable(`${shown} is not an http(s) URL`));
  }

  const body = options.form ? new URLSearchParams(options.form).toString() : undefined;
  const headers: Record<string, string> = { accept: "application/json" };
  if (body !== undefined) {
    headers["content-type"] = "application/x-www-form-urlencoded";
    headers["content-length"] = String(Buffer.byteLength(body));
  }
  if (options.basicAuth) {
    const { user, password } = options.basicAuth;
    headers.authorization = `Basic ${Buffer.from(`${formEncode(user)}:${formEncode(password)}`).toString("base64")}`;
  }
  const requestOptions: RequestOptions = { method: options.method ?? (body === undefined ? "GET" : "POST"), headers };
  const { maxBytes } = options;

  return new Promise((resolve, reject) => {
    let settled = false;
    let request: ClientRequest | undefined;
    const finish = (error: VerifierUnavailable | undefined, value?: Record<string, unknown>) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      if (error) {
        // Destroying stops the download at once: an oversize or late answer is not read to its end.
        request?.destroy();
        reject(error);
      } else {
        resolve(value!);
      }
    };
    const fail = (reason: string, cause?: unknown) => finish(new VerifierUnavailable(`${shown}: ${reason}`, cause === undefined ? undefined : { cause }));
    const timer = setTimeout(() => fail(`no complete answer within ${options.timeoutMs} ms`), options.timeoutMs);

    const onResponse = (response: IncomingMessage) => {
      const declared = Number(response.headers["content-length"]);
      if (maxBytes > 0 && declared > maxBytes) return fail(`answer of ${declared} bytes is larger than the limit of ${maxBytes}`);
      const chunks: Buffer[] = [];
      let size = 0;
      response.on("data", (chunk: Buffer) => {
        size += chunk.length;
        if (maxBytes > 0 && size > maxBytes) return fail(`answer is larger than the limit of ${maxBytes} bytes`);
        chunks.push(chunk);
      });
      response.on("error", (error) => fail(`answer failed: ${error.message}`, error));
      response.on("close", () => fail("connection closed before the answer was complete"));
      response.on("end", () => {
        const text = Buffer.concat(chunks).toString("utf8");
        const status = response.statusCode ?? 0;
        if (status < 200 || status > 299) {
          const code = oauthErrorCode(text);
          return fail(`answered HTTP ${status}${code ? ` (${code})` : ""}`);
        }
        let parsed: unknown;
        try {
          parsed = JSON.parse(text);
        } catch (error) {
          return fail("answer is not JSON", error);
        }
        if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) return fail("answer is not a JSON object");
        finish(undefined, parsed as Record<string, unknown>);
      });
    };

    try {
      request =
        target.protocol === "https:"
          ? httpsRequest(target, { ...requestOptions, rejectUnauthorized: options.verifyCertificate }, onResponse)
          : httpRequest(target, requestOptions, onResponse);
    } catch (error) {
      // e.g. a header value Node refuses; the message names the header, not its value.
      return fail(`request not sent: ${(error as Error).message}`, error);
    }
    request.on("error", (error) => fail(`request failed: ${error.message}`, error));
    request.end(body);
  });
}
