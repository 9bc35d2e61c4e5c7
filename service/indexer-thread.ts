import { parentPort, workerData } from "node:worker_threads";
import { connect } from "@nats-io/transport-node";
import type { NodeConfig } from "./config";
import { createLogger } from "./logger";
import { natsClientOptions } from "./nats-client-options";
import { DecisionIndexer } from "../rights/decision-indexer";
import { IndexBucket } from "../rights/index-bucket";

/** What the node's thread hands the indexer's thread: how to reach NATS as the node does, and how to log. */
export interface IndexerThreadSetup {
  config: NodeConfig;
  embeddedToken: string | undefined;
  urls: string[];
}

/** Messages from the node's thread: whether this node is the indexer now, or stop. */
export type IndexerThreadMessage = { indexer: boolean } | { stop: true };

/**
 * The decision indexer's own thread (docs/subject-rights.md): parsing and folding every trace
 * record runs here, off the event loop that answers decisions. It has its own NATS connection,
 * made with the node's credentials.
 */
async function main(): Promise<void> {
  const setup = workerData as IndexerThreadSetup;
  // The node's own format (JSON lines, or pretty at a terminal), so this thread's lines read as the node's.
  const log = createLogger(setup.config.nodeId, setup.config.logLevel, setup.config.logFormat).child({ component: "decision-index" });
  const nc = await connect({
    ...natsClientOptions(setup.config, setup.embeddedToken),
    servers: setup.urls,
    name: `warden-${setup.config.nodeId}-decision-index`,
    maxReconnectAttempts: -1,
    reconnectTimeWait: 500,
    noAsyncTraces: true,
  });
  const bucket = await IndexBucket.open(nc, setup.config.jsReplicas);
  let indexer = false;
  const folding = new DecisionIndexer(nc, bucket, log, () => indexer);
  folding.start();
  parentPort!.on("message", (message: IndexerThreadMessage) => {
    if ("indexer" in message) indexer = message.indexer;
    else
      void folding
        .stop()
        .then(() => nc.drain())
        .finally(() => parentPort!.close());
  });
  parentPort!.postMessage({ ready: true });
}

void main().catch((error: unknown) => {
  process.stderr.write(`decision indexer thread failed: ${(error as Error).stack ?? String(error)}\n`);
  process.exit(1);
});
