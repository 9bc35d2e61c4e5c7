import { randomBytes } from "node:crypto";
import type { JSONWebKeySet, JWTPayload, JWTVerifyOptions } from "jose" with { "resolution-mode": "import" };
import { displayUrl, fetchJson, type FetchJsonOptions } from "../http-fetch";
import { CredentialRejected, SecurityConfigError, VerifierUnavailable, type Credential, type VerifiedIdentity, type Verifier, type VerifierFactory, type VerifierOverrides } from "../types";

/** An `oauth` verifier profile (spec 5.5). */
export interface OauthConfiguration {
  /** Seconds to wait for each exchange with the OAuth service. */
  clientRequestTimeout: number;
  /** RFC 7662 endpoint; when set, every token must also be active there. Empty: JWTs are verified locally only. */
  introspectionUrl: string;
  /** Largest metadata document or JWK set accepted, in bytes; 0 means no limit. */
  maxMetadataSize: number;
  /** The audience tokens must name (required). An export may override it. */
  resourceServerId: string;
  /** The OAuth service's metadata document (RFC 8414 or OpenID Connect discovery). */
  serverMetadataUrl: string;
  allowedSigningAlgorithms: string[];
  verifyOauthServiceCertificate: boolean;
  /**
   * Extension to spec 5.5: the client the verifier authenticates as at `introspectionUrl`
   * (HTTP Basic, RFC 6749 2.3.1); RFC 7662 servers require client authentication.
   */
  introspectionClientId: string;
  introspectionClientSecret: string;
  /** Extension (issue 26): an introspection answer without `aud` is refused (RFC 7662 makes `aud` optional). */
  requireAudience: boolean;
  /**
   * Extension (issue 26): only access tokens pass: a JWT must say `typ: at+jwt` (RFC 9068), an
   * introspection answer `token_type` Bearer. ID tokens and refresh tokens are refused.
   */
  accessTokensOnly: boolean;
  /** Extension (issue 26): seconds after which the metadata document is fetched again (issuer or jwks_uri may change). */
  metadataRefreshInterval: number;
}

type Jose = typeof import("jose", { with: { "resolution-mode": "import" } });
type KeySet = ReturnType<Jose["createLocalJWKSet"]>;

let joseModule: Promise<Jose> | undefined;
/** jose is ESM only; this CommonJS module loads it with a dynamic import, once. */
function jose(): Promise<Jose> {
  return (joseModule ??= import("jose"));
}

/**
 * The asymmetric JWS algorithms jose verifies on Node 20. A JWK set holds public keys, so HS*
 * (which would use a public key as the HMAC secret: the classic confusion attack) and `none` are
 * never allowed.
 */
const asymmetricAlgorithms = ["RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA", "Ed25519"];
const properties = [
  "clientRequestTimeout",
  "introspectionUrl",
  "maxMetadataSize",
  "resourceServerId",
  "serverMetadataUrl",
  "allowedSigningAlgorithms",
  "verifyOauthServiceCertificate",
  "introspectionClientId",
  "introspectionClientSecret",
  "requireAudience",
  "accessTokensOnly",
  "metadataRefreshInterval",
];
/** setTimeout's limit: a longer wait would fire at once. */
const maxTimeoutSeconds = Math.floor((2 ** 31 - 1) / 1000);
const clockToleranceSeconds = 30;
const jwksTtlMs = 10 * 60_000;
/** A token naming an unknown key fetches the JWK set again at most this often: random kids must not flood the server. */
const jwksRefetchIntervalMs = 30_000;
/** Three base64url parts; the last is empty for `alg: none`, which must be refused as a JWT, not sent on as opaque. */
export const jwtShape = /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*$/;
/** RFC 6750 b64token: anything else is not a bearer token and is not sent to the introspection endpoint. */
const bearerTokenShape = /^[A-Za-z0-9\-._~+/]+=*$/;
/** RFC 9068 2.1: the JWT header `typ` of an access token (the media type's short and long forms). */
const accessTokenTypes = new Set(["at+jwt", "application/at+jwt"]);
/**
 * RFC 7662 `token_type` values of an access token presented as a bearer token. `DPoP` is not
 * one: a DPoP-bound token used without its proof would be a stolen one.
 */
const bearerTokenTypes = new Set(["bearer", "access_token"]);

