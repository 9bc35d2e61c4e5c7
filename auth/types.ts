/** Credential types of spec 5.4. */
export type CredentialType = "namepwd" | "rawBearerToken" | "cloudSigningCredentials";
export const credentialTypes: readonly CredentialType[] = ["namepwd", "rawBearerToken", "cloudSigningCredentials"];

/** Verifier types of spec 5.5, and the credential type each verifies. */
export type VerifierType = "ldap" | "oauth" | "cloud";
export const verifierCredential: Record<VerifierType, CredentialType> = { ldap: "namepwd", oauth: "rawBearerToken", cloud: "cloudSigningCredentials" };

/** A component as the selectors of spec 5.3 see it. */
export interface Component {
  name: ComponentName;
  type: "api" | "export";
  /** The DNS name the client asked for (HTTP Host or TLS SNI), when known. */
  domainName?: string;
}
export type ComponentName =
  | "config"
  | "decision"
  | "export"
  | "fhir"
  | "mapping"
  | "mongodb"
  | "mysql"
  | "pipeline"
  | "postgres"
  | "objectstore"
  | "redact"
  | "user";

/** A request as signed by a cloud-signing client: everything the signature covers. */
export interface SignedRequest {
  method: string;
  /** The path as sent, percent-encoded, without the query string. */
  path: string;
  /** The raw query string (without '?'), as sent. */
  query: string;
  /** Header names in lower case; repeated headers joined with ','. */
  headers: Record<string, string>;
  /** SHA-256 of the body, lower-case hex, computed by the service over the bytes received. */
  bodySha256: string;
  /**
   * `s3`: signed as S3 clients sign (object-storage exports): credential scope service `s3`, the
   * path signed as sent (not encoded again), and UNSIGNED-PAYLOAD taken for a request without a
   * body. Absent: the `warden` scheme of docs/cloud-signing.md.
   */
  convention?: "s3";
}

export type Credential =
  | { type: "namepwd"; user: string; password: string }
  | { type: "rawBearerToken"; token: string }
  | { type: "cloudSigningCredentials"; request: SignedRequest };

/** Who a verifier says the client is. */
export interface VerifiedIdentity {
  /** The user name, token subject or signing key id. */
  subject: string;
  /** Assertions the credential carries (OAuth scopes as `scope:<name>`, LDAP groups as `group:<name>`); none for cloud. */
  assertions: string[];
  /** OAuth: the token's claims (JWT payload or introspection answer), for authorization rules that name a claim. */
  claims?: Readonly<Record<string, unknown>>;
}

/** Profile properties an export may override at verification (spec 5.5: oauth's resourceServerId; every cloud property). */
export type VerifierOverrides = Record<string, string>;

/** An export's overrides, by the verifier type they apply to: only the verifier chosen for a credential sees its own. */
export type OverridesByVerifier = Partial<Record<VerifierType, VerifierOverrides>>;

/** One configured verifier profile, ready to verify credentials of its type. */
export interface Verifier {
  readonly type: VerifierType;
  readonly profile: string;
  /**
   * Resolves with the identity, or rejects with a `CredentialRejected` (the credential is wrong:
   * 401) or a `VerifierUnavailable` (the verifier could not decide: the request is denied too,
   * fail closed, but audited as an outage).
   */
  verify(credential: Credential, overrides?: VerifierOverrides): Promise<VerifiedIdentity>;
  /** Startup check of spec 5.2: named endpoints must answer. Rejects with a message naming the endpoint. */
  checkEndpoints(): Promise<void>;
  close(): Promise<void>;
}

/** The credential is not valid. `reason` is for the audit log only; clients never see it. */
export class CredentialRejected extends Error {
  readonly retryable = false;
  constructor(
    readonly reason: string,
    options?: { cause?: unknown },
  ) {
    super(reason, options);
  }
}

/** The verifier could not reach its service or read its answer; the request is denied. */
export class VerifierUnavailable extends Error {
  readonly retryable = true;
  constructor(
    readonly reason: string,
    options?: { cause?: unknown },
  ) {
    super(reason, options);
  }
}

/** An error in the security configuration file; `path` names the offending entry (e.g. `verifiers[1].profiles[0].profile`). */
export class SecurityConfigError extends Error {
  constructor(
    readonly path: string,
    message: string,
  ) {
    super(`${path}: ${message}`);
  }
}

/** Remembers what was seen in a window, cluster-wide: the cloud verifier refuses a signature seen before. */
export interface ReplayGuard {
  /** True the first time `key` is offered within `windowMs`; false for every later offer. Rejects when it cannot tell. */
  firstUse(key: string, windowMs: number): Promise<boolean>;
}

export interface VerifierDependencies {
  replayGuard: ReplayGuard;
}

/** How one verifier type reads its profile configuration and makes verifiers. */
export interface VerifierFactory<Configuration> {
  readonly type: VerifierType;
  /** Checks a profile's `configuration` (absent or empty: all defaults); throws `SecurityConfigError` naming `path.<property>`. */
  parse(raw: Record<string, unknown> | undefined, path: string): Configuration;
  /** The configuration as the startup audit record shows it: secrets replaced by "(set)". */
  describe(configuration: Configuration): Record<string, unknown>;
  create(profile: string, configuration: Configuration, dependencies: VerifierDependencies): Verifier;
}
