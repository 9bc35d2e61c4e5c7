import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { createServer, type Server } from "node:net";
import { setTimeout as sleep } from "node:timers/promises";
import type { NatsConnection } from "@nats-io/transport-node";
import type { AuditRecord } from "../../actors/runtime/event-log";
import type { NatsServerProcess } from "../../service/nats-server";
import { realisticPolicy } from "../../testkit/policy";
import { call as request } from "../../testkit/http";
import { connectTo, startNats, storedMessages } from "../../testkit/nats";
import { NodeProcess } from "../../testkit/node-process";
import { freePort } from "../../testkit/ports";
import { listening, until } from "../../testkit/wait";

describe("an export port that keeps failing to open is audited when it starts failing, not at every retry", () => {
  let nats: NatsServerProcess;
  let node: NodeProcess;
  let nc: NatsConnection;
  let blocker: Server | undefined;
  const call = (method: string, path: string, body?: unknown) => request(node, method, path, body);

  before(async () => {
    nats = await startNats();
    node = await NodeProcess.start({ nodeId: "port-failed-1", natsUrl: nats.url });
    nc = await connectTo(nats.url);
    assert.equal((await call("PUT", "/config", realisticPolicy())).status, 200);
  });

  after(async () => {
    await new Promise<void>((resolve) => (blocker ? blocker.close(() => resolve()) : resolve()));
    await nc?.close();
    await node?.stop();
    await nats?.stop();
  });

  test("a port held by another program: one port.failed over several retries (every 5 s), then the export serves once it is free", async () => {
    const port = await freePort();
    blocker = createServer();
    await new Promise<void>((resolve) => blocker!.listen(port, "127.0.0.1", () => resolve()));
    const created = await call("PUT", "/export", {
      type: "pipeline",
      resolverGroup: "users-table",
      metadata: { type: "platformUse", purposeId: "service" },
      port,
    });
    assert.equal(created.status, 200, JSON.stringify(created.body));
    const id = created.body.id as string;
    const failures = async () =>
      (await storedMessages<AuditRecord>(nc, "WARDEN_AUDIT", "warden.audit.pipeline.warn"))
        .map(({ data }) => data)
        .filter((record) => record.event === "port.failed" && record.details?.exportId === id);
    await until("the first failure is audited", async () => (await failures()).length > 0, 15_000);
    // Three more tries at least (one every 5 s), all for the same reason.
    await sleep(16_000);
    const records = await failures();
    assert.equal(records.length, 1, `one record, not one per try: ${records.length}`);
    assert.equal(records[0]!.details!.error, "EADDRINUSE");
    const servingError = (await call("GET", `/export?id=${id}`)).body.servingError as string | null;
    assert.match(servingError ?? "", /in use|EADDRINUSE/, "the export says why it is not served");
    await new Promise<void>((resolve) => blocker!.close(() => resolve()));
    blocker = undefined;
    await until("the export listens once the port is free", () => listening(port), 15_000);
  });
});
