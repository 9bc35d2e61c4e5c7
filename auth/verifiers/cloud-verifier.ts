import { constantTimeEqual, parseSignature, scopeTerminator, signatureMatches, signingAlgorithm } from "../cloud-signature";
import {
  CredentialRejected,
  SecurityConfigError,
  VerifierUnavailable,
  type Credential,
  type ReplayGuard,
  type VerifiedIdentity,
  type Verifier,
  type VerifierFactory,
  type VerifierOverrides,
} from "../types";

/**
 * A `cloud` verifier profile (spec 5.5): the one client allowed (`id`), its secret `key`, and the
 * `region` its signatures must be scoped to. Each may be left out here and set by the export
 * (verify's overrides); a request verified while any is still unset is rejected.
 */
export interface CloudConfiguration {
  id?: string;
  key?: string;
  region?: string;
}

/** The service name of the credential scope: `<yyyymmdd>/<region>/warden/aws4_request`. */
export const signingService = "warden";
/** How far X-Amz-Date may be from the verifier's clock, either way. */
export const maxClockSkewMs = 5 * 60_000;
/** The longest a presigned URL may be valid (X-Amz-Expires). */
export const maxExpiresSeconds = 300;
/** A signature is accepted at most from X-Amz-Date - skew to X-Amz-Date + skew: it is remembered that long. */
export const replayWindowMs = 2 * maxClockSkewMs;

export const cloudProperties = ["id", "key", "region"] as const;
export type CloudProperty = (typeof cloudProperties)[number];

/** Why a property value is not acceptable, or undefined when it is (checked for profiles, and for exports when they are created). */
export function cloudPropertyProblem(property: CloudProperty, value: unknown): string | undefined {
  if (typeof value !== "string") return "must be a string";
  switch (property) {
    case "id":
      // The id is the first field of the credential scope, so it cannot contain '/'.
      return /^[A-Za-z0-9_-]{1,128}$/.test(value) ? undefined : "must be an access key id: 1 to 128 of A-Z a-z 0-9 _ -";
    case "key":
      return value.length > 0 ? undefined : "must not be empty";
    case "region":
      return /^[a-z0-9-]{1,64}$/.test(value) ? undefined : "must be a region name: 1 to 64 of a-z 0-9 -";
  }
}

function parseConfiguration(raw: Record<string, unknown> | undefined, path: string): CloudConfiguration {
  const configuration: CloudConfiguration = {};
  for (const [name, value] of Object.entries(raw ?? {})) {
    if (!(cloudProperties as readonly string[]).includes(name))
      throw new SecurityConfigError(`${path}.${name}`, `unknown property; a cloud profile takes ${cloudProperties.join(", ")}`);
    const problem = cloudPropertyProblem(name as CloudProperty, value);
    if (problem) throw new SecurityConfigError(`${path}.${name}`, problem);
    configuration[name as CloudProperty] = value as string;
  }
  return configuration;
}

export class CloudVerifier implements Verifier {
  readonly type = "cloud";

  constructor(
    readonly profile: string,
    private readonly configuration: CloudConfiguration,
    private readonly replayGuard: ReplayGuard,
    /** Injected for tests: the clock X-Amz-Date is checked against. */
    private readonly now: () => number = Date.now,
  ) {}

  async verify(credential: Credential, overrides: VerifierOverrides = {}): Promise<VerifiedIdentity> {
    if (credential.type !== "cloudSigningCredentials") throw new CredentialRejected(`the cloud verifier does not verify '${credential.type}' credentials`);
    const { id, key, region } = this.resolve(overrides);
    const request = credential.request;
    const parsed = parseSignature(request);
    if ("error" in parsed) throw new CredentialRejected(parsed.error);
    if (parsed.algorithm !== signingAlgorithm) throw new CredentialRejected(`algorithm '${parsed.algorithm}' is not ${signingAlgorithm}`);
    if (!constantTimeEqual(parsed.accessKeyId, id)) throw new CredentialRejected(`access key id '${parsed.accessKeyId}' is not the profile's`);
    const { scope } = parsed;
    if (scope.region !== region) throw new CredentialRejected(`the credential scope's region '${scope.region}' is not '${region}'`);
    const service = request.convention === "s3" ? "s3" : signingService;
    if (scope.service !== service) throw new CredentialRejected(`the credential scope's service '${scope.service}' is not '${service}'`);
    if (scope.terminator !== scopeTerminator) throw new CredentialRejected(`the credential scope does not end in ${scopeTerminator}`);
    if (scope.date !== parsed.amzDate.slice(0, 8)) throw new CredentialRejected(`the credential scope's date ${scope.date} is not X-Amz-Date's`);
    this.checkTime(parsed.amzDate, parsed.signedAtMs, parsed.expiresSeconds);
    if (!signatureMatches(key, request, parsed)) throw new CredentialRejected("the signature does not match");

    // Last, so only genuine signatures are remembered: a flood of forged ones cannot fill the guard.
    let first: boolean;
    try {
      first = await this.replayGuard.firstUse(parsed.signature, replayWindowMs);
    } catch (error) {
      throw new VerifierUnavailable(`the replay guard could not tell whether the signature was seen before: ${(error as Error).message}`, { cause: error });
    }
    if (!first) throw new CredentialRejected("replayed: the signature was used before");
    return { subject: id, assertions: [] };
  }

  async checkEndpoints(): Promise<void> {
    // Signatures are checked locally: there is no endpoint to reach.
  }

  async close(): Promise<void> {}

  /** The profile with the export's overrides applied; every property must end up set and valid. */
  private resolve(overrides: VerifierOverrides): Required<CloudConfiguration> {
    const merged: CloudConfiguration = { ...this.configuration };
    for (const [name, value] of Object.entries(overrides)) {
      if (!(cloudProperties as readonly string[]).includes(name))
        throw new CredentialRejected(`not configured: the export overrides unknown property '${name}'`);
      const problem = cloudPropertyProblem(name as CloudProperty, value);
      if (problem) throw new CredentialRejected(`not configured: the export's ${name} ${problem}`);
      merged[name as CloudProperty] = value;
    }
    const { id, key, region } = merged;
    if (id === undefined || key === undefined || region === undefined) {
      throw new CredentialRejected(
        `not configured: profile '${this.profile}' has no ${cloudProperties.filter((name) => merged[name] === undefined).join(", ")}`,
      );
    }
    return { id, key, region };
  }

  private checkTime(amzDate: string, signedAt: number, expiresSeconds: number | undefined): void {
    const now = this.now();
    if (signedAt - now > maxClockSkewMs) throw new CredentialRejected(`X-Amz-Date ${amzDate} is more than 5 minutes ahead`);
    if (expiresSeconds !== undefined && expiresSeconds > maxExpiresSeconds)
      throw new CredentialRejected(`X-Amz-Expires ${expiresSeconds} is above ${maxExpiresSeconds}`);
    const validUntil = signedAt + (expiresSeconds !== undefined ? expiresSeconds * 1000 : maxClockSkewMs);
    if (now > validUntil)
      throw new CredentialRejected(expiresSeconds !== undefined ? "the presigned URL has expired" : `X-Amz-Date ${amzDate} is more than 5 minutes old`);
  }
}

export const cloudVerifierFactory: VerifierFactory<CloudConfiguration> = {
  type: "cloud",
  parse: parseConfiguration,
  describe: (configuration) => ({ ...configuration, ...(configuration.key !== undefined ? { key: "(set)" } : {}) }),
  create: (profile, configuration, dependencies) => new CloudVerifier(profile, configuration, dependencies.replayGuard),
};
