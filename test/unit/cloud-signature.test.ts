import { test } from "node:test";
import assert from "node:assert/strict";
import {
  canonicalQuery,
  canonicalRequest,
  canonicalUri,
  credentialScope,
  emptySha256,
  expectedSignature,
  parseSignature,
  sha256Hex,
  signatureMatches,
  signingAlgorithm,
  signRequest,
  stringToSign,
  unsignedPayload,
  type ParsedSignature,
  type SigningOptions,
} from "../../auth/cloud-signature";
import { signedRequestFrom } from "../../auth/signed-request";
import { CloudVerifier, cloudVerifierFactory, type CloudConfiguration } from "../../auth/verifiers/cloud-verifier";
import { CredentialRejected, SecurityConfigError, VerifierUnavailable, type Credential, type ReplayGuard, type SignedRequest } from "../../auth/types";
import { MemoryReplayGuard } from "../helpers/memory-replay-guard";

// AWS's published SigV4 test suite (aws-sig-v4-test-suite): its credentials, time and scope.
const suite = {
  accessKeyId: "AKIDEXAMPLE",
  secretKey: "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY",
  region: "us-east-1",
  service: "service",
  now: new Date("2015-08-30T12:36:00Z"),
};
const suiteScope = "AKIDEXAMPLE/20150830/us-east-1/service/aws4_request";

function suiteRequest(
  method: string,
  query: string,
  headers: Record<string, string>,
  signature: string,
  signedHeaders = "host;x-amz-date",
  body = "",
): SignedRequest {
  return {
    method,
    path: "/",
    query,
    headers: {
      host: "example.amazonaws.com",
      "x-amz-date": "20150830T123600Z",
      ...headers,
      authorization: `AWS4-HMAC-SHA256 Credential=${suiteScope}, SignedHeaders=${signedHeaders}, Signature=${signature}`,
    },
    bodySha256: sha256Hex(body),
  };
}

function parsed(request: SignedRequest): ParsedSignature {
  const result = parseSignature(request);
  if ("error" in result) assert.fail(result.error);
  return result;
}

test("get-vanilla: canonical request, string to sign and signature of the AWS test suite", () => {
  const request = suiteRequest("GET", "", {}, "5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31");
  const signature = parsed(request);
  const canonical = canonicalRequest(request, signature, emptySha256);
  assert.equal(canonical, `GET\n/\n\nhost:example.amazonaws.com\nx-amz-date:20150830T123600Z\n\nhost;x-amz-date\n${emptySha256}`);
  assert.equal(
    stringToSign(signature.amzDate, signature.scope, canonical),
    "AWS4-HMAC-SHA256\n20150830T123600Z\n20150830/us-east-1/service/aws4_request\nbb579772317eb040ac9ed261061d46c1f17a8133879d6129b6e1c25292927e63",
  );
  assert.equal(expectedSignature(suite.secretKey, request, signature, emptySha256), "5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31");
  assert.equal(signatureMatches(suite.secretKey, request, signature), true);
  assert.equal(signatureMatches("another key", request, signature), false);
  const signed = signRequest({ ...suite, method: "GET", url: "https://example.amazonaws.com/" });
  assert.equal(signed.headers.authorization, request.headers.authorization);
});

test("get-vanilla-query-order-key-case: query parameters are sorted by name", () => {
  const request = suiteRequest("GET", "Param2=value2&Param1=value1", {}, "b97d918cfa904a5beff61c982a1b6f458b799221646efd99d3219ec94cdf2500");
  const signature = parsed(request);
  const canonical = canonicalRequest(request, signature, emptySha256);
  assert.equal(canonical, `GET\n/\nParam1=value1&Param2=value2\nhost:example.amazonaws.com\nx-amz-date:20150830T123600Z\n\nhost;x-amz-date\n${emptySha256}`);
  assert.equal(sha256Hex(canonical), "816cd5b414d056048ba4f7c5386d6e0533120fb1fcfa93762cf0fc39e2cf19e0");
  assert.equal(signatureMatches(suite.secretKey, request, signature), true);
  const signed = signRequest({ ...suite, method: "GET", url: "https://example.amazonaws.com/?Param2=value2&Param1=value1" });
  assert.equal(signed.headers.authorization, request.headers.authorization);
});

