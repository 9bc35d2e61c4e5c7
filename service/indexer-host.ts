import { join } from "node:path";
import { Worker } from "node:worker_threads";
import type { Logger } from "pino";
import { partitionOf } from "../actors/runtime/addressing";
import type { ActorRuntime } from "../actors/runtime/runtime";
import type { IndexerThreadMessage, IndexerThreadSetup } from "./indexer-thread";
import { withoutSemiSpaceFlag } from "./node-flags";

/** The indexer runs where this (virtual) actor's partition lives: one indexer in the cluster, moved like any actor on failover. */
const indexerAddress = { type: "decision-index", id: "trace" };
const checkEveryMs = 250;
/**
 * The indexer thread's young generation: two 2 MiB semi-spaces (V8 takes a third of this for one and rounds it to a power of
 * two). Its messages are small and short-lived. Under the event loop's semi-space flag it grew to 32 MiB committed (46 MB of
 * heap) while a large document's decisions were indexed: the node's peak RSS (bench/RESULTS.md, branch objmem3).
 */
const indexerYoungGenerationMb = 6;

/**
 * The node's side of the decision indexer: starts its thread, and tells it whether this node is
 * the indexer (it owns the indexer's partition and its lease holds), checked every 250 ms.
 */
export class IndexerHost {
  private timer?: NodeJS.Timeout;
  private told?: boolean;

  private constructor(
    private readonly worker: Worker,
    private readonly runtime: ActorRuntime,
  ) {}

  static async start(setup: IndexerThreadSetup, runtime: ActorRuntime, log: Logger): Promise<IndexerHost> {
    const restoreFlag = withoutSemiSpaceFlag();
    const worker = new Worker(join(__dirname, "indexer-thread.js"), {
      workerData: setup,
      resourceLimits: { maxYoungGenerationSizeMb: indexerYoungGenerationMb },
    });
    worker.once("online", restoreFlag);
    worker.once("exit", restoreFlag);
    worker.on("error", (error) => log.error({ err: error }, "decision indexer thread failed; reports answer 503 until the node restarts"));
    await new Promise<void>((resolve, reject) => {
      worker.once("message", () => resolve());
      worker.once("error", reject);
      worker.once("exit", (code) => reject(new Error(`the decision indexer thread exited (${code}) before it was ready`)));
    });
    const host = new IndexerHost(worker, runtime);
    host.timer = setInterval(() => host.check(), checkEveryMs);
    host.check();
    return host;
  }

  private check(): void {
    const partition = partitionOf(indexerAddress.type, indexerAddress.id, this.runtime.placement.partitionCount);
    const indexer = this.runtime.host.serves(partition) && this.runtime.membership.isLeaseValid();
    if (indexer === this.told) return;
    this.told = indexer;
    this.worker.postMessage({ indexer } satisfies IndexerThreadMessage);
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    const exited = new Promise((resolve) => this.worker.once("exit", resolve));
    this.worker.postMessage({ stop: true } satisfies IndexerThreadMessage);
    await Promise.race([exited, new Promise((resolve) => setTimeout(resolve, 5000))]);
    await this.worker.terminate();
  }
}
