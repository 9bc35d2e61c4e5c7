import type { NatsConnection } from "@nats-io/transport-node";
import { connectClient } from "../../actors/runtime/runtime";
import type { ActorClient } from "../../actors/runtime/client";
import type { PartitionTable } from "../../actors/runtime/partition-table";
import { connectTo, silentLogger } from "../../testkit/nats";

export interface TestClient {
  nc: NatsConnection;
  client: ActorClient;
  table: PartitionTable;
  close(): Promise<void>;
}

/** A caller that hosts nothing, connected like any outside process would be. */
export async function connectTestClient(natsUrl: string, callTimeoutMs = 10_000): Promise<TestClient> {
  const nc = await connectTo(natsUrl);
  const { client, table, close } = await connectClient({ nc, logger: silentLogger, options: { nodeId: "test-client", callTimeoutMs } });
  return {
    nc,
    client,
    table,
    close: async () => {
      close();
      await nc.close();
    },
  };
}

/** Owners recorded in the partition table, counted per node id. */
export function ownershipCounts(table: PartitionTable, partitions = 64): Map<string, number> {
  const counts = new Map<string, number>();
  for (let p = 0; p < partitions; p++) {
    const owner = table.ownerOf(p)?.owner;
    if (owner) counts.set(owner, (counts.get(owner) ?? 0) + 1);
  }
  return counts;
}

export async function eventually<T>(what: string, check: () => Promise<T | undefined> | T | undefined, timeoutMs = 15_000, everyMs = 100): Promise<T> {
  const until = Date.now() + timeoutMs;
  let last: unknown;
  while (Date.now() < until) {
    try {
      const value = await check();
      if (value !== undefined && value !== false) return value;
    } catch (error) {
      last = error;
    }
    await new Promise((resolve) => setTimeout(resolve, everyMs));
  }
  throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${last ? ` (last error: ${(last as Error).message})` : ""}`);
}
