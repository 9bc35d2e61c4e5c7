import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { Registry } from "prom-client";
import type { AuditRecord } from "../../actors/runtime/event-log";
import { policyConfigSchema } from "../../policy/schema";
import { Authenticator } from "../../auth/authenticator";
import { parseSecurityConfig, type VerifierFactories } from "../../auth/security-config";
import { verifierFactories } from "../../auth/verifier-factories";
import { build } from "../../gateway/build";
import type { GatewayDeps } from "../../gateway/types";
import type { RedactPort } from "../../api/types";
import { uiManifest, uiSecurityHeaders } from "../../gateway/ui-routes";
import { fakeDirectory } from "../helpers/fake-directory";
import { realisticPolicy } from "../../testkit/policy";
import { MemoryReplayGuard } from "../helpers/memory-replay-guard";
import { silentLogger } from "../../testkit/nats";
import { tempDir } from "../../testkit/temp";
import { readOnlyPolicy, unused } from "../helpers/read-only-policy";

const policy = readOnlyPolicy;
const redact: RedactPort = { redactRecord: unused };

async function gateway(options: { enforce?: string[]; policy?: boolean } = {}) {
  const deps: GatewayDeps = {
    logger: silentLogger,
    metrics: new Registry(),
    nodeId: "ui-test",
    health: () => ({ ready: true, checks: {} }),
    redact,
    ...(options.policy === false ? {} : { policy }),
  };
  const audits: Array<Omit<AuditRecord, "id" | "time" | "nodeId">> = [];
  if (options.enforce) {
    const factories: VerifierFactories = { ...verifierFactories, ldap: fakeDirectory };
    const config = parseSecurityConfig(
      {
        verifiers: [{ verifier: "ldap", default: "main", profiles: [{ profile: "main" }] }],
        credentials: [{ type: "namepwd", verifiers: [{ verifier: "ldap", default: true }] }],
        enforcedComponents: options.enforce.map((componentName) => ({ componentName })),
      },
      factories,
    );
    const authenticator = await Authenticator.start(config, factories, { replayGuard: new MemoryReplayGuard() }, "inline");
    deps.auth = { authenticator, audit: async (entry) => audits.push(entry) };
  }
  return { app: build(deps), audits };
}

const pages = ["config", "mapping", "redact", "user"] as const;
const alice = `Basic ${Buffer.from("alice:wonderland").toString("base64")}`;