test("post-vanilla and post-x-www-form-urlencoded: the body's hash ends the canonical request", () => {
  const vanilla = suiteRequest("POST", "", {}, "5da7c1a2acd57cee7505fc6676e4e544621c30862966e37dddb68e92efbe5d6b");
  assert.equal(signatureMatches(suite.secretKey, vanilla, parsed(vanilla)), true);

  const form = suiteRequest(
    "POST",
    "",
    { "content-type": "application/x-www-form-urlencoded" },
    "ff11897932ad3f4e8b18135d722051e5ac45fc38421b1da7b9d196a0fe09473a",
    "content-type;host;x-amz-date",
    "Param1=value1",
  );
  const signature = parsed(form);
  assert.equal(form.bodySha256, "9095672bbd1f56dfc5b65f3e153adc8731a4a654192329106275f4c7b24d0b6e");
  assert.deepEqual(signature.payloadHashes, [form.bodySha256]);
  assert.equal(
    stringToSign(signature.amzDate, signature.scope, canonicalRequest(form, signature, form.bodySha256)),
    "AWS4-HMAC-SHA256\n20150830T123600Z\n20150830/us-east-1/service/aws4_request\n42a5e5bb34198acb3e84da4f085bb7927f2bc277ca766e6d19c73c2154021281",
  );
  assert.equal(signatureMatches(suite.secretKey, form, signature), true);
  const signed = signRequest({
    ...suite,
    method: "POST",
    url: "https://example.amazonaws.com/",
    headers: { "Content-Type": "application/x-www-form-urlencoded" },
    body: "Param1=value1",
  });
  assert.equal(signed.headers.authorization, form.headers.authorization);
});

test("AWS's presigned-URL example (S3, UNSIGNED-PAYLOAD) verifies in query form", () => {
  const request: SignedRequest = {
    method: "GET",
    path: "/test.txt",
    query:
      "X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIAIOSFODNN7EXAMPLE%2F20130524%2Fus-east-1%2Fs3%2Faws4_request&X-Amz-Date=20130524T000000Z&X-Amz-Expires=86400&X-Amz-SignedHeaders=host&X-Amz-Signature=aeeed9bbccd4d02ee5c0109b86d86835f995330da4c265957d157751f604d404",
    headers: { host: "examplebucket.s3.amazonaws.com" },
    bodySha256: emptySha256,
  };
  const signature = parsed(request);
  assert.equal(signature.form, "query");
  assert.equal(signature.expiresSeconds, 86400);
  assert.equal(signature.accessKeyId, "AKIAIOSFODNN7EXAMPLE");
  assert.deepEqual(signature.payloadHashes, [emptySha256, unsignedPayload]);
  assert.equal(
    canonicalRequest(request, signature, unsignedPayload),
    "GET\n/test.txt\nX-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIAIOSFODNN7EXAMPLE%2F20130524%2Fus-east-1%2Fs3%2Faws4_request&X-Amz-Date=20130524T000000Z&X-Amz-Expires=86400&X-Amz-SignedHeaders=host\nhost:examplebucket.s3.amazonaws.com\n\nhost\nUNSIGNED-PAYLOAD",
  );
  assert.equal(
    expectedSignature("wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", request, signature, unsignedPayload),
    "aeeed9bbccd4d02ee5c0109b86d86835f995330da4c265957d157751f604d404",
  );
  assert.equal(signatureMatches("wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", request, signature), true);
});

