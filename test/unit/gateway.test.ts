import { test } from "node:test";
import assert from "node:assert/strict";
import type { InjectOptions } from "fastify";
import { Registry } from "prom-client";
import { DeadlineExceededError, FatalError, RetryableError } from "../../actors/runtime/errors";
import { build } from "../../gateway/build";
import { HttpError, httpErrors } from "../../http/errors";
import { rootPaths, type HealthReport } from "../../gateway/types";
import { silentLogger } from "../../testkit/nats";

function gateway(report: HealthReport = { ready: true, checks: { nats: { ok: true } } }) {
  return build({ logger: silentLogger, metrics: new Registry(), nodeId: "gw-test", health: () => report, bodyLimit: 1024 });
}

test("/healthz answers alive; /readyz follows the node's readiness", async () => {
  const ready = gateway();
  assert.deepEqual((await ready.inject("/healthz")).json(), { status: "alive", nodeId: "gw-test" });
  const readyResponse = await ready.inject("/readyz");
  assert.equal(readyResponse.statusCode, 200);
  assert.equal(readyResponse.json().status, "ready");

  const notReady = gateway({ ready: false, checks: { nats: { ok: false } } });
  const response = await notReady.inject("/readyz");
  assert.equal(response.statusCode, 503);
  assert.deepEqual(response.json(), { status: "not ready", nodeId: "gw-test", checks: { nats: { ok: false } } });
});

test("every root path of the spec is registered and answers 501 with a registered code until it lands", async () => {
  const app = gateway();
  for (const root of rootPaths) {
    for (const url of [`/${root}`, `/${root}/anything/below`]) {
      const response = await app.inject({ method: "PUT", url, payload: {} });
      assert.equal(response.statusCode, 501, url);
      assert.deepEqual(response.json(), { error: { code: "ERR_SERVICE_NOT_IMPLEMENTED", message: `/${root} is not implemented yet` } });
    }
  }
});

test("unknown paths, malformed JSON, oversized bodies, wrong content types and __proto__ get clean 4xx bodies", async () => {
  const app = gateway();
  const cases: Array<[InjectOptions, number, string]> = [
    [{ method: "GET", url: "/nowhere" }, 404, "ERR_REQUEST_NOT_FOUND"],
    // A malformed percent-escape: Fastify's own FST_ERR_BAD_URL body before, the registry's form now.
    [{ method: "GET", url: "/user/%ZZ" }, 400, "ERR_REQUEST_INVALID"],
    [{ method: "GET", url: "/config/categories/%E0%A4%A" }, 400, "ERR_REQUEST_INVALID"],
    [{ method: "PUT", url: "/config/categories", payload: "{not json", headers: { "content-type": "application/json" } }, 400, "ERR_REQUEST_BODY_MALFORMED"],
    [
      { method: "PUT", url: "/config/categories", payload: JSON.stringify({ big: "x".repeat(2048) }), headers: { "content-type": "application/json" } },
      413,
      "ERR_REQUEST_BODY_TOO_LARGE",
    ],
    [{ method: "PUT", url: "/config/categories", payload: "<xml/>", headers: { "content-type": "application/xml" } }, 415, "ERR_REQUEST_CONTENT_TYPE"],
    [
      { method: "PUT", url: "/config/categories", payload: '{"__proto__": {"polluted": true}}', headers: { "content-type": "application/json" } },
      400,
      "ERR_REQUEST_BODY_MALFORMED",
    ],
    [
      {
        method: "PUT",
        url: "/config/categories",
        payload: '{"constructor": {"prototype": {"polluted": true}}}',
        headers: { "content-type": "application/json" },
      },
      400,
      "ERR_REQUEST_BODY_MALFORMED",
    ],
  ];
  for (const [request, status, code] of cases) {
    const response = await app.inject(request);
    assert.equal(response.statusCode, status, JSON.stringify(request).slice(0, 80));
    const body = response.json();
    assert.equal(body.error.code, code);
    assert.equal(typeof body.error.message, "string");
    assert.equal(httpErrors[code as keyof typeof httpErrors].status, status, "the registry agrees");
  }
  assert.equal(({} as Record<string, unknown>).polluted, undefined, "no prototype was touched");
  assert.equal((await app.inject("/healthz")).statusCode, 200, "the service is unharmed");
});

