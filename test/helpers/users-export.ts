import assert from "node:assert/strict";
import type { Client } from "pg";
import type { NatsServerProcess } from "../../service/nats-server";
import { call } from "../../testkit/http";
import { startNats } from "../../testkit/nats";
import { NodeProcess } from "../../testkit/node-process";
import { freePort } from "../../testkit/ports";
import { PostgresServer } from "../../testkit/postgres";
import { createPopulation } from "../fixtures/population";
import { createAppDatabase, populationHba } from "../fixtures/postgres-population";
import { eventually } from "./client";

/** A real PostgreSQL with the test population, a nats-server, a node, and a PostgreSQL export of `users-table` in front. */
export interface UsersExportStack {
  pg: PostgresServer;
  nats: NatsServerProcess;
  node: NodeProcess;
  exportPort: number;
  exportId: string;
  stop(): Promise<void>;
}

export interface UsersExportOptions {
  nodeId: string;
  env: Record<string, string>;
  policy: unknown;
  /** More tables or grants in the app database before the node starts. */
  prepare?(pg: PostgresServer): void;
  /** A client logged in through the export on this port: the export is open once one succeeds. */
  connect(port: number): Promise<Client>;
}

export async function startUsersExport(options: UsersExportOptions): Promise<UsersExportStack> {
  const pg = await PostgresServer.start({ hba: populationHba });
  createAppDatabase(pg);
  options.prepare?.(pg);
  const nats = await startNats();
  const node = await NodeProcess.start({ nodeId: options.nodeId, natsUrl: nats.url, env: options.env });
  const request = (method: string, path: string, body?: unknown) => call(node, method, path, body);
  assert.equal((await request("PUT", "/config", options.policy)).status, 200);
  await createPopulation(request);
  const exportPort = await freePort();
  const created = await request("PUT", "/export", {
    type: "postgres",
    endpoint: `127.0.0.1:${pg.port}`,
    resolverGroup: "users-table",
    metadata: { type: "platformUse", purposeId: "service" },
    port: exportPort,
  });
  assert.equal(created.status, 200, JSON.stringify(created.body));
  await eventually(
    "the export accepts connections",
    async () =>
      await options.connect(exportPort).then(
        (c) => c.end().then(() => true),
        () => false,
      ),
  );
  const stop = async () => {
    await node.stop();
    await nats.stop();
    await pg.stop();
  };
  return { pg, nats, node, exportPort, exportId: created.body.id as string, stop };
}