test("canonical URI and query: path segments encoded again, query decoded then encoded, sorted by name then value", () => {
  assert.equal(canonicalUri(""), "/");
  assert.equal(canonicalUri("/redact/record"), "/redact/record");
  // get-utf8 of the test suite: a raw path is encoded once.
  assert.equal(canonicalUri("/\u1234"), "/%E1%88%B4");
  // What is sent percent-encoded is encoded a second time, as AWS signers do for non-S3 services.
  assert.equal(canonicalUri("/export/my%20table"), "/export/my%2520table");
  assert.equal(
    canonicalQuery([
      ["b", "x y"],
      ["a", "2"],
      ["a", "1"],
      ["c", "*'!()"],
      ["~-._", ""],
    ]),
    "a=1&a=2&b=x%20y&c=%2A%27%21%28%29&~-._=",
  );
  assert.equal(
    credentialScope({ date: "20150830", region: "us-east-1", service: "service", terminator: "aws4_request" }),
    "20150830/us-east-1/service/aws4_request",
  );
});

test("parseSignature refuses malformed and ambiguous signatures", () => {
  const good = suiteRequest("GET", "", {}, "5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31");
  const cases: Array<[string, Partial<SignedRequest>, RegExp]> = [
    ["no signature", { headers: { host: "h", "x-amz-date": "20150830T123600Z" } }, /no signature/],
    ["both forms", { query: "X-Amz-Signature=00" }, /both/],
    ["bad escape", { query: "a=%zz" }, /percent escape/],
    [
      "short signature",
      { headers: { ...good.headers, authorization: good.headers.authorization.replace(/Signature=\w+/, "Signature=abc") } },
      /64 lower-case hex/,
    ],
    [
      "unsorted SignedHeaders",
      { headers: { ...good.headers, authorization: good.headers.authorization.replace("host;x-amz-date", "x-amz-date;host") } },
      /sorted/,
    ],
    ["no date", { headers: { host: "h", authorization: good.headers.authorization } }, /X-Amz-Date/],
    ["impossible date", { headers: { ...good.headers, "x-amz-date": "20150231T123600Z" } }, /X-Amz-Date/],
    ["short credential", { headers: { ...good.headers, authorization: good.headers.authorization.replace("/service/", "/") } }, /credential/],
    ["repeated component", { headers: { ...good.headers, authorization: `${good.headers.authorization}, Signature=00` } }, /repeated/],
    [
      "inherited header name",
      { headers: { ...good.headers, authorization: good.headers.authorization.replace("host;x-amz-date", "constructor;host;x-amz-date") } },
      /constructor not in the request/,
    ],
    ["missing presign parameter", { headers: { host: "h" }, query: "X-Amz-Signature=00&X-Amz-Date=20150830T123600Z" }, /needs X-Amz-Algorithm/],
  ];
  for (const [name, change, error] of cases) {
    const result = parseSignature({ ...good, ...change });
    assert.ok("error" in result, name);
    assert.match(result.error, error, name);
  }
});

test("signedRequestFrom takes the request as received: raw path and query, lower-case names, repeats joined with ','", () => {
  const headers: Record<string, string | string[] | undefined> = JSON.parse('{"__proto__":"odd","Host":"h:1","X-Multi":["a","b c"]}');
  headers["x-absent"] = undefined;
  const request = signedRequestFrom({ method: "GET", url: "/export/my%20table?b=2&a=%2F", headers, bodySha256: emptySha256 });
  assert.equal(request.path, "/export/my%20table");
  assert.equal(request.query, "b=2&a=%2F");
  assert.deepEqual(Object.entries(request.headers), [
    ["__proto__", "odd"],
    ["host", "h:1"],
    ["x-multi", "a,b c"],
  ]);
  assert.equal(signedRequestFrom({ method: "GET", url: "/", headers: {}, bodySha256: emptySha256 }).query, "");
});

// ---- the verifier ----

const now = Date.UTC(2026, 0, 15, 12, 0, 0);
const profile: Required<CloudConfiguration> = { id: "AKIDWARDEN01", key: "warden-secret-key", region: "eu-west-1" };

function verifierWith(configuration: CloudConfiguration = profile, clock = () => now, guard: ReplayGuard = new MemoryReplayGuard(clock)): CloudVerifier {
  return new CloudVerifier("dev", configuration, guard, clock);
}

