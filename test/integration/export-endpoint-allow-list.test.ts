import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import type { AuditRecord } from "../../actors/runtime/event-log";
import type { NatsServerProcess } from "../../service/nats-server";
import { fhirPolicy } from "../../testkit/policy";
import { createPopulation } from "../fixtures/population";
import { answersThrough as answers, createAppDatabase, populationHba } from "../fixtures/postgres-population";
import { call as request } from "../../testkit/http";
import { connectTo, startNats, storedMessages } from "../../testkit/nats";
import { NodeProcess } from "../../testkit/node-process";
import { listening, until } from "../../testkit/wait";
import { freePorts } from "../../testkit/ports";
import { PostgresServer } from "../../testkit/postgres";

describe("an allow-list of backing endpoints (EXPORT_ALLOWED_ENDPOINTS): exports may point only where the operator allows", () => {
  let nats: NatsServerProcess;
  let pg: PostgresServer;
  let node: NodeProcess;
  let ports: number[];
  const call = (method: string, path: string, body?: unknown) => request(node, method, path, body);
  const body = (type: string, endpoint: string, extra: Record<string, unknown> = {}) => ({
    type,
    endpoint,
    resolverGroup: "users-table",
    metadata: { type: "platformUse", purposeId: "service" },
    ...extra,
  });

  before(async () => {
    pg = await PostgresServer.start({ hba: populationHba });
    createAppDatabase(pg);
    nats = await startNats();
    ports = await freePorts(4);
    node = await NodeProcess.start({ nodeId: "allow-1", natsUrl: nats.url });
    assert.equal((await call("PUT", "/config", fhirPolicy())).status, 200);
    await createPopulation(call);
  });

  after(async () => {
    await node?.stop();
    await nats?.stop();
    await pg?.stop();
  });

  test("without a list any endpoint is taken; restarted with one, an export stored before it is not served and says why", async () => {
    const allowed = await call("PUT", "/export", body("postgres", `127.0.0.1:${pg.port}`, { port: ports[0] }));
    assert.equal(allowed.status, 200, JSON.stringify(allowed.body));
    // An export of something that is no datastore of the operator's: the node's own NATS.
    const elsewhere = await call("PUT", "/export", body("postgres", `127.0.0.1:${nats.options.port}`, { port: ports[1] }));
    assert.equal(elsewhere.status, 200, JSON.stringify(elsewhere.body));
    await until("the export of a store not on any list answers", () => listening(ports[1]!));

    await node.stop();
    node = await NodeProcess.start({ nodeId: "allow-2", natsUrl: nats.url, env: { EXPORT_ALLOWED_ENDPOINTS: `Localhost:1, 127.0.0.1:${pg.port}` } });
    await until("the allowed export answers after the restart", () => answers(ports[0]!), 30_000);
    let servingError: string | null | undefined;
    await until("the refused export's reason", async () => {
      const answer = await call("GET", "/export");
      servingError = (answer.body.exports as Array<{ id: string; servingError: string | null }>).find((e) => e.id === elsewhere.body.id)?.servingError;
      return typeof servingError === "string";
    });
    assert.match(servingError!, new RegExp(`not served: endpoint '127\\.0\\.0\\.1:${nats.options.port}' is not in the allow-list`));
    assert.equal(await listening(ports[1]!), false, "its port stays closed");

    const nc = await connectTo(nats.url);
    try {
      const refused = (await storedMessages<AuditRecord>(nc, "WARDEN_AUDIT", "warden.audit.postgres.warn")).filter((m) => m.data.event === "export.refused");
      assert.equal(refused.length, 1, "audited once, not at every scan");
      assert.equal(refused[0]!.data.details?.exportId, elsewhere.body.id);
      const active = (await storedMessages<AuditRecord>(nc, "WARDEN_AUDIT", "warden.audit.service.info")).filter(
        (m) => m.data.event === "config.active" && m.data.nodeId === "allow-2",
      );
      assert.equal((active[0]!.data.details as { node: { exportAllowedEndpoints: string } }).node.exportAllowedEndpoints, `Localhost:1, 127.0.0.1:${pg.port}`);
    } finally {
      await nc.close();
    }
  });

  test("PUT /export of every type with an endpoint: 400 naming the endpoint when no pattern matches; nothing stored", async () => {
    // The attack: a store the operator did not list answers anyone who reaches it directly (the gateway's own API here)...
    const direct = await fetch(`${node.url}/config`);
    assert.equal(direct.status, 200, "reachable directly");
    await direct.text();
    const before = (await call("GET", "/export")).body.exports.length as number;
    // ...but no export may be put in front of it.
    for (const [type, endpoint] of [
      ["postgres", `127.0.0.1:${node.port}`],
      ["postgres", `localhost:${pg.port}`],
      ["mysql", `127.0.0.1:${node.port}`],
      ["fhir", `http://127.0.0.1:${node.port}/config`],
      ["objectstore", `http://127.0.0.1:${node.port}`],
    ] as const) {
      const refused = await call("PUT", "/export", body(type, endpoint, { port: ports[2], ...(type === "fhir" ? { resolverGroup: "fhir-clinical" } : {}) }));
      assert.equal(refused.status, 400, `${type} ${endpoint}: ${JSON.stringify(refused.body)}`);
      assert.equal(refused.body.error.code, "ERR_EXPORT_INVALID");
      assert.match(refused.body.error.message, /is not in the allow-list of backing endpoints .*EXPORT_ALLOWED_ENDPOINTS/);
      assert.deepEqual(refused.body.error.details, [{ path: "endpoint", problem: "not allowed" }]);
    }
    assert.equal((await call("GET", "/export")).body.exports.length, before, "nothing stored");
    const taken = await call("PUT", "/export", body("postgres", `127.0.0.1:${pg.port}`, { port: ports[3] }));
    assert.equal(taken.status, 200, JSON.stringify(taken.body));
    await until("the allowed export answers", () => answers(ports[3]!));
  });
});