test("each page and its files: content types, ETag, the security headers, 304 when unchanged", async () => {
  const { app } = await gateway();
  for (const root of pages) {
    const page = await app.inject(`/${root}/`);
    assert.equal(page.statusCode, 200, root);
    assert.equal(page.headers["content-type"], "text/html; charset=utf-8");
    for (const [name, value] of Object.entries(uiSecurityHeaders)) assert.equal(page.headers[name], value, `${root}: ${name}`);
    assert.match(page.body, new RegExp(`<script type="module" src="ui/${root}\\.js"></script>`));
    assert.doesNotMatch(page.body, /\{\{|<style|style=|<script>/, "the shell is filled in and has no inline script or style");

    const script = await app.inject(`/${root}/ui/${root}.js`);
    assert.equal(script.statusCode, 200);
    assert.equal(script.headers["content-type"], "text/javascript; charset=utf-8");
    assert.equal(script.headers["content-security-policy"], uiSecurityHeaders["content-security-policy"]);
    const css = await app.inject(`/${root}/ui/shared/base.css`);
    assert.equal(css.headers["content-type"], "text/css; charset=utf-8");

    const etag = String(script.headers.etag);
    assert.match(etag, /^"[A-Za-z0-9_-]{22}"$/);
    const again = await app.inject({ url: `/${root}/ui/${root}.js`, headers: { "if-none-match": etag } });
    assert.equal(again.statusCode, 304);
    assert.equal(again.body, "");
    assert.equal((await app.inject({ url: `/${root}/ui/${root}.js`, headers: { "if-none-match": '"other"' } })).statusCode, 200);
  }
  // The shared files are the same under every root: each page stays inside its own component.
  const shared = await Promise.all(pages.map((root) => app.inject(`/${root}/ui/shared/api.js`)));
  assert.ok(shared.every((answer) => answer.statusCode === 200 && answer.body === shared[0]!.body));
  const schema = await app.inject("/config/ui/shared/policy-schema.json");
  assert.equal(schema.headers["content-type"], "application/json; charset=utf-8");
  assert.deepEqual(schema.json(), JSON.parse(JSON.stringify(policyConfigSchema)), "the forms are drawn from the schema the API validates with");
});

test("API answers, refusals and errors included, are never sniffed as another type nor kept in a cache; the pages keep their own caching", async () => {
  const { app } = await gateway({ enforce: ["config"] });
  for (const [url, status] of [
    ["/config", 401],
    ["/healthz", 200],
    ["/no/such/path", 404],
  ] as const) {
    const answer = await app.inject(url);
    assert.equal(answer.statusCode, status, url);
    assert.equal(answer.headers["x-content-type-options"], "nosniff", url);
    assert.equal(answer.headers["cache-control"], "no-store", url);
  }
  const config = await app.inject({ url: "/config", headers: { authorization: alice } });
  assert.equal(config.statusCode, 200);
  assert.equal(config.headers["cache-control"], "no-store", "the configuration as a verified caller reads it");
  const page = await app.inject("/config/");
  assert.equal(page.headers["cache-control"], "no-cache", "a page is revalidated by its ETag");
});

test("GET /config stays the JSON API; /mapping and /redact redirect to their pages", async () => {
  const { app } = await gateway();
  const api = await app.inject("/config");
  assert.equal(api.statusCode, 200);
  assert.match(String(api.headers["content-type"]), /^application\/json/);
  assert.deepEqual(api.json(), realisticPolicy());
  for (const root of ["mapping", "redact"]) {
    const answer = await app.inject(`/${root}`);
    assert.equal(answer.statusCode, 301, root);
    assert.equal(answer.headers.location, `/${root}/`);
  }
  assert.equal((await app.inject("/mapping/groups")).statusCode, 200, "the API beside the page is unchanged");
});

test("only files of the manifest are served: unknown names and traversal attempts are 404", async () => {
  const { app } = await gateway();
  for (const url of [
    "/config/ui/nope.js",
    "/config/index.html",
    "/config/ui/",
    "/config/ui/shared/",
    "/config/ui/config.ts",
    "/config/ui/../../package.json",
    "/config/ui/%2e%2e/%2e%2e/package.json",
    "/config/ui/shared/..%2f..%2f..%2fpackage.json",
    "/config/ui/shared/%2e%2e%2f%2e%2e%2fgateway%2fbuild.ts",
    "/mapping/ui/..%5c..%5cpackage.json",
    "/mapping/ui/shared/../../../ui/page.html",
    "/ui/page.html",
  ]) {
    const answer = await app.inject(url);
    assert.equal(answer.statusCode, 404, url);
    assert.equal(answer.json().error.code, "ERR_REQUEST_NOT_FOUND", url);
  }
});

test("authentication enforced: the shell loads without credentials, the APIs still answer 401, and nothing else is exempt", async () => {
  const { app, audits } = await gateway({ enforce: ["config", "mapping", "redact"] });
  for (const root of pages) {
    for (const url of [`/${root}/`, `/${root}/ui/${root}.js`, `/${root}/ui/shared/auth.js`]) {
      assert.equal((await app.inject(url)).statusCode, 200, `GET ${url}`);
      assert.equal((await app.inject({ method: "HEAD", url })).statusCode, 200, `HEAD ${url}`);
    }
  }
  assert.equal((await app.inject("/mapping")).statusCode, 301, "the redirect to the page");
  assert.equal(audits.length, 0, "serving the shell neither admits nor denies anyone");

  for (const url of ["/config", "/config/categories", "/config/history", "/mapping/groups", "/redact/jobs"]) {
    const refused = await app.inject(url);
    assert.equal(refused.statusCode, 401, url);
    assert.equal(refused.json().error.code, "ERR_AUTH_REQUIRED", url);
    assert.deepEqual([refused.headers["www-authenticate"]].flat(), ['Basic realm="warden", charset="UTF-8"'], url);
  }
  assert.equal((await app.inject({ url: "/config", headers: { authorization: alice } })).statusCode, 200, "with credentials, the API answers");

  // This gateway has no document redaction: /redact/* is a catch-all, which stays enforced for
  // every method, and for GETs of names the UI does not have.
  for (const [method, url] of [
    ["PUT", "/redact/"],
    ["POST", "/redact/ui/redact.js"],
    ["DELETE", "/redact/ui/shared/api.js"],
    ["GET", "/redact/ui/unknown.js"],
    ["GET", "/redact/document?jobName=x"],
  ] as const) {
    const answer = await app.inject({ method, url });
    assert.equal(answer.statusCode, 401, `${method} ${url}`);
  }
  assert.equal(
    (await app.inject({ method: "PUT", url: "/redact/", headers: { authorization: alice } })).statusCode,
    501,
    "past authentication, the catch-all says what it is",
  );
  assert.ok(audits.length > 0 && audits.every((a) => a.event !== "connection.unauthenticated"), "refusals are audited; nothing passed unauthenticated");
});

test("an API request a browser sends for another site is refused before its credentials are used; the pages and same-origin calls are not", async () => {
  const { app, audits } = await gateway({ enforce: ["config", "mapping", "redact"] });
  // What Chromium sends when a page of another site opens or posts to the API: a top-level navigation carries the Basic
  // credentials the browser cached when the operator signed in at its prompt (subresource requests do not, in Chromium 150).
  const fromAnotherSite = (site: "cross-site" | "same-site") => ({
    authorization: alice,
    "sec-fetch-site": site,
    "sec-fetch-mode": "navigate",
    "sec-fetch-dest": "document",
  });
  for (const site of ["cross-site", "same-site"] as const) {
    for (const [method, url] of [
      ["GET", "/config"],
      ["GET", "/config/history"],
      ["PUT", "/config/categories"],
      ["DELETE", "/mapping/groups/main"],
      ["PUT", "/redact/record?type=platformUse&purposeId=analytics"],
    ] as const) {
      const refused = await app.inject({ method, url, headers: fromAnotherSite(site) });
      assert.equal(refused.statusCode, 403, `${site} ${method} ${url}`);
      assert.equal(refused.json().error.code, "ERR_REQUEST_CROSS_SITE", `${site} ${method} ${url}`);
      assert.equal(refused.headers["x-warden-permissions"], undefined, "no caller was admitted");
    }
  }
  assert.deepEqual(audits, [], "nobody was authenticated, or refused, on another site's behalf (no record names the operator)");

  // The pages themselves may be linked from anywhere; the calls they make are same-origin; clients other than browsers send no Sec-Fetch-Site.
  assert.equal((await app.inject({ url: "/config/", headers: { "sec-fetch-site": "cross-site", "sec-fetch-mode": "navigate" } })).statusCode, 200);
  for (const site of ["same-origin", "none", undefined]) {
    const headers = { authorization: alice, ...(site ? { "sec-fetch-site": site } : {}) };
    assert.equal((await app.inject({ url: "/config", headers })).statusCode, 200, `Sec-Fetch-Site: ${site}`);
  }
  assert.equal((await app.inject({ url: "/healthz", headers: { "sec-fetch-site": "cross-site" } })).statusCode, 200, "not a component: not refused");
});

test("the API browser at /docs has the pages' headers: no framing by other sites, no inline or foreign script, no sniffing", async () => {
  const { app } = await gateway();
  // Its "Authorize" and "Try it out" send requests from this origin: framed by another site, a click could be taken for one.
  for (const url of ["/docs", "/docs/", "/docs/static/swagger-initializer.js", "/docs/static/swagger-ui-bundle.js", "/docs/json"]) {
    const answer = await app.inject(url);
    assert.equal(answer.statusCode, 200, url);
    for (const [name, value] of Object.entries(uiSecurityHeaders)) assert.equal(answer.headers[name], value, `${url}: ${name}`);
  }
});

test("the exemption is for GET and HEAD only, even on a route marked as a UI file", async () => {
  const { app } = await gateway({ enforce: ["config"] });
  // Not something ui-routes registers: a write under the flag must still be authenticated.
  app.route({ method: ["GET", "POST", "PUT", "DELETE"], url: "/config/ui/marked", config: { uiAsset: true } as never, handler: async () => ({ ok: true }) });
  assert.equal((await app.inject("/config/ui/marked")).statusCode, 200);
  for (const method of ["POST", "PUT", "DELETE"] as const) assert.equal((await app.inject({ method, url: "/config/ui/marked" })).statusCode, 401, method);
});

test("a gateway without the configuration: the pages still load; a non-GET to a page's path is enforced", async () => {
  const { app } = await gateway({ enforce: ["config", "mapping"], policy: false });
  assert.equal((await app.inject("/config/")).statusCode, 200);
  assert.equal((await app.inject("/mapping/ui/mapping.js")).statusCode, 200);
  for (const method of ["POST", "PUT", "DELETE", "PATCH"] as const) {
    assert.equal((await app.inject({ method, url: "/config/" })).statusCode, 401, `${method} /config/`);
    assert.equal((await app.inject({ method, url: "/mapping/ui/mapping.js" })).statusCode, 401, `${method} /mapping/ui/mapping.js`);
  }
  const bare = await app.inject("/mapping");
  assert.equal(bare.statusCode, 401, "no redirect where the bare path belongs to the (not implemented) API");
});

test("the manifest: the page shell per root with a script, files of known types only, no dot files", () => {
  const dir = tempDir("ui-manifest");
  mkdirSync(join(dir, "config"));
  mkdirSync(join(dir, "mapping"));
  mkdirSync(join(dir, "shared", "icons"), { recursive: true });
  writeFileSync(join(dir, "page.html"), "<title>{{title}}</title><script type=module src=ui/{{root}}.js></script>");
  writeFileSync(join(dir, "config", "config.js"), "export {};");
  writeFileSync(join(dir, "config", ".hidden.js"), "secret");
  writeFileSync(join(dir, "config", "notes.txt"), "not a UI file type");
  writeFileSync(join(dir, "config", "config.ts"), "source");
  writeFileSync(join(dir, "mapping", "other.js"), "no mapping.js: no page");
  writeFileSync(join(dir, "shared", "base.css"), "body{}");
  writeFileSync(join(dir, "shared", "icons", "logo.svg"), "<svg/>");
  const manifest = uiManifest(dir);
  assert.deepEqual([...manifest.keys()].sort(), [
    "/config/",
    "/config/ui/config.js",
    "/config/ui/shared/base.css",
    "/config/ui/shared/icons/logo.svg",
    "/config/ui/shared/policy-schema.json",
  ]);
  assert.equal(manifest.get("/config/")!.body.toString(), "<title>Configuration</title><script type=module src=ui/config.js></script>");
  assert.equal(manifest.get("/config/ui/shared/icons/logo.svg")!.contentType, "image/svg+xml");
});

test("the UI files load nothing from another host and build no markup from strings", () => {
  const manifest = uiManifest();
  assert.ok(manifest.size > 20, "the checkout's ui/ folder is found from dist/gateway");
  for (const [url, file] of manifest) {
    const text = file.body.toString("utf8");
    // The SVG namespace is a name, not a request.
    const addresses = [...text.matchAll(/\b(?:https?:)?\/\/[A-Za-z0-9.-]+\.[A-Za-z]{2,}/g)].map((m) => m[0]).filter((a) => a !== "http://www.w3.org");
    assert.deepEqual(addresses, [], `${url} names another host`);
    if (url.endsWith(".js"))
      assert.doesNotMatch(text, /\.innerHTML|\.outerHTML|insertAdjacentHTML|document\.write|\beval\(|new Function\(/, `${url}: markup or code from strings`);
  }
});
