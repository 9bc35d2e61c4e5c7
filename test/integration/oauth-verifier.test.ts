import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { createPublicKey } from "node:crypto";
import { readFileSync } from "node:fs";
import { createServer as createHttpServer, type IncomingMessage, type ServerResponse } from "node:http";
import { createServer as createHttpsServer } from "node:https";
import { createServer, type Server, type Socket } from "node:net";
import { join } from "node:path";
import type { JWK } from "jose" with { "resolution-mode": "import" };
import { CredentialRejected, SecurityConfigError, VerifierUnavailable, type Credential, type Verifier, type VerifierOverrides } from "../../auth/types";
import { oauthVerifierFactory } from "../../auth/verifiers/oauth-verifier";
import { OidcProvider, publicJwk, signingKey } from "../helpers/oidc";
import { freePort } from "../../testkit/ports";
import { tempDir } from "../../testkit/temp";

const path = "verifiers[1].profiles[0].configuration";
const dependencies = { replayGuard: { firstUse: async () => true } };
const bearer = (token: string): Credential => ({ type: "rawBearerToken", token });
const now = () => Math.floor(Date.now() / 1000);

function verifierFor(idp: OidcProvider, properties: Record<string, unknown> = {}): Verifier {
  const configuration = oauthVerifierFactory.parse({ serverMetadataUrl: idp.metadataUrl, resourceServerId: OidcProvider.resource, clientRequestTimeout: 5, ...properties }, path);
  return oauthVerifierFactory.create("test", configuration, dependencies);
}

function introspectingVerifierFor(idp: OidcProvider, properties: Record<string, unknown> = {}): Verifier {
  return verifierFor(idp, {
    introspectionUrl: idp.introspectionUrl,
    introspectionClientId: idp.introspectionClient.id,
    introspectionClientSecret: idp.introspectionClient.secret,
    ...properties,
  });
}

/** Who a verified token names and what it asserts (the claims, kept for authorization rules, are checked where they matter). */
function named(identity: { subject: string; assertions: string[] }): { subject: string; assertions: string[] } {
  return { subject: identity.subject, assertions: identity.assertions };
}

/** Rejected as a bad credential, for `reason`, without the token in the message. */
async function refused(verifier: Verifier, token: string, reason: RegExp, overrides?: VerifierOverrides): Promise<void> {
  await assert.rejects(verifier.verify(bearer(token), overrides), (error: unknown) => {
    assert.ok(error instanceof CredentialRejected, `expected CredentialRejected, got ${String(error)}`);
    assert.match(error.reason, reason);
    if (token.length > 8) assert.ok(!error.message.includes(token), "the token must not appear in the reason");
    return true;
  });
}

/** Could not decide (fail closed), with `message` naming what failed. */
async function unavailable(promise: Promise<unknown>, message: RegExp): Promise<void> {
  await assert.rejects(promise, (error: unknown) => {
    assert.ok(error instanceof VerifierUnavailable, `expected VerifierUnavailable, got ${String(error)}`);
    assert.match(error.message, message);
    return true;
  });
}

