/**
 * AWS Signature Version 4 (AWS4-HMAC-SHA256) as the `cloud` verifier checks it: parsing the
 * signature from the Authorization header or from presigned query parameters, the canonical
 * request, the string to sign and the signing key. Pure functions; the policy (which id, region
 * and service, the clock, replays) lives in the verifier. docs/cloud-signing.md describes the scheme.
 */
import { createHash, createHmac, timingSafeEqual } from "node:crypto";
import type { SignedRequest } from "./types";

export const signingAlgorithm = "AWS4-HMAC-SHA256";
export const scopeTerminator = "aws4_request";
export const unsignedPayload = "UNSIGNED-PAYLOAD";
/** SHA-256 of nothing: the payload hash of a request without a body. */
export const emptySha256 = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

export interface CredentialScope {
  /** yyyymmdd */
  date: string;
  region: string;
  service: string;
  terminator: string;
}

export interface ParsedSignature {
  /** `header`: Authorization and X-Amz-Date headers; `query`: a presigned URL. */
  form: "header" | "query";
  algorithm: string;
  accessKeyId: string;
  scope: CredentialScope;
  /** The signing time, yyyymmddThhmmssZ, from X-Amz-Date. */
  amzDate: string;
  /** `amzDate` as epoch milliseconds. */
  signedAtMs: number;
  /** Lower case, sorted, unique; every one present in the request. */
  signedHeaders: string[];
  /** 64 lower-case hex digits. */
  signature: string;
  /** Presigned only: seconds the URL stays valid after `amzDate`. */
  expiresSeconds?: number;
  /** The query parameters, percent-decoded, X-Amz-Signature left out: the canonical query is made of these. */
  query: Array<[string, string]>;
  /** The payload hashes the signer may have put last in the canonical request; the signature must match one. */
  payloadHashes: string[];
}

const presignParameters = ["X-Amz-Algorithm", "X-Amz-Credential", "X-Amz-Date", "X-Amz-Expires", "X-Amz-SignedHeaders", "X-Amz-Signature"] as const;

export function sha256Hex(data: string | Buffer): string {
  return createHash("sha256").update(data).digest("hex");
}

function hmac(key: string | Buffer, data: string): Buffer {
  return createHmac("sha256", key).update(data, "utf8").digest();
}

/** RFC 3986 encoding as SigV4 wants it: everything but A-Z a-z 0-9 - _ . ~ as %XX (upper case), UTF-8. */
export function uriEncode(value: string): string {
  return encodeURIComponent(value).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
}

/** A header of the request; own properties only, so a signed header named `constructor` is simply absent. */
function header(request: SignedRequest, name: string): string | undefined {
  return Object.hasOwn(request.headers, name) ? request.headers[name] : undefined;
}

/** Splits a raw query string into decoded name/value pairs; undefined when a percent escape is malformed. */
function decodeQuery(raw: string): Array<[string, string]> | undefined {
  const pairs: Array<[string, string]> = [];
  for (const piece of raw.split("&")) {
    if (piece === "") continue;
    const equals = piece.indexOf("=");
    const [name, value] = equals < 0 ? [piece, ""] : [piece.slice(0, equals), piece.slice(equals + 1)];
    try {
      // '+' stays a plus: SigV4 signers encode a space as %20, never as '+'.
      pairs.push([decodeURIComponent(name), decodeURIComponent(value)]);
    } catch {
      return undefined;
    }
  }
  return pairs;
}

/** yyyymmddThhmmssZ as epoch milliseconds; undefined when it is not a real UTC time in that exact form. */
export function amzDateMillis(amzDate: string): number | undefined {
  const match = /^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z$/.exec(amzDate);
  if (!match) return undefined;
  const millis = Date.UTC(+match[1], +match[2] - 1, +match[3], +match[4], +match[5], +match[6]);
  // Date.UTC rolls 20150231 over to March: only a round trip proves the fields were in range.
  return formatAmzDate(new Date(millis)) === amzDate ? millis : undefined;
}

export function formatAmzDate(date: Date): string {
  return date
    .toISOString()
    .replace(/[-:]/g, "")
    .replace(/\.\d{3}/, "");
}

function parseCredential(value: string): { accessKeyId: string; scope: CredentialScope } | { error: string } {
  const parts = value.split("/");
  if (parts.length !== 5 || parts.some((part) => part === "")) return { error: "the credential is not <id>/<yyyymmdd>/<region>/<service>/aws4_request" };
  const [accessKeyId, date, region, service, terminator] = parts;
  if (!/^\d{8}$/.test(date)) return { error: "the credential scope date is not yyyymmdd" };
  return { accessKeyId, scope: { date, region, service, terminator } };
}

