import type { SignedRequest } from "./types";

export interface RawRequest {
  method: string;
  /** The request target as received (`/export?id=x`), not decoded. */
  url: string;
  /**
   * Node's request headers. Prefer `headersDistinct`: `headers` joins repeated headers with ", "
   * (and drops repeats of some), where signers join them with ",".
   */
  headers: Readonly<Record<string, string | string[] | undefined>>;
  /** SHA-256 of the body bytes received, lower-case hex. */
  bodySha256: string;
  /** How the door's clients sign (SignedRequest.convention). */
  convention?: "s3";
}

/** What a cloud-signing verifier needs from an HTTP request, taken as received. */
export function signedRequestFrom(raw: RawRequest): SignedRequest {
  const question = raw.url.indexOf("?");
  // No prototype: a header named __proto__ is stored like any other.
  const headers: Record<string, string> = Object.create(null);
  for (const [name, value] of Object.entries(raw.headers)) {
    if (value !== undefined) headers[name.toLowerCase()] = Array.isArray(value) ? value.join(",") : value;
  }
  return {
    method: raw.method,
    path: question < 0 ? raw.url : raw.url.slice(0, question),
    query: question < 0 ? "" : raw.url.slice(question + 1),
    headers,
    bodySha256: raw.bodySha256,
    ...(raw.convention ? { convention: raw.convention } : {}),
  };
}