/** A request as the service would receive it after `signRequest` signed it (optionally delivered with another body). */
function signed(options: Partial<SigningOptions> = {}, deliveredBody?: string): Credential {
  const body = options.body ?? "";
  const out = signRequest({
    method: "GET",
    url: "https://warden.example:8890/redact/record",
    accessKeyId: profile.id,
    secretKey: profile.key,
    region: profile.region,
    now: new Date(now),
    ...options,
  });
  const url = new URL(out.url);
  return {
    type: "cloudSigningCredentials",
    request: signedRequestFrom({
      method: options.method ?? "GET",
      url: url.pathname + url.search,
      headers: out.headers,
      bodySha256: sha256Hex(deliveredBody ?? body),
    }),
  };
}

/** A genuinely signed header-form request whose SignedHeaders and payload hash the test chooses. */
function signedByHand(headers: Record<string, string>, signedHeaders: string[], payloadHash: string, body: string): Credential {
  const amzDate = "20260115T120000Z";
  const request: SignedRequest = {
    method: "POST",
    path: "/redact/record",
    query: "",
    headers: { host: "warden.example", "x-amz-date": amzDate, ...headers },
    bodySha256: sha256Hex(body),
  };
  const scope = { date: "20260115", region: profile.region, service: "warden", terminator: "aws4_request" };
  const draft: ParsedSignature = {
    form: "header",
    algorithm: signingAlgorithm,
    accessKeyId: profile.id,
    scope,
    amzDate,
    signedAtMs: now,
    signedHeaders,
    signature: "",
    query: [],
    payloadHashes: [],
  };
  const signature = expectedSignature(profile.key, request, draft, payloadHash);
  request.headers.authorization = `${signingAlgorithm} Credential=${profile.id}/${credentialScope(scope)}, SignedHeaders=${signedHeaders.join(";")}, Signature=${signature}`;
  return { type: "cloudSigningCredentials", request };
}

async function rejected(verifier: CloudVerifier, credential: Credential, reason: RegExp, overrides?: Record<string, string>): Promise<void> {
  await assert.rejects(verifier.verify(credential, overrides), (error: unknown) => {
    assert.ok(error instanceof CredentialRejected, `expected CredentialRejected, got ${String(error)}`);
    assert.match(error.reason, reason);
    return true;
  });
}

test("a correctly signed request passes; the subject is the key id and there are no assertions", async () => {
  const verifier = verifierWith();
  assert.deepEqual(await verifier.verify(signed()), { subject: profile.id, assertions: [] });
  const post = signed({
    method: "POST",
    url: "https://warden.example/redact/record?mode=strict&a=1",
    headers: { "content-type": "application/json" },
    body: '{"name":"Ada"}',
  });
  assert.deepEqual(await verifier.verify(post), { subject: profile.id, assertions: [] });
  const withHash = signed({ method: "POST", body: '{"name":"Bob"}', contentSha256: true });
  assert.equal((await verifier.verify(withHash)).subject, profile.id);
  await verifier.checkEndpoints();
});

test("wrong key, region, id or service, and a skew beyond 5 minutes either way, are rejected", async () => {
  const verifier = verifierWith();
  await rejected(verifier, signed({ secretKey: "not-the-key" }), /signature does not match/);
  await rejected(verifier, signed({ region: "us-east-1" }), /region 'us-east-1'/);
  await rejected(verifier, signed({ accessKeyId: "AKIDSOMEONEELSE" }), /access key id/);
  await rejected(verifier, signed({ service: "s3" }), /service 's3'/);
  await rejected(verifier, signed({ now: new Date(now + 5 * 60_000 + 1000) }), /ahead/);
  await rejected(verifier, signed({ now: new Date(now - 5 * 60_000 - 1000) }), /old/);
  // Just inside the window, both ways.
  assert.equal((await verifier.verify(signed({ now: new Date(now + 5 * 60_000) }))).subject, profile.id);
  assert.equal((await verifier.verify(signed({ now: new Date(now - 5 * 60_000) }))).subject, profile.id);
});

test("a signature is accepted once: the same request again is a replay", async () => {
  const verifier = verifierWith();
  const credential = signed({ method: "POST", body: "{}" });
  await verifier.verify(credential);
  await rejected(verifier, credential, /replayed/);
});

