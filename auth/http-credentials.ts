import type { Credential } from "./types";

/** What an HTTP request offers to authenticate with, read from its Authorization header (or a presigned query). */
export type OfferedCredential =
  | { kind: "none" }
  /** Complete: Basic or Bearer. */
  | { kind: "credential"; credential: Credential }
  /** A cloud signature: it covers the body, so it is verified once the body has been read. */
  | { kind: "signature" }
  /** A scheme no verifier type takes, or a header that is not well-formed for its scheme. */
  | { kind: "malformed" | "unsupported"; scheme: string };

const token68 = /^[A-Za-z0-9\-._~+/]+=*$/;
const base64 = /^[A-Za-z0-9+/]+={0,2}$/;

/** Schemes are case-insensitive (RFC 9110 11.1). */
export function offeredCredential(authorization: string | undefined, query: string): OfferedCredential {
  if (authorization === undefined || authorization === "") {
    return /(^|&)X-Amz-Algorithm=/i.test(query) ? { kind: "signature" } : { kind: "none" };
  }
  const space = authorization.indexOf(" ");
  const scheme = space < 0 ? authorization : authorization.slice(0, space);
  const rest = space < 0 ? "" : authorization.slice(space + 1).trim();
  switch (scheme.toLowerCase()) {
    case "basic": {
      if (!base64.test(rest) || rest.length % 4 !== 0) return { kind: "malformed", scheme: "Basic" };
      const decoded = Buffer.from(rest, "base64").toString("utf8");
      const colon = decoded.indexOf(":");
      if (colon < 0) return { kind: "malformed", scheme: "Basic" };
      return { kind: "credential", credential: { type: "namepwd", user: decoded.slice(0, colon), password: decoded.slice(colon + 1) } };
    }
    case "bearer":
      if (!token68.test(rest)) return { kind: "malformed", scheme: "Bearer" };
      return { kind: "credential", credential: { type: "rawBearerToken", token: rest } };
    case "aws4-hmac-sha256":
      return { kind: "signature" };
    default:
      return { kind: "unsupported", scheme: scheme.slice(0, 32) };
  }
}

/** The WWW-Authenticate challenges for the credential types a component takes (RFC 9110 11.6.1). */
export function challenges(types: readonly Credential["type"][], realm: string): string[] {
  const quoted = `"${realm.replace(/["\\]/g, "")}"`;
  return types.map((type) => {
    switch (type) {
      case "namepwd":
        return `Basic realm=${quoted}, charset="UTF-8"`;
      case "rawBearerToken":
        return `Bearer realm=${quoted}`;
      case "cloudSigningCredentials":
        return `AWS4-HMAC-SHA256 realm=${quoted}`;
    }
  });
}
