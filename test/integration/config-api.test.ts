import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { Kvm, KvWatchInclude } from "@nats-io/kv";
import type { NatsConnection } from "@nats-io/transport-node";
import type { AuditRecord } from "../../actors/runtime/event-log";
import type { NatsServerProcess } from "../../service/nats-server";
import { realisticPolicy } from "../../testkit/policy";
import { connectTo, startNats } from "../../testkit/nats";
import { call } from "../../testkit/http";
import { NodeProcess } from "../../testkit/node-process";

describe("/config and /mapping over HTTP, two nodes", () => {
  let nats: NatsServerProcess;
  let a: NodeProcess;
  let b: NodeProcess;
  let nc: NatsConnection;
  const audits: AuditRecord[] = [];

  before(async () => {
    nats = await startNats();
    [a, b] = await NodeProcess.startAll(["cfg-a", "cfg-b"].map((nodeId) => ({ nodeId, natsUrl: nats.url })));
    nc = await connectTo(nats);
    nc.subscribe("warden.audit.config.>", {
      callback: (_error, msg) => {
        audits.push(msg.json<AuditRecord>());
      },
    });
  });

  after(async () => {
    await nc?.close();
    await Promise.all([a?.stop(), b?.stop()]);
    await nats?.stop();
  });

  test("the configuration built through the individual paths equals the same configuration put in bulk", async () => {
    const policy = realisticPolicy();
    const writes: Array<[string, unknown]> = [
      ["/config/categories", { categories: policy.categories }],
      ["/config/platform-use", { purposes: policy.platformUse.purposes }],
      [
        "/config/contractual-exchange",
        { purposes: policy.contractualExchange.purposes.map((p) => ({ ...p, terms: p.terms.map((t) => ({ ...t, platformSharingPurposeIds: [] })) })) },
      ],
      ["/config/platform-use/overrides", { overrides: policy.platformUse.overrides }],
      ["/config/platform-sharing", { purposes: policy.platformSharing.purposes }],
      ["/config/contractual-exchange", { purposes: policy.contractualExchange.purposes }],
      ["/config/platform-sharing/overrides", { overrides: policy.platformSharing.overrides }],
      ["/config/user-access", policy.userAccess],
      ["/config/user-access/guardian", policy.guardian],
      ["/config/consented-sharing", { purposes: policy.consentedSharing.purposes }],
    ];
    for (const [path, body] of writes) {
      const answer = await call(a, "PUT", path, body);
      assert.equal(answer.status, 200, `${path}: ${JSON.stringify(answer.body)}`);
      assert.equal(answer.body.changed, true);
      assert.equal(answer.etag, `"${answer.body.revision}"`);
    }
    for (const group of policy.mappingGroups) assert.equal((await call(a, "PUT", "/mapping/groups/", group)).status, 200);

    const read = await call(b, "GET", "/config");
    assert.deepEqual(read.body, policy, "read back through the other node");
    const bulk = await call(b, "PUT", "/config", read.body);
    assert.deepEqual(bulk.body, { revision: Number(read.etag!.replaceAll('"', "")), changed: false }, "PUT of what GET returned changes nothing");

    assert.deepEqual((await call(a, "GET", "/config/categories")).body, { categories: policy.categories });
    assert.deepEqual((await call(a, "GET", "/config/platform-sharing/ads-sharing")).body, policy.platformSharing.purposes[0]);
    assert.deepEqual((await call(a, "GET", "/config/platform-use/overrides/under-13")).body, policy.platformUse.overrides[0]);
    assert.deepEqual((await call(a, "GET", "/config/user-access/guardian")).body, policy.guardian);
    assert.equal((await call(a, "GET", "/config/consented-sharing/nope")).body.error.code, "ERR_RESOURCE_NOT_FOUND");
  });

  test("a write with problems is 400 with every problem, and nothing changes", async () => {
    const before = await call(a, "GET", "/config");
    const answer = await call(a, "PUT", "/config/platform-use", {
      purposes: [
        { stableId: "new purpose", name: "Bad id", categoryIds: ["contact"] },
        { stableId: "analytics", name: "Analytics", categoryIds: ["usage", "ghost"] },
      ],
    });
    assert.equal(answer.status, 400);
    assert.equal(answer.body.error.code, "ERR_REQUEST_INVALID");
    assert.deepEqual(answer.body.error.details, [{ path: "/purposes/0/stableId", problem: "a stableId may contain only letters, digits, '.', '-' and '_'" }]);

    const semantic = await call(a, "PUT", "/config/platform-use", {
      purposes: [{ stableId: "analytics", name: "Analytics", categoryIds: ["usage", "ghost"] }],
    });
    assert.equal(semantic.status, 400);
    assert.equal(semantic.body.error.code, "ERR_CONFIG_INVALID");
    assert.deepEqual(semantic.body.error.details, [{ path: "/platformUse/purposes/2/categoryIds/1", problem: "unknown category 'ghost'" }]);

    const after = await call(b, "GET", "/config");
    assert.equal(after.etag, before.etag);
    assert.deepEqual(after.body, before.body);
  });

  test("If-Match: two concurrent writes from the same revision through two nodes, exactly one wins", async () => {
    const { etag } = await call(a, "GET", "/config/user-access");
    const [one, two] = await Promise.all([
      call(a, "PUT", "/config/user-access", { categoryIds: ["contact"] }, { "if-match": etag! }),
      call(b, "PUT", "/config/user-access", { categoryIds: ["identity"] }, { "if-match": etag! }),
    ]);
    assert.deepEqual([one.status, two.status].sort(), [200, 412]);
    const loser = one.status === 412 ? one : two;
    assert.equal(loser.body.error.code, "ERR_CONFIG_REVISION_MISMATCH");
    assert.equal((await call(a, "PUT", "/config/user-access", { categoryIds: ["contact"] }, { "if-match": "not-a-revision" })).status, 400);
  });

  test("a mapping group redefined by name is what the next request sees, on every node", async () => {
    const group = {
      name: "events-csv",
      fieldMappings: [
        { recordField: "uid", resourceContext: true },
        { recordField: "where", categoryId: "location", fieldId: "location.region" },
      ],
    };
    assert.equal((await call(a, "PUT", "/mapping/groups/", group)).status, 200);
    assert.deepEqual((await call(b, "GET", "/mapping/groups/events-csv")).body, group);
    const wrongField = await call(a, "PUT", "/mapping/groups/", {
      name: "x",
      fieldMappings: [{ recordField: "f", categoryId: "usage", fieldId: "contact.email" }],
    });
    assert.equal(wrongField.status, 400);
    assert.deepEqual(wrongField.body.error.details, [
      { path: "/mappingGroups/2/fieldMappings/0/fieldId", problem: "field 'contact.email' belongs to category 'contact', not 'usage'" },
    ]);
  });

  test("deleting something still referenced is 409 with the references; an unreferenced item is deleted", async () => {
    const refused = await call(a, "DELETE", "/config/categories/location");
    assert.equal(refused.status, 409);
    assert.equal(refused.body.error.code, "ERR_CONFIG_REFERENCED");
    assert.ok(refused.body.error.details.some((d: { path: string }) => d.path === "/platformUse/purposes/1/categoryIds/1"));
    assert.equal((await call(a, "DELETE", "/mapping/groups/events-csv")).status, 200);
    assert.equal((await call(b, "GET", "/mapping/groups/events-csv")).status, 404);
    assert.equal((await call(a, "DELETE", "/config/consented-sharing/research")).status, 200);
  });

  test("malformed JSON, a wrong content type, an oversized body and __proto__ keys get clean 4xx; the service is unharmed", async () => {
    const json = { "content-type": "application/json" };
    const cases: Array<[string, string, Record<string, string>, number, string]> = [
      ["/config/categories", "{not json", json, 400, "ERR_REQUEST_BODY_MALFORMED"],
      ["/config/categories", "<categories/>", { "content-type": "application/xml" }, 415, "ERR_REQUEST_CONTENT_TYPE"],
      [
        "/config/categories",
        JSON.stringify({ categories: [{ stableId: "x", name: "y".repeat(2 * 1024 * 1024), fields: [] }] }),
        json,
        413,
        "ERR_REQUEST_BODY_TOO_LARGE",
      ],
      ["/config/categories", '{"categories":[{"stableId":"x","name":"y","fields":[],"__proto__":{"polluted":true}}]}', json, 400, "ERR_REQUEST_BODY_MALFORMED"],
      [
        "/config/categories",
        JSON.stringify({
          categories: [
            { stableId: "zz", name: "one", fields: [] },
            { stableId: "zz", name: "two", fields: [] },
          ],
        }),
        json,
        400,
        "ERR_CONFIG_INVALID",
      ],
    ];
    for (const [path, body, headers, status, code] of cases) {
      const answer = await call(a, "PUT", path, body, headers);
      assert.equal(answer.status, status, body.slice(0, 40));
      assert.equal(answer.body.error.code, code, body.slice(0, 40));
    }
    assert.equal((await call(a, "GET", "/readyz")).status, 200);
  });

  test("the history says who changed what and when; one revision holds the whole configuration", async () => {
    const history = await call(a, "GET", "/config/history?limit=3");
    assert.equal(history.status, 200, JSON.stringify(history.body));
    const latest = Number((await call(a, "GET", "/config")).etag!.replaceAll('"', ""));
    assert.deepEqual(
      history.body.revisions.map((r: { revision: number }) => r.revision),
      [latest, latest - 1, latest - 2],
    );
    assert.deepEqual(history.body.revisions[0].change, "removed consentedPurpose 'research'");
    assert.equal(history.body.revisions[0].by, "anonymous");
    const first = await call(b, "GET", "/config/history/1");
    assert.deepEqual(first.body.config.categories, realisticPolicy().categories);
  });

  test("a caller that caches the policy is told of a new revision through NATS within a second", async () => {
    const kv = await new Kvm(nc).open("warden_state");
    const watch = await kv.watch({ key: "policy.default", include: KvWatchInclude.UpdatesOnly });
    const told = (async () => {
      for await (const entry of watch) return entry.json<{ revision: number }>().revision;
      return 0;
    })();
    const started = Date.now();
    const write = await call(b, "PUT", "/config/user-access", { categoryIds: ["contact", "identity"] });
    const revision = await Promise.race([told, new Promise<number>((resolve) => setTimeout(() => resolve(-1), 1000))]);
    watch.stop();
    assert.equal(revision, write.body.revision, `told within a second (${Date.now() - started} ms)`);
  });

  test("every configuration change is audited with its revision", async () => {
    const latest = Number((await call(a, "GET", "/config")).etag!.replaceAll('"', ""));
    const revisions = audits.filter((r) => r.event === "config.changed").map((r) => (r.details as { revision: number }).revision);
    assert.deepEqual(
      revisions.sort((x, y) => x - y),
      Array.from({ length: latest }, (_, i) => i + 1),
    );
  });

  test("the OpenAPI document covers /config and /mapping, with an API page served locally", async () => {
    const document = await call(a, "GET", "/openapi.json");
    for (const path of ["/config", "/config/categories", "/config/categories/{id}", "/config/history", "/mapping/groups/", "/mapping/groups/{name}"]) {
      assert.ok(document.body.paths[path], `${path} is documented`);
    }
    const page = await call(a, "GET", "/docs/");
    assert.equal(page.status, 200);
    assert.doesNotMatch(page.body, /(src|href)="https?:\/\//, "no asset from another host");
  });
});