describe("oauth verifier against a real OpenID provider", () => {
  let idp: OidcProvider;

  before(async () => {
    idp = await OidcProvider.start();
  });

  after(async () => {
    await idp?.stop();
  });

  test("a JWT access token from the provider passes; its scopes are the assertions", async () => {
    const verifier = verifierFor(idp);
    assert.deepEqual(named(await verifier.verify(bearer(await idp.jwtToken("read write")))), { subject: idp.client.id, assertions: ["scope:read", "scope:write"] });
    assert.deepEqual(named(await verifier.verify(bearer(await idp.jwtToken("read")))), { subject: idp.client.id, assertions: ["scope:read"] });
    // A crafted token signed with the provider's key passes too: the refusals below are about one thing each.
    assert.deepEqual(named(await verifier.verify(bearer(await idp.sign({ scope: undefined, scp: ["admin"] })))), { subject: idp.client.id, assertions: ["scope:admin"] });
  });

  test("expiry and not-before are enforced with a 30 s clock tolerance; exp is required", async () => {
    const verifier = verifierFor(idp);
    await refused(verifier, await idp.sign({ iat: now() - 600, exp: now() - 60 }), /"exp" claim timestamp check failed/);
    assert.equal((await verifier.verify(bearer(await idp.sign({ iat: now() - 600, exp: now() - 10 })))).subject, idp.client.id);
    await refused(verifier, await idp.sign({ nbf: now() + 120 }), /"nbf" claim timestamp check failed/);
    assert.equal((await verifier.verify(bearer(await idp.sign({ nbf: now() + 10 })))).subject, idp.client.id);
    await refused(verifier, await idp.sign({ exp: undefined }), /missing required "exp" claim/);
  });

  test("a wrong audience or issuer is refused", async () => {
    const verifier = verifierFor(idp);
    await refused(verifier, await idp.sign({ aud: "urn:other:api" }), /"aud" claim/);
    await refused(verifier, await idp.sign({ iss: "http://127.0.0.1:1" }), /"iss" claim/);
    await refused(verifier, await idp.sign({ aud: undefined }), /"aud" claim/);
  });

  test("alg none and HS256 keyed with the provider's public key are refused", async () => {
    const { UnsecuredJWT } = await import("jose");
    const verifier = verifierFor(idp);
    const claims = { iss: idp.issuer, aud: OidcProvider.resource, sub: "mallory", exp: now() + 300 };
    await refused(verifier, new UnsecuredJWT(claims).encode(), /algorithm "none" is not allowed/);

    // The classic confusion: the verifier's public key (as JWK JSON or as PEM) used as the HMAC secret.
    const publicKey = publicJwk(idp.privateJwk);
    const pem = createPublicKey({ key: publicKey, format: "jwk" }).export({ type: "spki", format: "pem" });
    for (const secret of [JSON.stringify(publicKey), pem.toString()]) {
      const token = await idp.sign({ sub: "mallory" }, { alg: "HS256" }, new TextEncoder().encode(secret));
      await refused(verifier, token, /algorithm "HS256" is not allowed/);
    }
  });

  test("a token signed by another key is refused, whether its kid is unknown or borrowed", async () => {
    const verifier = verifierFor(idp);
    const intruder = await signingKey("intruder");
    await refused(verifier, await idp.sign({}, { kid: "intruder" }, intruder), /no key in the JWK set matches the JWT \(kid "intruder"\)/);
    await refused(verifier, await idp.sign({}, { kid: idp.privateJwk.kid }, intruder), /signature verification failed/);
  });

  test("garbage and opaque tokens are refused without introspection", async () => {
    const verifier = verifierFor(idp);
    await refused(verifier, "garbage", /not a JWT/);
    await refused(verifier, "", /not a JWT/);
    await refused(verifier, "abc.def.ghi", /malformed JWT header/);
    const opaque = await idp.opaqueToken();
    await refused(verifier, opaque, /without introspectionUrl an opaque token cannot be checked/);
    await refused(verifier, "not a bearer token", /not a JWT/);
    await assert.rejects(verifier.verify({ type: "namepwd", user: "u", password: "p" }), CredentialRejected);
  });

  test("with introspection: a live opaque token passes, a revoked or unknown one is refused", async () => {
    const verifier = introspectingVerifierFor(idp);
    const live = await idp.opaqueToken("write");
    const revoked = await idp.opaqueToken();
    assert.deepEqual(named(await verifier.verify(bearer(live))), { subject: idp.client.id, assertions: ["scope:write"] });
    assert.deepEqual(named(await verifier.verify(bearer(revoked))), { subject: idp.client.id, assertions: ["scope:read", "scope:write"] });
    await idp.revoke(revoked);
    await refused(verifier, revoked, /not active/);
    assert.equal((await verifier.verify(bearer(live))).subject, idp.client.id);
    await refused(verifier, "made-up-opaque-token", /not active/);
    await refused(verifier, "not a bearer token", /neither a JWT nor a bearer token/);
  });

  test("access tokens only (RFC 9068 typ): the provider's at+jwt passes; an ID-token-shaped JWT (typ JWT, or none) is refused unless accessTokensOnly is false", async () => {
    const verifier = verifierFor(idp);
    const idToken = await idp.sign({ sub: "mallory" }, { typ: "JWT" });
    const untyped = await idp.sign({ sub: "mallory" }, { typ: undefined });
    await refused(verifier, idToken, /JWT typ "JWT" is not an access token's/);
    await refused(verifier, untyped, /JWT typ undefined is not an access token's/);
    assert.equal((await verifier.verify(bearer(await idp.sign({}, { typ: "application/AT+JWT" })))).subject, idp.client.id);
    const lenient = verifierFor(idp, { accessTokensOnly: false });
    assert.equal((await lenient.verify(bearer(idToken))).subject, "mallory");
    assert.equal((await lenient.verify(bearer(await idp.jwtToken()))).subject, idp.client.id);
  });

  test("requireAudience: the provider introspects an opaque token without aud; refused when an audience is required", async () => {
    const opaque = await idp.opaqueToken("read");
    assert.equal((await introspectingVerifierFor(idp).verify(bearer(opaque))).subject, idp.client.id, "aud is optional in RFC 7662 by default");
    await refused(introspectingVerifierFor(idp, { requireAudience: true }), opaque, /names no audience \(requireAudience\)/);
  });

  test("with introspection: oidc-provider refuses to introspect JWTs, so the verifier fails closed", async () => {
    // oidc-provider answers 400 unsupported_token_type for structured tokens; a JWT must then be denied as an outage.
    await unavailable(introspectingVerifierFor(idp).verify(bearer(await idp.jwtToken())), /token\/introspection: answered HTTP 400 \(unsupported_token_type\)/);
  });

  test("wrong introspection client credentials are an outage, not a verdict on the token", async () => {
    const verifier = introspectingVerifierFor(idp, { introspectionClientSecret: "wrong" });
    await unavailable(verifier.verify(bearer(await idp.opaqueToken())), /answered HTTP 401 \(invalid_client\)/);
    await assert.rejects(verifier.checkEndpoints(), /oauth profile 'test': .*token\/introspection: answered HTTP 401/);
  });

  test("an export's resourceServerId overrides the profile's audience", async () => {
    const token = await idp.jwtToken();
    const elsewhere = verifierFor(idp, { resourceServerId: "urn:other:api" });
    await refused(elsewhere, token, /"aud" claim/);
    assert.equal((await elsewhere.verify(bearer(token), { resourceServerId: OidcProvider.resource })).subject, idp.client.id);
    await refused(verifierFor(idp), token, /"aud" claim/, { resourceServerId: "urn:other:api" });
    // An empty override does not switch the check off.
    await refused(elsewhere, token, /"aud" claim/, { resourceServerId: "" });
  });

  test("maxMetadataSize smaller than the metadata document: unavailable", async () => {
    const verifier = verifierFor(idp, { maxMetadataSize: 100 });
    await unavailable(verifier.verify(bearer(await idp.jwtToken())), /openid-configuration: answer .*larger than the limit of 100/);
    await assert.rejects(verifier.checkEndpoints(), /openid-configuration: answer .*larger than the limit of 100/);
    assert.equal((await verifierFor(idp, { maxMetadataSize: 100_000 }).verify(bearer(await idp.jwtToken()))).subject, idp.client.id);
  });

  test("checkEndpoints passes against the live provider, with and without introspection", async () => {
    await verifierFor(idp).checkEndpoints();
    await introspectingVerifierFor(idp).checkEndpoints();
  });

  test("a service that accepts connections but never answers times out: unavailable", async () => {
    const sockets: Socket[] = [];
    const silent: Server = createServer((socket) => sockets.push(socket));
    const port = await freePort();
    await new Promise<void>((resolve) => silent.listen(port, "127.0.0.1", resolve));
    try {
      const verifier = oauthVerifierFactory.create("test", oauthVerifierFactory.parse({ resourceServerId: "urn:test", serverMetadataUrl: `http://127.0.0.1:${port}/.well-known/openid-configuration`, clientRequestTimeout: 1 }, path), dependencies);
      const started = Date.now();
      await unavailable(verifier.verify(bearer(await idp.jwtToken())), /127\.0\.0\.1:\d+\/\.well-known\/openid-configuration: no complete answer within 1000 ms/);
      assert.ok(Date.now() - started < 3000);
    } finally {
      for (const socket of sockets) socket.destroy();
      await new Promise((resolve) => silent.close(resolve));
    }
  });

  test("provider down and key rotation: cached keys still verify, fresh verifiers fail closed, a new kid is fetched", async (t) => {
    const first = await OidcProvider.start();
    let second: OidcProvider | undefined;
    try {
      const verifier = verifierFor(first);
      const oldToken = await first.jwtToken("read");
      assert.deepEqual(named(await verifier.verify(bearer(oldToken))), { subject: first.client.id, assertions: ["scope:read"] });

      await first.stop();
      assert.equal((await verifier.verify(bearer(oldToken))).subject, first.client.id, "metadata and keys are cached");
      const metadataUrl = new RegExp(`127\\.0\\.0\\.1:${first.port}/\\.well-known/openid-configuration: request failed: .*ECONNREFUSED`);
      await unavailable(verifierFor(first).verify(bearer(oldToken)), metadataUrl);
      await assert.rejects(verifierFor(first).checkEndpoints(), metadataUrl);

      second = await OidcProvider.start({ port: first.port, privateJwk: await signingKey("rotated") });
      const newToken = await second.jwtToken("write");
      // The set was fetched moments ago: an unknown kid does not make the verifier ask again yet.
      await refused(verifier, newToken, /kid "rotated".*less than 30 s ago/);
      t.mock.timers.enable({ apis: ["Date"], now: Date.now() + 31_000 });
      assert.deepEqual(named(await verifier.verify(bearer(newToken))), { subject: second.client.id, assertions: ["scope:write"] });
      // The old key left the set with the rotation.
      await refused(verifier, oldToken, /no key in the JWK set matches/);
    } finally {
      await first.stop();
      await second?.stop();
    }
  });
});

type Handler = (request: IncomingMessage, response: ServerResponse, body: string) => void;
const json = (value: unknown): Handler => (_request, response) => {
  response.setHeader("content-type", "application/json");
  response.end(JSON.stringify(value));
};

describe("oauth verifier against a hand-made OAuth service: what the OpenID provider never does", () => {
  const routes = new Map<string, Handler>();
  type HttpServer = Server & { closeAllConnections(): void };
  const servers: HttpServer[] = [];
  let key: JWK;
  let http: string;
  let https: string;

  /** Listens on a free loopback port; every request is answered from `routes` by path. */
  async function listen(create: (handler: (request: IncomingMessage, response: ServerResponse) => void) => HttpServer, scheme: string): Promise<string> {
    const server = create((request, response) => {
      let body = "";
      request.on("data", (chunk: Buffer) => (body += chunk.toString("utf8")));
      request.on("end", () => {
        const handler = routes.get(`${scheme}${request.url}`);
        if (handler) return handler(request, response, body);
        response.statusCode = 404;
        response.end();
      });
    });
    const port = await freePort();
    await new Promise<void>((resolve) => server.listen(port, "127.0.0.1", resolve));
    servers.push(server);
    return `${scheme}://127.0.0.1:${port}`;
  }

  /** A verifier whose metadata is served at `${base}${metadataPath}`, naming `base` as issuer. */
  function verifierAt(base: string, metadataPath: string, metadata: Record<string, unknown>, properties: Record<string, unknown> = {}): Verifier {
    const scheme = base.slice(0, base.indexOf(":"));
    routes.set(`${scheme}${metadataPath}`, json({ issuer: base, ...metadata }));
    const configuration = oauthVerifierFactory.parse({ serverMetadataUrl: `${base}${metadataPath}`, resourceServerId: "urn:fake", clientRequestTimeout: 5, ...properties }, path);
    return oauthVerifierFactory.create("fake", configuration, dependencies);
  }

  async function tokenFrom(base: string, claims: Record<string, unknown> = {}): Promise<string> {
    const { SignJWT, importJWK } = await import("jose");
    return new SignJWT({ iss: base, aud: "urn:fake", sub: "svc", exp: now() + 300, ...claims }).setProtectedHeader({ alg: "RS256", kid: key.kid, typ: "at+jwt" }).sign(await importJWK(key, "RS256"));
  }

  before(async () => {
    const dir = tempDir("oauth-tls");
    const keyFile = join(dir, "key.pem");
    const certFile = join(dir, "cert.pem");
    const made = spawnSync("openssl", ["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", keyFile, "-out", certFile, "-days", "2", "-subj", "/CN=warden-oauth", "-addext", "subjectAltName=IP:127.0.0.1"], { encoding: "utf8" });
    assert.equal(made.status, 0, made.stderr);
    key = await signingKey("fake-key");
    http = await listen((handler) => createHttpServer(handler), "http");
    https = await listen((handler) => createHttpsServer({ key: readFileSync(keyFile), cert: readFileSync(certFile) }, handler), "https");
    for (const base of [http, https]) routes.set(`${base.slice(0, base.indexOf(":"))}/jwks`, json({ keys: [publicJwk(key)] }));
  });

  after(async () => {
    for (const server of servers) {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });

  test("https: a self-signed certificate is refused unless verifyOauthServiceCertificate is false", async () => {
    const metadata = { jwks_uri: `${https}/jwks` };
    await unavailable(verifierAt(https, "/tls-metadata", metadata).verify(bearer(await tokenFrom(https))), /https:\/\/127\.0\.0\.1:\d+\/tls-metadata: request failed: self-signed certificate/);
    const trusting = verifierAt(https, "/tls-metadata", metadata, { verifyOauthServiceCertificate: false });
    assert.deepEqual(named(await trusting.verify(bearer(await tokenFrom(https, { scope: "a b" })))), { subject: "svc", assertions: ["scope:a", "scope:b"] });
  });

  test("https metadata naming keys over plain http: unavailable", async () => {
    const verifier = verifierAt(https, "/downgrade", { jwks_uri: `${http}/jwks` }, { verifyOauthServiceCertificate: false });
    await unavailable(verifier.verify(bearer(await tokenFrom(https))), /metadata names jwks_uri http:\/\/127\.0\.0\.1:\d+\/jwks, which is not https/);
  });

  test("an endless answer is cut off at maxMetadataSize, not read until the timeout", async () => {
    routes.set("http/endless", (_request, response) => {
      response.setHeader("content-type", "application/json");
      response.write('{"issuer":"');
      const timer = setInterval(() => response.write("x".repeat(1024)), 5);
      response.on("close", () => clearInterval(timer));
    });
    const configuration = oauthVerifierFactory.parse({ resourceServerId: "urn:test", serverMetadataUrl: `${http}/endless`, maxMetadataSize: 16_384, clientRequestTimeout: 30 }, path);
    const started = Date.now();
    await unavailable(oauthVerifierFactory.create("fake", configuration, dependencies).verify(bearer(await tokenFrom(http))), /endless: answer is larger than the limit of 16384 bytes/);
    assert.ok(Date.now() - started < 5000);
  });

  test("malformed answers are an outage: not JSON, not an object, an error status, no jwks_uri, not a JWK set", async () => {
    routes.set("http/html", (_request, response) => response.end("<html>hello</html>"));
    routes.set("http/array", json([]));
    routes.set("http/broken", (_request, response) => {
      response.statusCode = 500;
      response.end();
    });
    routes.set("http/no-keys", json({ keys: "none" }));
    for (const [metadataPath, message] of [["/html", /html: answer is not JSON/], ["/array", /array: answer is not a JSON object/], ["/broken", /broken: answered HTTP 500/]] as const) {
      const configuration = oauthVerifierFactory.parse({ resourceServerId: "urn:test", serverMetadataUrl: `${http}${metadataPath}` }, path);
      await unavailable(oauthVerifierFactory.create("fake", configuration, dependencies).verify(bearer(await tokenFrom(http))), message);
    }
    await unavailable(verifierAt(http, "/no-jwks-uri", {}).verify(bearer(await tokenFrom(http))), /metadata has no http\(s\) jwks_uri/);
    await unavailable(verifierAt(http, "/bad-jwks", { jwks_uri: `${http}/no-keys` }).verify(bearer(await tokenFrom(http))), /no-keys: not a JWK set/);
  });

  test("introspection answers: active is required, aud and exp are checked, the client authenticates with HTTP Basic", async () => {
    let answer: Record<string, unknown> = {};
    let seen: { authorization?: string; body: string } | undefined;
    routes.set("http/introspect", (request, response, body) => {
      seen = { authorization: request.headers.authorization, body };
      json(answer)(request, response, body);
    });
    const verifier = verifierAt(http, "/introspected-metadata", { jwks_uri: `${http}/jwks` }, { introspectionUrl: `${http}/introspect`, introspectionClientId: "rs", introspectionClientSecret: "a b:c" });
    const token = "opaque-token-value";

    answer = { active: true, token_type: "Bearer", client_id: "svc", scope: "read", aud: ["urn:fake", "urn:other"], exp: now() + 60 };
    assert.deepEqual(named(await verifier.verify(bearer(token))), { subject: "svc", assertions: ["scope:read"] });
    assert.equal(seen?.body, `token=${token}&token_type_hint=access_token`);
    assert.equal(seen?.authorization, `Basic ${Buffer.from("rs:a+b%3Ac").toString("base64")}`);

    answer = { active: "yes" };
    await unavailable(verifier.verify(bearer(token)), /introspect: introspection answer has no boolean 'active'/);
    answer = { active: true, token_type: "Bearer", sub: "svc", aud: "urn:other" };
    await refused(verifier, token, /audience "urn:other" does not include "urn:fake"/);
    answer = { active: true, token_type: "Bearer", sub: "svc", exp: now() - 60 };
    await refused(verifier, token, /expired/);
    answer = { active: true, token_type: "Bearer", scope: "read" };
    await refused(verifier, token, /neither sub nor client_id/);
    // Access tokens only: a refresh token (no token_type in oidc-provider), another type, or a DPoP-bound token used as a bearer token.
    for (const tokenType of [undefined, "refresh_token", "DPoP", 7]) {
      answer = { active: true, sub: "svc", ...(tokenType === undefined ? {} : { token_type: tokenType }) };
      await refused(verifier, token, /token_type .* is not a bearer access token's/);
    }
    answer = { active: true, token_type: "access_token", sub: "svc" };
    assert.equal((await verifier.verify(bearer(token))).subject, "svc");
    answer = { active: false };
    await refused(verifier, token, /not active/);
    // A valid JWT must be active at the introspection endpoint too.
    await refused(verifier, await tokenFrom(http), /not active/);
    answer = { active: true, token_type: "bearer" };
    assert.equal((await verifier.verify(bearer(await tokenFrom(http)))).subject, "svc");
  });

  test("the metadata document is fetched again after metadataRefreshInterval: a new issuer and jwks_uri take effect", async () => {
    const next = await signingKey("next-key");
    routes.set("http/next-jwks", json({ keys: [publicJwk(next)] }));
    const verifier = verifierAt(http, "/refreshed-metadata", { jwks_uri: `${http}/jwks` }, { metadataRefreshInterval: 1 });
    assert.equal((await verifier.verify(bearer(await tokenFrom(http)))).subject, "svc");
    routes.set("http/refreshed-metadata", json({ issuer: `${http}/v2`, jwks_uri: `${http}/next-jwks` }));
    const { SignJWT, importJWK } = await import("jose");
    const nextToken = await new SignJWT({ iss: `${http}/v2`, aud: "urn:fake", sub: "svc-v2", exp: now() + 300 })
      .setProtectedHeader({ alg: "RS256", kid: next.kid, typ: "at+jwt" })
      .sign(await importJWK(next, "RS256"));
    await refused(verifier, nextToken, /no key in the JWK set matches/, undefined);
    await new Promise((resolve) => setTimeout(resolve, 1100));
    assert.equal((await verifier.verify(bearer(nextToken))).subject, "svc-v2", "the new issuer and keys, read from the refreshed document");
    await refused(verifier, await tokenFrom(http), /"iss" claim|no key in the JWK set/);
    routes.delete("http/refreshed-metadata");
    await new Promise((resolve) => setTimeout(resolve, 1100));
    await unavailable(verifier.verify(bearer(nextToken)), /refreshed-metadata: answered HTTP 404/);
  });
});

describe("oauth profile configuration", () => {
  const metadata = "https://idp.example/.well-known/openid-configuration";
  const parse = (raw: Record<string, unknown> | undefined) => oauthVerifierFactory.parse(raw, path);
  function configError(raw: Record<string, unknown> | undefined, property: string, message: RegExp): void {
    assert.throws(
      () => parse(raw),
      (error: unknown) => {
        assert.ok(error instanceof SecurityConfigError, `expected SecurityConfigError, got ${String(error)}`);
        assert.equal(error.path, `${path}.${property}`);
        assert.match(error.message, message);
        return true;
      },
    );
  }

  test("defaults", () => {
    assert.deepEqual(parse({ resourceServerId: "urn:test", serverMetadataUrl: metadata }), {
      clientRequestTimeout: 60,
      introspectionUrl: "",
      maxMetadataSize: 0,
      resourceServerId: "urn:test",
      serverMetadataUrl: metadata,
      allowedSigningAlgorithms: ["RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA", "Ed25519"],
      verifyOauthServiceCertificate: true,
      introspectionClientId: "",
      introspectionClientSecret: "",
      requireAudience: false,
      accessTokensOnly: true,
      metadataRefreshInterval: 3600,
    });
  });

  test("signing algorithms: none, HS* and unknown names are errors", () => {
    configError({ resourceServerId: "urn:test", serverMetadataUrl: metadata, allowedSigningAlgorithms: ["RS256", "none"] }, "allowedSigningAlgorithms", /'none' is not allowed \(unsigned tokens/);
    configError({ resourceServerId: "urn:test", serverMetadataUrl: metadata, allowedSigningAlgorithms: ["HS256"] }, "allowedSigningAlgorithms", /'HS256' is not allowed \(an HMAC key/);
    configError({ resourceServerId: "urn:test", serverMetadataUrl: metadata, allowedSigningAlgorithms: ["RS1"] }, "allowedSigningAlgorithms", /'RS1' is not allowed/);
    configError({ resourceServerId: "urn:test", serverMetadataUrl: metadata, allowedSigningAlgorithms: [] }, "allowedSigningAlgorithms", /non-empty array/);
    configError({ resourceServerId: "urn:test", serverMetadataUrl: metadata, allowedSigningAlgorithms: "RS256" }, "allowedSigningAlgorithms", /non-empty array/);
    assert.deepEqual(parse({ resourceServerId: "urn:test", serverMetadataUrl: metadata, allowedSigningAlgorithms: ["ES256", "ES256"] }).allowedSigningAlgorithms, ["ES256"]);
  });

  test("unknown properties, URLs and types", () => {
    configError({ resourceServerId: "urn:test", serverMetadataUrl: metadata, jwksUrl: "https://idp.example/jwks" }, "jwksUrl", /unknown property/);
    configError(undefined, "serverMetadataUrl", /is required/);
    configError({ resourceServerId: "urn:test", serverMetadataUrl: "ftp://idp.example/metadata" }, "serverMetadataUrl", /is not an http or https URL/);
    configError({ resourceServerId: "urn:test", serverMetadataUrl: "idp.example" }, "serverMetadataUrl", /: is not a URL/);
    configError({ resourceServerId: "urn:test", serverMetadataUrl: "https://user:hunter2@idp.example/metadata", introspectionUrl: "ftp://user:hunter2@idp.example/" }, "introspectionUrl", /^(?!.*hunter2).*'ftp:\/\/\*\*\*@idp\.example\/' is not an http or https URL/);
    configError({ resourceServerId: "urn:test", serverMetadataUrl: metadata, introspectionUrl: "file:///etc/passwd" }, "introspectionUrl", /is not an http or https URL/);
    configError({ resourceServerId: "urn:test", serverMetadataUrl: metadata, clientRequestTimeout: "60" }, "clientRequestTimeout", /whole number/);
    configError({ resourceServerId: "urn:test", serverMetadataUrl: metadata, clientRequestTimeout: 0 }, "clientRequestTimeout", /whole number from 1/);
    configError({ resourceServerId: "urn:test", serverMetadataUrl: metadata, maxMetadataSize: 1.5 }, "maxMetadataSize", /whole number/);
    configError({ resourceServerId: "urn:test", serverMetadataUrl: metadata, verifyOauthServiceCertificate: "yes" }, "verifyOauthServiceCertificate", /true or false/);
    configError({ resourceServerId: "urn:test", serverMetadataUrl: metadata, requireAudience: 1 }, "requireAudience", /true or false/);
    configError({ resourceServerId: "urn:test", serverMetadataUrl: metadata, accessTokensOnly: "no" }, "accessTokensOnly", /true or false/);
    configError({ resourceServerId: "urn:test", serverMetadataUrl: metadata, metadataRefreshInterval: 0 }, "metadataRefreshInterval", /whole number from 1/);
    configError({ serverMetadataUrl: metadata, resourceServerId: 7 }, "resourceServerId", /must be a string/);
    configError({ serverMetadataUrl: metadata }, "resourceServerId", /is required/);
  });

  test("introspection client credentials: set together, with introspectionUrl; describe hides the secret", () => {
    const introspectionUrl = "https://idp.example/token/introspection";
    configError({ resourceServerId: "urn:test", serverMetadataUrl: metadata, introspectionUrl, introspectionClientSecret: "s" }, "introspectionClientId", /set together/);
    configError({ resourceServerId: "urn:test", serverMetadataUrl: metadata, introspectionClientId: "rs", introspectionClientSecret: "s" }, "introspectionClientId", /only applies with introspectionUrl/);
    const configuration = parse({ resourceServerId: "urn:test", serverMetadataUrl: metadata, introspectionUrl, introspectionClientId: "rs", introspectionClientSecret: "s3cret" });
    const described = oauthVerifierFactory.describe(configuration);
    assert.equal(described.introspectionClientSecret, "(set)");
    assert.equal(described.introspectionClientId, "rs");
    assert.ok(!JSON.stringify(described).includes("s3cret"));
  });
});