function parseSignedHeaders(value: string): string[] | { error: string } {
  const names = value.split(";");
  if (names.some((name) => !/^[a-z0-9!#$%&'*+.^_`|~-]+$/.test(name))) return { error: "SignedHeaders holds a name that is not a lower-case header name" };
  // Signers list them sorted; an unsorted or repeated list is not something a signer made.
  if (names.some((name, index) => index > 0 && names[index - 1] >= name)) return { error: "SignedHeaders is not sorted and unique" };
  return names;
}

type SignatureFields = Pick<ParsedSignature, "algorithm" | "accessKeyId" | "scope" | "amzDate" | "signedHeaders" | "signature" | "expiresSeconds">;

function parseHeaderForm(authorization: string, amzDate: string): SignatureFields | { error: string } {
  const match = /^(\S+) +(\S.*)$/.exec(authorization);
  if (!match) return { error: "the Authorization header is not '<algorithm> Credential=..., SignedHeaders=..., Signature=...'" };
  const fields = new Map<string, string>();
  for (const component of match[2].split(",")) {
    const [name, ...rest] = component.trim().split("=");
    if (rest.length === 0 || fields.has(name)) return { error: `the Authorization header has a malformed or repeated component '${name}'` };
    fields.set(name, rest.join("="));
  }
  const credential = fields.get("Credential");
  const signedHeaders = fields.get("SignedHeaders");
  const signature = fields.get("Signature");
  if (credential === undefined || signedHeaders === undefined || signature === undefined || fields.size !== 3) {
    return { error: "the Authorization header needs exactly Credential, SignedHeaders and Signature" };
  }
  const parsedCredential = parseCredential(credential);
  if ("error" in parsedCredential) return parsedCredential;
  const names = parseSignedHeaders(signedHeaders);
  if ("error" in names) return names;
  return { algorithm: match[1], ...parsedCredential, amzDate, signedHeaders: names, signature };
}

function parseQueryForm(pairs: Array<[string, string]>): SignatureFields | { error: string } {
  const values = new Map<string, string>();
  for (const [name, value] of pairs) {
    if (!(presignParameters as readonly string[]).includes(name)) continue;
    if (values.has(name)) return { error: `${name} is repeated` };
    values.set(name, value);
  }
  const missing = presignParameters.filter((name) => !values.has(name));
  if (missing.length > 0) return { error: `a presigned request needs ${missing.join(", ")}` };
  const value = (name: (typeof presignParameters)[number]) => values.get(name) ?? "";
  const credential = parseCredential(value("X-Amz-Credential"));
  if ("error" in credential) return credential;
  const signedHeaders = parseSignedHeaders(value("X-Amz-SignedHeaders"));
  if ("error" in signedHeaders) return signedHeaders;
  if (!/^[1-9]\d{0,5}$/.test(value("X-Amz-Expires"))) return { error: "X-Amz-Expires is not a positive number of seconds" };
  return {
    algorithm: value("X-Amz-Algorithm"),
    ...credential,
    amzDate: value("X-Amz-Date"),
    signedHeaders,
    signature: value("X-Amz-Signature"),
    expiresSeconds: Number(value("X-Amz-Expires")),
  };
}

/** Which payload hash the canonical request may end in; the body's own hash unless a presigned request has no body. */
function payloadHashes(request: SignedRequest, form: ParsedSignature["form"]): string[] | { error: string } {
  // The service hashes the body it received itself: a signature over any other body cannot match.
  const claimed = header(request, "x-amz-content-sha256");
  // S3 clients declare UNSIGNED-PAYLOAD on requests without a body too: with no body, nothing is left unsigned.
  if (claimed === unsignedPayload && request.convention === "s3" && request.bodySha256 === emptySha256) return [unsignedPayload];
  if (claimed === unsignedPayload) return { error: "UNSIGNED-PAYLOAD is refused: the body must be signed" };
  if (claimed !== undefined && claimed !== request.bodySha256) return { error: "x-amz-content-sha256 does not match the body received" };
  if (claimed !== undefined || form === "header") return [request.bodySha256];
  // Presigners for most services sign the empty body's hash, S3-style ones UNSIGNED-PAYLOAD.
  // Without a body nothing is left unsigned, so either is accepted.
  if (request.bodySha256 === emptySha256) return [emptySha256, unsignedPayload];
  return { error: "a presigned request with a body must sign x-amz-content-sha256" };
}

/**
 * Reads the signature of a request: the header form (Authorization plus X-Amz-Date) or the query
 * form (a presigned URL), never both. Checks its shape, which headers it covers and the body hash;
 * not the key, the scope's values, or the time.
 */
export function parseSignature(request: SignedRequest): ParsedSignature | { error: string } {
  const allPairs = decodeQuery(request.query);
  if (!allPairs) return { error: "the query string has a malformed percent escape" };
  const authorization = header(request, "authorization");
  const presigned = allPairs.some(([name]) => name === "X-Amz-Signature");
  if (authorization !== undefined && presigned) return { error: "the request carries both an Authorization header and X-Amz-Signature" };
  if (authorization === undefined && !presigned) return { error: "the request carries no signature" };
  const form = authorization !== undefined ? "header" : "query";
  const fields = authorization !== undefined ? parseHeaderForm(authorization, header(request, "x-amz-date") ?? "") : parseQueryForm(allPairs);
  if ("error" in fields) return fields;

  if (!/^[0-9a-f]{64}$/.test(fields.signature)) return { error: "the signature is not 64 lower-case hex digits" };
  const signedAtMs = amzDateMillis(fields.amzDate);
  if (signedAtMs === undefined) return { error: "X-Amz-Date is missing or not yyyymmddThhmmssZ" };
  const required = [
    ...(form === "header" ? ["host", "x-amz-date"] : ["host"]),
    ...(header(request, "x-amz-content-sha256") !== undefined ? ["x-amz-content-sha256"] : []),
  ];
  const unsigned = required.filter((name) => !fields.signedHeaders.includes(name));
  if (unsigned.length > 0) return { error: `SignedHeaders must include ${unsigned.join(", ")}` };
  const absent = fields.signedHeaders.filter((name) => header(request, name) === undefined);
  if (absent.length > 0) return { error: `signed header(s) ${absent.join(", ")} not in the request` };
  const hashes = payloadHashes(request, form);
  if ("error" in hashes) return hashes;
  return { ...fields, form, signedAtMs, query: allPairs.filter(([name]) => name !== "X-Amz-Signature"), payloadHashes: hashes };
}

/**
 * The canonical URI: each segment of the path as sent, URI-encoded again. That double encoding
 * is what AWS signers do for every service but S3 (`/a%20b` is signed as `/a%2520b`). The path
 * is not normalised (no dot segments removed, no slashes merged): a signer that normalises signs
 * another path than the one routed, and such a request fails.
 */
export function canonicalUri(path: string, convention?: SignedRequest["convention"]): string {
  if (path === "") return "/";
  // S3 signers sign the path once encoded, as it is sent (an object key is not encoded twice).
  return convention === "s3" ? path : path.split("/").map(uriEncode).join("/");
}

export function canonicalQuery(pairs: Array<[string, string]>): string {
  return pairs
    .map(([name, value]) => [uriEncode(name), uriEncode(value)])
    .sort(([aName, aValue], [bName, bValue]) => (aName < bName ? -1 : aName > bName ? 1 : aValue < bValue ? -1 : aValue > bValue ? 1 : 0))
    .map(([name, value]) => `${name}=${value}`)
    .join("&");
}

export function canonicalRequest(request: SignedRequest, parsed: ParsedSignature, payloadHash: string): string {
  const headers = parsed.signedHeaders.map((name) => `${name}:${(header(request, name) ?? "").trim().replace(/\s+/g, " ")}\n`).join("");
  return [
    request.method.toUpperCase(),
    canonicalUri(request.path, request.convention),
    canonicalQuery(parsed.query),
    headers,
    parsed.signedHeaders.join(";"),
    payloadHash,
  ].join("\n");
}

export function credentialScope(scope: CredentialScope): string {
  return `${scope.date}/${scope.region}/${scope.service}/${scope.terminator}`;
}

export function stringToSign(amzDate: string, scope: CredentialScope, canonical: string): string {
  return [signingAlgorithm, amzDate, credentialScope(scope), sha256Hex(canonical)].join("\n");
}

export function signingKey(secret: string, date: string, region: string, service: string): Buffer {
  return hmac(hmac(hmac(hmac(`AWS4${secret}`, date), region), service), scopeTerminator);
}

/** The signature the holder of `secret` makes for this request with this payload hash (lower-case hex). */
export function expectedSignature(secret: string, request: SignedRequest, parsed: ParsedSignature, payloadHash: string): string {
  const key = signingKey(secret, parsed.scope.date, parsed.scope.region, parsed.scope.service);
  return hmac(key, stringToSign(parsed.amzDate, parsed.scope, canonicalRequest(request, parsed, payloadHash))).toString("hex");
}

/** Equality that takes the same time wherever the strings differ (both are hashed first, so lengths never leak). */
export function constantTimeEqual(a: string, b: string): boolean {
  return timingSafeEqual(createHash("sha256").update(a).digest(), createHash("sha256").update(b).digest());
}

/** Whether the request's signature is one of the expected ones; every candidate is compared in constant time. */
export function signatureMatches(secret: string, request: SignedRequest, parsed: ParsedSignature): boolean {
  const provided = Buffer.from(parsed.signature, "utf8");
  let matched = false;
  for (const payloadHash of parsed.payloadHashes) {
    const expected = Buffer.from(expectedSignature(secret, request, parsed, payloadHash), "utf8");
    // Both are 64 hex digits (parseSignature checked the provided one), so the lengths are equal.
    matched = timingSafeEqual(expected, provided) || matched;
  }
  return matched;
}

export interface SigningOptions {
  method: string;
  /** The full URL; its path and query are signed as they appear in `url.href`. */
  url: string | URL;
  /** Extra headers to send; all of them are signed. */
  headers?: Record<string, string>;
  body?: string | Buffer;
  accessKeyId: string;
  secretKey: string;
  region: string;
  /** `warden` unless given (the AWS test suite uses `service`). */
  service?: string;
  now?: Date;
  /** `header` (default): Authorization and X-Amz-Date headers; `query`: a presigned URL. */
  form?: "header" | "query";
  /** Presigned URLs: seconds of validity; default 300, the service's maximum. */
  expiresSeconds?: number;
  /** Send (and sign) x-amz-content-sha256; always done for a presigned request with a body. */
  contentSha256?: boolean;
}

export interface SignedOutput {
  /** The URL to request (the presigned one in query form). */
  url: string;
  /** Headers to send, lower-case names, host included. */
  headers: Record<string, string>;
}

/** A client-side signer: what `curl --aws-sigv4`, botocore or @smithy/signature-v4 would send. */
export function signRequest(options: SigningOptions): SignedOutput {
  const url = new URL(options.url);
  const body = options.body ?? "";
  const bodySha256 = sha256Hex(body);
  const service = options.service ?? "warden";
  const now = options.now ?? new Date();
  const amzDate = formatAmzDate(now);
  const scope: CredentialScope = { date: amzDate.slice(0, 8), region: options.region, service, terminator: scopeTerminator };
  const form = options.form ?? "header";
  const headers: Record<string, string> = { host: url.host };
  for (const [name, value] of Object.entries(options.headers ?? {})) headers[name.toLowerCase()] = value;
  if (options.contentSha256 || (form === "query" && body.length > 0)) headers["x-amz-content-sha256"] = bodySha256;
  if (form === "header") headers["x-amz-date"] = amzDate;
  const signedHeaders = Object.keys(headers).sort();

  if (form === "query") {
    const presign: Array<[string, string]> = [
      ["X-Amz-Algorithm", signingAlgorithm],
      ["X-Amz-Credential", `${options.accessKeyId}/${credentialScope(scope)}`],
      ["X-Amz-Date", amzDate],
      ["X-Amz-Expires", String(options.expiresSeconds ?? 300)],
      ["X-Amz-SignedHeaders", signedHeaders.join(";")],
    ];
    const extra = presign.map(([name, value]) => `${name}=${uriEncode(value)}`).join("&");
    url.search = url.search.length > 1 ? `${url.search.slice(1)}&${extra}` : extra;
  }
  const request: SignedRequest = { method: options.method, path: url.pathname, query: url.search.slice(1), headers, bodySha256 };
  // WHATWG URLs keep a stray '%' as it is; the service could not decode it either.
  const query = decodeQuery(request.query);
  if (!query) throw new Error(`the query of ${url.href} has a malformed percent escape`);
  const parsed: ParsedSignature = {
    form,
    algorithm: signingAlgorithm,
    accessKeyId: options.accessKeyId,
    scope,
    amzDate,
    signedAtMs: Math.floor(now.getTime() / 1000) * 1000,
    signedHeaders,
    signature: "",
    query,
    payloadHashes: [],
  };
  const signature = expectedSignature(options.secretKey, request, parsed, bodySha256);
  if (form === "query") {
    url.search = `${url.search.slice(1)}&X-Amz-Signature=${signature}`;
    return { url: url.href, headers };
  }
  headers.authorization = `${signingAlgorithm} Credential=${options.accessKeyId}/${credentialScope(scope)}, SignedHeaders=${signedHeaders.join(";")}, Signature=${signature}`;
  return { url: url.href, headers };
}