interface ServerMetadata {
  issuer: string;
  jwksUri: string;
}

function describeError(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** A value from the token shown in an audit reason: quoted and short. */
function quote(value: unknown): string {
  const text = JSON.stringify(value) ?? String(value);
  return text.length > 80 ? `${text.slice(0, 77)}...` : text;
}

/** `scope` (space-separated, RFC 8693 / 9068) or `scp` (an array, or a space-separated string). */
function scopesOf(claims: Record<string, unknown>, source: string): string[] {
  const value = claims.scope ?? claims.scp;
  if (value === undefined) return [];
  const list = typeof value === "string" ? value.split(" ") : value;
  if (!Array.isArray(list) || !list.every((scope) => typeof scope === "string")) {
    throw new CredentialRejected(`${source} has a scope claim that is neither a string nor an array of strings`);
  }
  return list.filter((scope) => scope !== "").map((scope) => `scope:${scope}`);
}

class OauthVerifier implements Verifier {
  readonly type = "oauth";
  private readonly algorithms: Set<string>;
  private metadataLoad: Promise<ServerMetadata> | undefined;
  private metadataCache: { value: ServerMetadata; fetchedAt: number } | undefined;
  private keys: { set: KeySet; fetchedAt: number } | undefined;
  private keysLoad: Promise<KeySet> | undefined;
  private lastKeysFetch = Number.NEGATIVE_INFINITY;

  constructor(
    readonly profile: string,
    private readonly configuration: OauthConfiguration,
  ) {
    this.algorithms = new Set(configuration.allowedSigningAlgorithms);
  }

  async verify(credential: Credential, overrides?: VerifierOverrides): Promise<VerifiedIdentity> {
    if (credential.type !== "rawBearerToken") throw new CredentialRejected(`oauth profile '${this.profile}' verifies rawBearerToken credentials, not ${credential.type}`);
    const { token } = credential;
    // An empty override does not switch the profile's audience check off.
    const audience = overrides?.resourceServerId || this.configuration.resourceServerId;
    if (jwtShape.test(token)) return this.verifyJwt(token, audience);

    if (this.configuration.introspectionUrl === "") throw new CredentialRejected("token is not a JWT, and without introspectionUrl an opaque token cannot be checked");
    if (!bearerTokenShape.test(token)) throw new CredentialRejected("token is neither a JWT nor a bearer token (RFC 6750 b64token)");
    const answer = await this.introspection(token);
    this.checkIntrospection(answer, audience);
    const subject = [answer.sub, answer.client_id].find((value) => typeof value === "string" && value !== "");
    if (typeof subject !== "string") throw new CredentialRejected("introspection names neither sub nor client_id for the token");
    return { subject, assertions: scopesOf(answer, "introspection answer"), claims: answer };
  }

  /** The metadata document and the JWK set must load; a configured introspection endpoint must answer a probe. */
  async checkEndpoints(): Promise<void> {
    try {
      await this.loadKeys();
      // A random token: the answer (active false) shows the endpoint works and accepts our client credentials.
      if (this.configuration.introspectionUrl !== "") await this.introspection(randomBytes(24).toString("base64url"));
    } catch (error) {
      throw new Error(`oauth profile '${this.profile}': ${describeError(error)}`, { cause: error });
    }
  }

  /** Nothing pooled: each exchange has its own request. */
  async close(): Promise<void> {}

  private async verifyJwt(token: string, audience: string): Promise<VerifiedIdentity> {
    const { decodeProtectedHeader, jwtVerify } = await jose();
    let header: ReturnType<typeof decodeProtectedHeader>;
    try {
      header = decodeProtectedHeader(token);
    } catch (error) {
      throw new CredentialRejected(`malformed JWT header: ${describeError(error)}`);
    }
    // Checked before any request: a forged algorithm costs the OAuth service nothing.
    if (typeof header.alg !== "string" || !this.algorithms.has(header.alg)) {
      throw new CredentialRejected(`JWT signing algorithm ${quote(header.alg)} is not allowed (allowed: ${this.configuration.allowedSigningAlgorithms.join(", ")})`);
    }
    // An ID token names the client as its audience and is signed by the same keys: only its typ tells it from an access token.
    if (this.configuration.accessTokensOnly && (typeof header.typ !== "string" || !accessTokenTypes.has(header.typ.toLowerCase()))) {
      throw new CredentialRejected(`JWT typ ${quote(header.typ)} is not an access token's (at+jwt, RFC 9068)`);
    }

    const { issuer } = await this.metadata();
    const options: JWTVerifyOptions = {
      algorithms: this.configuration.allowedSigningAlgorithms,
      issuer,
      clockTolerance: clockToleranceSeconds,
      requiredClaims: ["exp"],
      ...(audience === "" ? {} : { audience }),
    };
    const keys = await this.currentKeys();
    let payload: JWTPayload;
    try {
      ({ payload } = await jwtVerify(token, keys, options));
    } catch (error) {
      if ((error as { code?: unknown }).code !== "ERR_JWKS_NO_MATCHING_KEY") throw await this.rejection(error);
      // The service may have rotated its keys since the set was fetched.
      const rotated = await this.rotatedKeys();
      if (!rotated) throw new CredentialRejected(`no key in the JWK set matches the JWT (kid ${quote(header.kid)}); the set was fetched less than ${jwksRefetchIntervalMs / 1000} s ago`);
      try {
        ({ payload } = await jwtVerify(token, rotated, options));
      } catch (retryError) {
        throw await this.rejection(retryError);
      }
    }

    const subject = [payload.sub, payload.client_id].find((value) => typeof value === "string" && value !== "");
    if (typeof subject !== "string") throw new CredentialRejected("JWT names neither sub nor client_id");
    const assertions = scopesOf(payload, "JWT");
    if (this.configuration.introspectionUrl !== "") this.checkIntrospection(await this.introspection(token), audience);
    return { subject, assertions, claims: payload };
  }

  /** jose's verdict on a token as a rejection; anything that is not jose's is our failure, not the token's. */
  private async rejection(error: unknown): Promise<Error> {
    const { errors } = await jose();
    if (error instanceof errors.JOSEError) return new CredentialRejected(`JWT rejected: ${error.message} (${error.code})`);
    return new VerifierUnavailable(`JWT could not be verified: ${describeError(error)}`, { cause: error });
  }

  private fetchOptions(metadata: boolean): FetchJsonOptions {
    return {
      timeoutMs: this.configuration.clientRequestTimeout * 1000,
      maxBytes: metadata ? this.configuration.maxMetadataSize : 0,
      verifyCertificate: this.configuration.verifyOauthServiceCertificate,
    };
  }

  /**
   * The metadata document while it is younger than metadataRefreshInterval, otherwise a fresh
   * one (concurrent callers share one fetch). A failed fetch is not kept: the token is denied as
   * an outage and the next one tries again. Keys of a jwks_uri that changed are dropped.
   */
  private metadata(): Promise<ServerMetadata> {
    const cached = this.metadataCache;
    if (cached && Date.now() - cached.fetchedAt < this.configuration.metadataRefreshInterval * 1000) return Promise.resolve(cached.value);
    this.metadataLoad ??= (async () => {
      const startedAt = Date.now();
      try {
        const value = await this.loadMetadata();
        if (this.metadataCache && this.metadataCache.value.jwksUri !== value.jwksUri) this.keys = undefined;
        this.metadataCache = { value, fetchedAt: startedAt };
        return value;
      } finally {
        this.metadataLoad = undefined;
      }
    })();
    return this.metadataLoad;
  }

  private async loadMetadata(): Promise<ServerMetadata> {
    const url = this.configuration.serverMetadataUrl;
    const document = await fetchJson(url, this.fetchOptions(true));
    const invalid = (message: string) => new VerifierUnavailable(`${displayUrl(url)}: metadata ${message}`);
    const { issuer, jwks_uri: jwksUri } = document;
    if (typeof issuer !== "string" || issuer === "") throw invalid("has no issuer");
    if (typeof jwksUri !== "string" || !isHttpUrl(jwksUri)) throw invalid("has no http(s) jwks_uri");
    // Keys fetched in the clear would undo the protection of fetching the metadata over TLS.
    if (url.startsWith("https:") && !jwksUri.startsWith("https:")) throw invalid(`names jwks_uri ${displayUrl(jwksUri)}, which is not https`);
    return { issuer, jwksUri };
  }

  /** The cached key set while it is younger than its time to live, otherwise a fresh one. */
  private currentKeys(): Promise<KeySet> {
    if (this.keys && Date.now() - this.keys.fetchedAt < jwksTtlMs) return Promise.resolve(this.keys.set);
    return this.loadKeys();
  }

  /** A fresh key set, or undefined when the last fetch was too recent to try again. */
  private async rotatedKeys(): Promise<KeySet | undefined> {
    if (!this.keysLoad && Date.now() - this.lastKeysFetch < jwksRefetchIntervalMs) return undefined;
    return this.loadKeys();
  }

  /** Fetches the JWK set; concurrent callers share one fetch. */
  private loadKeys(): Promise<KeySet> {
    this.keysLoad ??= (async () => {
      const startedAt = Date.now();
      this.lastKeysFetch = startedAt;
      try {
        const { jwksUri } = await this.metadata();
        const document = await fetchJson(jwksUri, this.fetchOptions(true));
        const { createLocalJWKSet } = await jose();
        let set: KeySet;
        try {
          set = createLocalJWKSet(document as unknown as JSONWebKeySet);
        } catch (error) {
          throw new VerifierUnavailable(`${displayUrl(jwksUri)}: not a JWK set: ${describeError(error)}`, { cause: error });
        }
        this.keys = { set, fetchedAt: startedAt };
        return set;
      } finally {
        this.keysLoad = undefined;
      }
    })();
    return this.keysLoad;
  }

  /** The RFC 7662 answer for the token; an answer without a boolean `active` is the service's failure. */
  private async introspection(token: string): Promise<Record<string, unknown>> {
    const { introspectionUrl: url, introspectionClientId: user, introspectionClientSecret: password } = this.configuration;
    const answer = await fetchJson(url, {
      ...this.fetchOptions(false),
      form: { token, token_type_hint: "access_token" },
      ...(user === "" ? {} : { basicAuth: { user, password } }),
    });
    if (typeof answer.active !== "boolean") throw new VerifierUnavailable(`${displayUrl(url)}: introspection answer has no boolean 'active'`);
    return answer;
  }

  private checkIntrospection(answer: Record<string, unknown>, audience: string): void {
    const url = displayUrl(this.configuration.introspectionUrl);
    if (answer.active !== true) throw new CredentialRejected("token is not active (introspection)");
    const now = Date.now() / 1000;
    for (const claim of ["exp", "nbf"] as const) {
      const value = answer[claim];
      if (value !== undefined && typeof value !== "number") throw new VerifierUnavailable(`${url}: introspection answer has a non-numeric '${claim}'`);
    }
    // The same clock tolerance as for JWTs.
    if (typeof answer.exp === "number" && answer.exp + clockToleranceSeconds <= now) throw new CredentialRejected("token expired (introspection exp)");
    if (typeof answer.nbf === "number" && answer.nbf - clockToleranceSeconds > now) throw new CredentialRejected("token not valid yet (introspection nbf)");
    if (this.configuration.accessTokensOnly && (typeof answer.token_type !== "string" || !bearerTokenTypes.has(answer.token_type.toLowerCase()))) {
      throw new CredentialRejected(`introspection token_type ${quote(answer.token_type)} is not a bearer access token's`);
    }
    if (answer.aud === undefined && this.configuration.requireAudience) throw new CredentialRejected("introspection answer names no audience (requireAudience)");
    if (audience === "" || answer.aud === undefined) return;
    const audiences = typeof answer.aud === "string" ? [answer.aud] : answer.aud;
    if (!Array.isArray(audiences)) throw new VerifierUnavailable(`${url}: introspection answer has an 'aud' that is neither a string nor an array`);
    if (!audiences.includes(audience)) throw new CredentialRejected(`token audience ${quote(answer.aud)} does not include ${quote(audience)} (introspection)`);
  }
}

function isHttpUrl(value: string): boolean {
  try {
    const { protocol } = new URL(value);
    return protocol === "http:" || protocol === "https:";
  } catch {
    return false;
  }
}

function parseConfiguration(raw: Record<string, unknown> | undefined, path: string): OauthConfiguration {
  const values = raw ?? {};
  const error = (property: string, message: string) => new SecurityConfigError(`${path}.${property}`, message);
  for (const name of Object.keys(values)) {
    if (!properties.includes(name)) throw error(name, `unknown property; an oauth profile takes ${properties.join(", ")}`);
  }
  const string = (property: string): string => {
    const value = values[property] ?? "";
    if (typeof value !== "string") throw error(property, `must be a string, got ${JSON.stringify(value)}`);
    return value;
  };
  const integer = (property: string, fallback: number, min: number, max: number): number => {
    const value = values[property] ?? fallback;
    if (typeof value !== "number" || !Number.isInteger(value) || value < min || value > max) {
      throw error(property, `must be a whole number from ${min} to ${max}, got ${JSON.stringify(value)}`);
    }
    return value;
  };
  const url = (property: string): string => {
    const value = string(property);
    if (value !== "" && !isHttpUrl(value)) throw error(property, URL.canParse(value) ? `'${displayUrl(value)}' is not an http or https URL` : "is not a URL");
    return value;
  };

  const serverMetadataUrl = url("serverMetadataUrl");
  if (serverMetadataUrl === "") throw error("serverMetadataUrl", "is required: the URL of the OAuth service's metadata document (e.g. https://idp.example/.well-known/openid-configuration)");
  const introspectionUrl = url("introspectionUrl");

  const algorithms = values.allowedSigningAlgorithms ?? asymmetricAlgorithms;
  if (!Array.isArray(algorithms) || algorithms.length === 0 || !algorithms.every((alg) => typeof alg === "string")) {
    throw error("allowedSigningAlgorithms", `must be a non-empty array of algorithm names, got ${JSON.stringify(algorithms)}`);
  }
  for (const alg of algorithms) {
    if (!asymmetricAlgorithms.includes(alg)) {
      const why = alg === "none" ? "unsigned tokens are never accepted" : /^HS/.test(alg) ? "an HMAC key would be the JWK set's public key, which anyone can forge with" : "not an asymmetric JWS algorithm";
      throw error("allowedSigningAlgorithms", `'${alg}' is not allowed (${why}); choose from ${asymmetricAlgorithms.join(", ")}`);
    }
  }

  const boolean = (property: string, fallback: boolean): boolean => {
    const value = values[property] ?? fallback;
    if (typeof value !== "boolean") throw error(property, `must be true or false, got ${JSON.stringify(value)}`);
    return value;
  };
  const verifyOauthServiceCertificate = boolean("verifyOauthServiceCertificate", true);

  const introspectionClientId = string("introspectionClientId");
  const introspectionClientSecret = string("introspectionClientSecret");
  if ((introspectionClientId === "") !== (introspectionClientSecret === "")) {
    throw error(introspectionClientId === "" ? "introspectionClientId" : "introspectionClientSecret", "introspectionClientId and introspectionClientSecret are set together or not at all");
  }
  if (introspectionClientId !== "" && introspectionUrl === "") throw error("introspectionClientId", "only applies with introspectionUrl set");

  // Without an audience any token of the issuer would do, ID tokens and other clients' tokens included.
  const resourceServerId = string("resourceServerId");
  if (resourceServerId === "") throw error("resourceServerId", "is required: tokens must name this service as their audience");

  return {
    clientRequestTimeout: integer("clientRequestTimeout", 60, 1, maxTimeoutSeconds),
    introspectionUrl,
    maxMetadataSize: integer("maxMetadataSize", 0, 0, Number.MAX_SAFE_INTEGER),
    resourceServerId,
    serverMetadataUrl,
    allowedSigningAlgorithms: [...new Set(algorithms as string[])],
    verifyOauthServiceCertificate,
    introspectionClientId,
    introspectionClientSecret,
    requireAudience: boolean("requireAudience", false),
    accessTokensOnly: boolean("accessTokensOnly", true),
    metadataRefreshInterval: integer("metadataRefreshInterval", 3600, 1, maxTimeoutSeconds),
  };
}

export const oauthVerifierFactory: VerifierFactory<OauthConfiguration> = {
  type: "oauth",
  parse: parseConfiguration,
  describe: ({ introspectionClientSecret, serverMetadataUrl, introspectionUrl, ...rest }) => ({
    ...rest,
    serverMetadataUrl: displayUrl(serverMetadataUrl),
    introspectionUrl: introspectionUrl === "" ? "" : displayUrl(introspectionUrl),
    introspectionClientSecret: introspectionClientSecret === "" ? "" : "(set)",
  }),
  create: (profile, configuration) => new OauthVerifier(profile, configuration),
};
