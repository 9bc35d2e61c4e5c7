import { spawn, type ChildProcess } from "node:child_process";
import { join } from "node:path";
import type { JWK, JWTPayload, JWTHeaderParameters } from "jose" with { "resolution-mode": "import" };
import { freePort } from "../../testkit/ports";

const fixture = join(__dirname, "..", "..", "..", "test", "fixtures", "oidc", "provider.mjs");
const startTimeoutMs = 20_000;
const client: ClientCredentials = { id: "warden-client", secret: "client-secret" };
/** The secret needs form-encoding in HTTP Basic (RFC 6749 2.3.1). */
const introspectionClient: ClientCredentials = { id: "warden-rs", secret: "rs secret/with+special:chars" };

/** jose is ESM only: loaded with a dynamic import from this CommonJS module. */
const jose = () => import("jose");

export interface ClientCredentials {
  id: string;
  secret: string;
}

export interface OidcProviderOptions {
  /** Default: a free port. Give the old port to restart "the same" service with another key. */
  port?: number;
  /** Default: a fresh RS256 key. */
  privateJwk?: JWK;
}

/** A private signing JWK with `kid`, `alg` and `use`, as the provider and `sign` take it. */
export async function signingKey(kid: string, alg = "RS256"): Promise<JWK> {
  const { generateKeyPair, exportJWK } = await jose();
  const { privateKey } = await generateKeyPair(alg, { extractable: true });
  return { ...(await exportJWK(privateKey)), kid, alg, use: "sig" };
}

/** The public half of a private JWK. */
export function publicJwk(jwk: JWK): JWK {
  const { d: _d, p: _p, q: _q, dp: _dp, dq: _dq, qi: _qi, ...rest } = jwk;
  return rest;
}

/**
 * A real OpenID provider (oidc-provider, test/fixtures/oidc/provider.mjs) in a child process:
 * client_credentials tokens as JWTs for `resource` or as opaque tokens, introspection and revocation.
 */
export class OidcProvider {
  static readonly resource = "urn:warden:api";
  static readonly scope = "read write";
  /** The client that obtains tokens. */
  readonly client = client;
  /** The resource server's client, for introspection. */
  readonly introspectionClient = introspectionClient;
  readonly issuer: string;
  readonly metadataUrl: string;
  private readonly exited: Promise<void>;
  private endpoints: { token: string; introspection: string; revocation: string } | undefined;

  private constructor(
    readonly port: number,
    readonly privateJwk: JWK,
    private readonly child: ChildProcess,
    readonly output: string[],
  ) {
    this.issuer = `http://127.0.0.1:${port}`;
    this.metadataUrl = `${this.issuer}/.well-known/openid-configuration`;
    this.exited = new Promise((resolve) => child.once("exit", () => resolve()));
  }

  static async start(options: OidcProviderOptions = {}): Promise<OidcProvider> {
    const port = options.port ?? (await freePort());
    const privateJwk = options.privateJwk ?? (await signingKey(`key-${Date.now()}`));
    const provider = new OidcProvider(port, privateJwk, spawnFixture(port, privateJwk), []);
    const child = provider.child;
    try {
      await new Promise<void>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`OpenID provider not ready within ${startTimeoutMs} ms:\n${provider.output.join("\n")}`)), startTimeoutMs);
        const keep = (chunk: Buffer) => {
          const lines = chunk.toString("utf8").split("\n").filter(Boolean);
          provider.output.push(...lines);
          if (lines.some((line) => line.startsWith("ready "))) {
            clearTimeout(timer);
            resolve();
          }
        };
        child.stdout!.on("data", keep);
        child.stderr!.on("data", keep);
        child.once("exit", (code) => {
          clearTimeout(timer);
          reject(new Error(`OpenID provider exited with ${code} before it was ready:\n${provider.output.join("\n")}`));
        });
      });
      const metadata = (await (await fetch(provider.metadataUrl)).json()) as Record<string, string>;
      provider.endpoints = { token: metadata.token_endpoint!, introspection: metadata.introspection_endpoint!, revocation: metadata.revocation_endpoint! };
    } catch (error) {
      await provider.stop(); // a leaked child keeps the test run alive
      throw error;
    }
    return provider;
  }

  get introspectionUrl(): string {
    return this.endpoints!.introspection;
  }

  /** A client_credentials token for `resource`: a JWT signed with `privateJwk`. */
  jwtToken(scope = OidcProvider.scope): Promise<string> {
    return this.token({ scope, resource: OidcProvider.resource });
  }

  /** A client_credentials token without a resource: opaque, checkable only by introspection. */
  opaqueToken(scope = OidcProvider.scope): Promise<string> {
    return this.token({ scope });
  }

  async revoke(token: string): Promise<void> {
    const response = await fetch(this.endpoints!.revocation, { method: "POST", body: this.clientForm({ token, token_type_hint: "access_token" }) });
    if (response.status !== 200) throw new Error(`revocation answered ${response.status}: ${await response.text()}`);
  }

  /**
   * A JWT signed as the provider signs access tokens, unless `header` or `key` say otherwise.
   * Default claims: this issuer, the resource as audience, the client as subject, scope "read",
   * valid for five minutes; a claim given as undefined is left out.
   */
  async sign(claims: JWTPayload = {}, header: Partial<JWTHeaderParameters> = {}, key: JWK | Uint8Array = this.privateJwk): Promise<string> {
    const { SignJWT, importJWK } = await jose();
    const now = Math.floor(Date.now() / 1000);
    const payload: JWTPayload = { iss: this.issuer, aud: OidcProvider.resource, sub: this.client.id, client_id: this.client.id, scope: "read", iat: now, exp: now + 300, ...claims };
    for (const name of Object.keys(payload)) if (payload[name] === undefined) delete payload[name];
    const signingKey = key instanceof Uint8Array ? key : await importJWK(key, (header.alg ?? key.alg)!);
    return new SignJWT(payload).setProtectedHeader({ alg: this.privateJwk.alg!, kid: this.privateJwk.kid, typ: "at+jwt", ...header }).sign(signingKey);
  }

  async stop(): Promise<void> {
    if (this.child.exitCode === null && this.child.signalCode === null) this.child.kill("SIGTERM");
    await this.exited;
  }

  private async token(parameters: Record<string, string>): Promise<string> {
    // client_secret_post here; the verifier introspects with client_secret_basic.
    const response = await fetch(this.endpoints!.token, { method: "POST", body: this.clientForm({ grant_type: "client_credentials", ...parameters }) });
    const body = (await response.json()) as { access_token?: string };
    if (response.status !== 200 || !body.access_token) throw new Error(`token endpoint answered ${response.status}: ${JSON.stringify(body)}`);
    return body.access_token;
  }

  private clientForm(parameters: Record<string, string>): URLSearchParams {
    return new URLSearchParams({ client_id: this.client.id, client_secret: this.client.secret, ...parameters });
  }
}

function spawnFixture(port: number, privateJwk: JWK): ChildProcess {
  const config = {
    port,
    privateJwk,
    client,
    introspectionClient,
    resource: OidcProvider.resource,
    scope: OidcProvider.scope,
  };
  return spawn(process.execPath, [fixture], { env: { ...process.env, OIDC_PROVIDER_CONFIG: JSON.stringify(config) }, stdio: ["ignore", "pipe", "pipe"] });
}