test("a tampered body, a changed signed header, or an unsigned required header is rejected", async () => {
  const verifier = verifierWith();
  await rejected(verifier, signed({ method: "POST", body: '{"amount":1}' }, '{"amount":1000}'), /signature does not match/);
  await rejected(verifier, signed({ method: "POST", body: '{"amount":1}', contentSha256: true }, '{"amount":1000}'), /x-amz-content-sha256 does not match/);
  const changed = signed({ method: "POST", headers: { "content-type": "application/json" }, body: "{}" });
  if (changed.type !== "cloudSigningCredentials") assert.fail();
  changed.request.headers["content-type"] = "text/plain";
  await rejected(verifier, changed, /signature does not match/);
  // Correctly signed, but the signature does not cover the host.
  await rejected(verifier, signedByHand({}, ["x-amz-date"], sha256Hex("{}"), "{}"), /must include host/);
  // x-amz-content-sha256 sent but left out of the signature.
  await rejected(
    verifier,
    signedByHand({ "x-amz-content-sha256": sha256Hex("{}") }, ["host", "x-amz-date"], sha256Hex("{}"), "{}"),
    /must include x-amz-content-sha256/,
  );
});

test("UNSIGNED-PAYLOAD is refused; a presigned URL passes only without a body or with a signed body hash", async () => {
  const verifier = verifierWith();
  await rejected(
    verifier,
    signedByHand({ "x-amz-content-sha256": unsignedPayload }, ["host", "x-amz-content-sha256", "x-amz-date"], unsignedPayload, '{"a":1}'),
    /UNSIGNED-PAYLOAD is refused/,
  );
  assert.equal((await verifier.verify(signed({ form: "query", url: "https://warden.example/export?id=x" }))).subject, profile.id);
  assert.equal((await verifier.verify(signed({ form: "query", method: "POST", body: '{"a":1}' }))).subject, profile.id);
  const noHash = signed({ form: "query", method: "POST" }, '{"a":1}');
  await rejected(verifier, noHash, /presigned request with a body/);
  await rejected(verifier, signed({ form: "query", expiresSeconds: 600 }), /X-Amz-Expires 600/);
  await rejected(verifier, signed({ form: "query", expiresSeconds: 60, now: new Date(now - 61_000) }), /expired/);
});

test("id, key and region may come from the export's overrides; unset ones reject every request", async () => {
  const partial = verifierWith({ id: profile.id, region: profile.region });
  await rejected(partial, signed(), /not configured: profile 'dev' has no key/);
  assert.equal((await partial.verify(signed({ url: "https://warden.example/a" }), { key: profile.key })).subject, profile.id);
  const elsewhere = signed({ region: "us-east-1", url: "https://warden.example/b" });
  await rejected(verifierWith(), elsewhere, /region/);
  assert.equal((await verifierWith().verify(elsewhere, { region: "us-east-1" })).subject, profile.id);
  await rejected(verifierWith(), signed(), /unknown property 'hostname'/, { hostname: "x" });
  await rejected(verifierWith(), signed(), /region must be a region name/, { region: "EU WEST" });
});

test("other credential types are rejected; a failing replay guard makes the verifier unavailable", async () => {
  await rejected(verifierWith(), { type: "rawBearerToken", token: "t" }, /does not verify 'rawBearerToken'/);
  const broken: ReplayGuard = { firstUse: () => Promise.reject(new Error("no responders")) };
  await assert.rejects(
    verifierWith(profile, () => now, broken).verify(signed()),
    (error: unknown) => error instanceof VerifierUnavailable && /no responders/.test(error.reason),
  );
  // A forged signature is rejected before the guard is asked.
  assert.equal(
    (await verifierWith(profile, () => now, broken)
      .verify(signed({ secretKey: "x" }))
      .catch((error: unknown) => error)) instanceof CredentialRejected,
    true,
  );
});