test("x-request-id: a sane client id is echoed, anything else is replaced", async () => {
  const app = gateway();
  assert.equal((await app.inject({ url: "/healthz", headers: { "x-request-id": "abc-123" } })).headers["x-request-id"], "abc-123");
  const replaced = (await app.inject({ url: "/healthz", headers: { "x-request-id": "bad id\twith junk" } })).headers["x-request-id"];
  assert.match(String(replaced), /^[0-9a-f-]{36}$/);
  assert.match(String((await app.inject("/healthz")).headers["x-request-id"]), /^[0-9a-f-]{36}$/);
});

test("/metrics serves Prometheus text including request durations", async () => {
  const app = gateway();
  await app.inject("/healthz");
  const response = await app.inject("/metrics");
  assert.equal(response.statusCode, 200);
  assert.match(String(response.headers["content-type"]), /^text\/plain/);
  assert.match(response.body, /warden_http_request_duration_seconds_count\{method="GET",route="\/healthz",status="200"\} 1/);
});

test("runtime errors map to registered codes, and no internal error text reaches the client", async () => {
  const app = gateway();
  const thrown: Record<string, Error> = {
    "/t/deadline": new DeadlineExceededError("secret detail: owner n7 slow"),
    "/t/unavailable": new RetryableError("STATE_UNAVAILABLE", "secret detail: stream KV_x has no leader"),
    "/t/unknown-outcome": new FatalError("OUTCOME_UNKNOWN", "secret detail: write to user.u1 unconfirmed"),
    "/t/bug": new TypeError("secret detail: cannot read properties of undefined"),
  };
  for (const [url, error] of Object.entries(thrown)) {
    app.get(url, async () => {
      throw error;
    });
  }
  const expected: Array<[string, number, string]> = [
    ["/t/deadline", 504, "ERR_ACTOR_TIMEOUT"],
    ["/t/unavailable", 503, "ERR_ACTOR_UNAVAILABLE"],
    ["/t/unknown-outcome", 504, "ERR_ACTOR_OUTCOME_UNKNOWN"],
    ["/t/bug", 500, "ERR_INTERNAL"],
  ];
  for (const [url, status, code] of expected) {
    const response = await app.inject(url);
    assert.equal(response.statusCode, status, url);
    assert.equal(response.json().error.code, code, url);
    assert.doesNotMatch(response.body, /secret detail/, `${url} leaks nothing`);
  }
});

test("a known path asked with a wrong method is 405 with an Allow header; an unknown path stays 404", async () => {
  const app = gateway();
  app.get("/t/item/:id", async () => ({}));
  app.delete("/t/item/:id", async () => ({}));
  const cases: Array<[InjectOptions, string]> = [
    [{ method: "POST", url: "/healthz" }, "GET, HEAD"],
    [{ method: "DELETE", url: "/metrics?x=1" }, "GET, HEAD"],
    [{ method: "PUT", url: "/t/item/42" }, "DELETE, GET, HEAD"],
  ];
  for (const [request, allow] of cases) {
    const response = await app.inject(request);
    assert.equal(response.statusCode, 405, request.url as string);
    assert.equal(response.headers.allow, allow);
    assert.equal(response.json().error.code, "ERR_REQUEST_METHOD");
    assert.equal(httpErrors.ERR_REQUEST_METHOD.status, 405);
  }
  for (const url of ["/t/item", "/t/item/42/more", "/healthzz"]) {
    const response = await app.inject({ method: "POST", url });
    assert.equal(response.statusCode, 404, url);
    assert.equal(response.headers.allow, undefined);
  }
});

test("every 503 (and 429) says when to retry: Retry-After from the registry, else one second", async () => {
  const notReady = await gateway({ ready: false, checks: { nats: { ok: false } } }).inject("/readyz");
  assert.equal(notReady.statusCode, 503);
  assert.equal(notReady.headers["retry-after"], "1");
  const app = gateway();
  app.get("/t/unavailable", async () => {
    throw new RetryableError("STATE_UNAVAILABLE", "no leader");
  });
  app.get("/t/no-port", async () => {
    throw new HttpError("ERR_EXPORT_NO_PORT");
  });
  app.get("/t/busy", async (_request, reply) => reply.status(429).send({}));
  app.get("/t/fine", async () => ({}));
  assert.equal((await app.inject("/t/unavailable")).headers["retry-after"], "1");
  const noPort = await app.inject("/t/no-port");
  assert.equal(noPort.statusCode, 503);
  assert.equal(noPort.headers["retry-after"], String(httpErrors.ERR_EXPORT_NO_PORT.retryAfterSeconds));
  assert.equal((await app.inject("/t/busy")).headers["retry-after"], "1");
  assert.equal((await app.inject("/t/fine")).headers["retry-after"], undefined, "only 503 and 429");
});
