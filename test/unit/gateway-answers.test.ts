import { test } from "node:test";
import assert from "node:assert/strict";
import { Registry } from "prom-client";
import { build } from "../../gateway/build";
import type { ExportPort, RedactPort, UserPort } from "../../api/types";
import { silentLogger } from "../../testkit/nats";

/**
 * Fastify serializes every answer with its route's answer schema (gateway/answers/), and a
 * schema drops what it does not name: these answers carry fields no schema names, at the top and
 * nested, and must come out whole. A schema that types a field wrongly (a null as "", a list as
 * an object) shows here too.
 */
const extra = { addedLater: { nested: [1, null, "x"] } };

const view = {
  id: "e1",
  type: "postgres",
  endpoint: "127.0.0.1:5432",
  resolverGroup: "users-table",
  metadata: { type: "platformUse", purposeId: "service", ...extra },
  status: "active",
  listen: { host: "127.0.0.1", port: 6000, ...extra },
  createdAt: "2026-01-01T00:00:00.000Z",
  updatedAt: "2026-01-01T00:00:00.000Z",
  backendIdentity: "client",
  serving: {
    nodeId: "n1",
    host: "127.0.0.1",
    port: 6000,
    since: "2026-01-01T00:00:00.000Z",
    connections: { open: 1, total: 2, refused: 0 },
    rows: { in: 3, kept: 2, dropped: 1, valuesNulled: 4 },
    ...extra,
  },
  servingError: null,
  ...extra,
};
const stopped = { ...view, status: "inactive", serving: null, servingError: "no node serves it" };

const exportPort = {
  create: async () => view,
  list: async () => [view, stopped],
  get: async () => stopped,
  stop: async () => stopped,
  start: async () => view,
  remove: async () => stopped,
} as unknown as ExportPort;

const user = {
  userId: "alice",
  attributes: { country: "FR" },
  optIns: {},
  consents: { "share/t1": { categoryIds: ["usage"] } },
  disabledFlows: [],
  createdAt: "2026-01-01T00:00:00.000Z",
  guardians: [],
  children: ["carol"],
  consentHistory: [{ at: "2026-01-01T00:00:00.000Z", purposeId: "share", categoryIds: null, by: "alice" }],
  ...extra,
};
const users = {
  get: async () => user,
  guardianOptions: async () => [{ purposeId: "share", thirdPartyId: "acme", disabled: false, ...extra }],
  termsOf: async () => ({ terms: { hash: "h", purposes: [], ...extra }, acceptedTermsHash: null, reacceptRequired: true, child: false }),
} as unknown as UserPort;

const dropped = { traceId: "t1", dropped: true, reasons: [{ code: "NO_USER", text: "no user" }], advice: [{ ...extra }], revision: 3, ...extra };
const kept = {
  traceId: "t2",
  dropped: false,
  record: { userId: "alice", email: null, nested: { a: [1, 2] } },
  fields: { email: { kept: false, why: "not granted" } },
  reasons: [],
  advice: [],
  revision: 3,
};
let nextRedaction: unknown = dropped;
const redact = { redactRecord: async () => nextRedaction } as unknown as RedactPort;

const app = () =>
  build({ logger: silentLogger, metrics: new Registry(), nodeId: "answers", health: () => ({ ready: true, checks: {} }), exports: exportPort, users, redact });

test("export answers come out whole: a list, one export (serving and null), a created one", async () => {
  const gateway = app();
  assert.deepEqual((await gateway.inject("/export")).json(), { exports: [view, stopped] });
  assert.deepEqual((await gateway.inject("/export?id=e1")).json(), stopped);
  const created = await gateway.inject({
    method: "PUT",
    url: "/export",
    payload: { type: "postgres", resolverGroup: "g", metadata: { type: "platformUse", purposeId: "p" } },
  });
  assert.equal(created.statusCode, 200, created.body);
  assert.deepEqual(created.json(), view);
  assert.deepEqual((await gateway.inject({ method: "PUT", url: "/export/stop?id=e1" })).json(), stopped);
});

test("user answers come out whole: a user, a guardian's options (a list), terms", async () => {
  const gateway = app();
  assert.deepEqual((await gateway.inject("/user/alice")).json(), user);
  assert.deepEqual((await gateway.inject("/user/alice/guardian-options")).json(), await users.guardianOptions("alice"));
  assert.deepEqual((await gateway.inject("/user/alice/terms")).json(), await users.termsOf("alice"));
});

test("record redactions come out whole, dropped or kept, nulls as nulls", async () => {
  const gateway = app();
  const url = "/redact/record?purposeId=p&type=platformUse&mappingGroup=g";
  for (const answer of [dropped, kept]) {
    nextRedaction = answer;
    const response = await gateway.inject({ method: "PUT", url, payload: { userId: "alice" } });
    assert.equal(response.statusCode, 200, response.body);
    assert.deepEqual(response.json(), answer);
  }
});