test("the factory parses, describes without the key, and creates verifiers", () => {
  const path = "verifiers[2].profiles[0].configuration";
  assert.deepEqual(cloudVerifierFactory.parse(undefined, path), {});
  assert.deepEqual(cloudVerifierFactory.parse({ ...profile }, path), profile);
  assert.deepEqual(cloudVerifierFactory.describe(profile), { id: profile.id, key: "(set)", region: profile.region });
  assert.deepEqual(cloudVerifierFactory.describe({ id: profile.id }), { id: profile.id });
  const errors: Array<[Record<string, unknown>, string, RegExp]> = [
    [{ secret: "x" }, "secret", /unknown property/],
    [{ id: "has/slash" }, "id", /access key id/],
    [{ id: 5 }, "id", /must be a string/],
    [{ key: "" }, "key", /must not be empty/],
    [{ region: "Eu-West-1" }, "region", /region name/],
  ];
  for (const [raw, property, message] of errors) {
    assert.throws(
      () => cloudVerifierFactory.parse(raw, path),
      (error: unknown) => error instanceof SecurityConfigError && error.path === `${path}.${property}` && message.test(error.message),
    );
  }
  const verifier = cloudVerifierFactory.create("dev", profile, { replayGuard: new MemoryReplayGuard() });
  assert.equal(verifier.type, "cloud");
  assert.equal(verifier.profile, "dev");
});

// ---- the S3 convention (object-storage exports: docs/cloud-signing.md "S3 clients") ----

/** AWS's documented S3 SigV4 example "GET Object" (examplebucket, test.txt, Range bytes=0-9). */
const s3Example = { id: "AKIAIOSFODNN7EXAMPLE", key: "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", region: "us-east-1", at: Date.UTC(2013, 4, 24, 0, 0, 0) };

function s3GetObject(convention?: "s3"): Credential {
  const headers = {
    host: "examplebucket.s3.amazonaws.com",
    range: "bytes=0-9",
    "x-amz-content-sha256": emptySha256,
    "x-amz-date": "20130524T000000Z",
    authorization: `AWS4-HMAC-SHA256 Credential=${s3Example.id}/20130524/us-east-1/s3/aws4_request,SignedHeaders=host;range;x-amz-content-sha256;x-amz-date,Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41`,
  };
  return {
    type: "cloudSigningCredentials",
    request: signedRequestFrom({ method: "GET", url: "/test.txt", headers, bodySha256: emptySha256, ...(convention ? { convention } : {}) }),
  };
}

test("S3 convention: AWS's S3 GET Object example verifies (service s3); the warden scheme refuses the s3 service", async () => {
  const clock = () => s3Example.at;
  const verifier = verifierWith({ id: s3Example.id, key: s3Example.key, region: s3Example.region }, clock);
  assert.deepEqual(await verifier.verify(s3GetObject("s3")), { subject: s3Example.id, assertions: [] });
  await rejected(verifierWith({ id: s3Example.id, key: s3Example.key, region: s3Example.region }, clock), s3GetObject(), /service 's3' is not 'warden'/);
});

test("S3 convention: the path is signed as sent (not encoded twice); UNSIGNED-PAYLOAD only without a body", () => {
  assert.equal(canonicalUri("/docs/a%20b.csv", "s3"), "/docs/a%20b.csv");
  assert.equal(canonicalUri("/docs/a%20b.csv"), "/docs/a%2520b.csv");
  const request = (body: string, convention?: "s3"): SignedRequest => ({
    method: "GET",
    path: "/docs/x.csv",
    query: "",
    headers: {
      host: "h",
      "x-amz-date": "20260115T120000Z",
      "x-amz-content-sha256": unsignedPayload,
      authorization: `AWS4-HMAC-SHA256 Credential=${profile.id}/20260115/${profile.region}/s3/aws4_request, SignedHeaders=host;x-amz-content-sha256;x-amz-date, Signature=${"0".repeat(64)}`,
    },
    bodySha256: sha256Hex(body),
    ...(convention ? { convention } : {}),
  });
  assert.deepEqual(parsed(request("", "s3")).payloadHashes, [unsignedPayload]);
  assert.match((parseSignature(request("a body", "s3")) as { error: string }).error, /UNSIGNED-PAYLOAD is refused/);
  assert.match((parseSignature(request("")) as { error: string }).error, /UNSIGNED-PAYLOAD is refused/);
});
