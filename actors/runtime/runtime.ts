import "reflect-metadata"; // before tsyringe is loaded: it refuses to load without the polyfill
import { container as rootContainer, injectable, Lifecycle, type DependencyContainer } from "tsyringe";
import type { NatsConnection } from "@nats-io/transport-node";
import type { Logger } from "pino";
import { Registry } from "prom-client";
import { ActorClient } from "./client";
import { EventLog } from "./event-log";
import { ActorHost } from "./host";
import { Membership } from "./membership";
import { PartitionTable } from "./partition-table";
import { Placement } from "./placement";
import { defaultRetention, provision, type Provisioned, type ProvisionOptions } from "./provision";
import { StateCache } from "./state-cache";
import { Tokens, type RuntimeBuckets } from "./tokens";
import type { ActorDefinition, AnyActorDefinition, AnyHandler, RuntimeOptions } from "./types";

export const defaultRuntimeOptions = {
  partitions: 64,
  heartbeatMs: 1000,
  leaseTtlMs: 4000,
  callTimeoutMs: 5000,
  clockSkewMs: 250,
  activationIdleMs: 10 * 60_000,
} satisfies Omit<RuntimeOptions, "nodeId">;

export interface RuntimeStatus {
  nodeId: string;
  incarnation: string;
  natsConnected: boolean;
  leaseValid: boolean;
  partitions: number;
  ownedPartitions: number;
  /** Partitions whose recorded owner this node believes alive: all of them when the cluster is whole. */
  assignedPartitions: number;
  activations: number;
  actorTypes: string[];
  liveNodes: string[];
}

export interface RuntimeSetup {
  nc: NatsConnection;
  logger: Logger;
  options: Partial<RuntimeOptions> & { nodeId: string };
  provision?: Partial<ProvisionOptions>;
  /** Buckets already provisioned by the caller (e.g. after waiting for JetStream to answer). */
  provisioned?: Provisioned;
  metrics?: Registry;
}

/** What provisioning a node's setup asks for, defaults filled in. */
export function provisionOptions(setup: Pick<RuntimeSetup, "options" | "provision">): ProvisionOptions {
  return {
    replicas: 1,
    partitions: setup.options.partitions ?? defaultRuntimeOptions.partitions,
    auditRetention: defaultRetention.audit,
    traceRetention: defaultRetention.trace,
    ...setup.provision,
  };
}

async function buildContainer(setup: RuntimeSetup): Promise<DependencyContainer> {
  const requested = { ...defaultRuntimeOptions, ...setup.options };
  const { buckets, partitions } = setup.provisioned ?? (await provision(setup.nc, provisionOptions(setup)));
  const options: RuntimeOptions = { ...requested, partitions };
  const container = rootContainer.createChildContainer();
  container.registerInstance(Tokens.Nats, setup.nc);
  container.registerInstance(Tokens.Logger, setup.logger);
  container.registerInstance(Tokens.Options, options);
  container.registerInstance<RuntimeBuckets>(Tokens.Buckets, buckets);
  container.registerInstance(Tokens.Metrics, setup.metrics ?? new Registry());
  for (const service of [PartitionTable, Membership, ActorClient, ActorHost, Placement, EventLog, ActorRuntime]) {
    container.register(service as never, { useClass: service as never }, { lifecycle: Lifecycle.ContainerScoped });
  }
  return container;
}

/**
 * One node of the actor runtime: membership, placement, the host of owned activations, and a
 * client. Built by `startNode()`; stopped by `stop()`, which hands every partition over first.
 */
@injectable()
export class ActorRuntime {
  private stopped = false;
  private readonly caches: StateCache<unknown>[] = [];

  constructor(
    readonly membership: Membership,
    readonly table: PartitionTable,
    readonly host: ActorHost,
    readonly placement: Placement,
    readonly client: ActorClient,
    readonly events: EventLog,
  ) {}

  async start(definitions: readonly AnyActorDefinition[]): Promise<void> {
    for (const definition of definitions) this.host.register(definition);
    await this.table.start();
    await this.table.ready;
    // A stalled membership watch means the partition watch on the same connection is suspect too.
    this.membership.on("stalled", () => this.table.restartWatch());
    await this.membership.start();
    this.host.start();
    this.placement.start();
  }

  /** A cache of one actor type's committed state, told of every change (see StateCache). */
  async cache<S>(definition: ActorDefinition<S, Record<string, AnyHandler<S>>>): Promise<StateCache<S>> {
    const cache = new StateCache<S>(this.host.store.kv, definition, this.host.log);
    await cache.start();
    this.caches.push(cache as StateCache<unknown>);
    return cache;
  }

  status(natsConnected: boolean): RuntimeStatus {
    return {
      nodeId: this.membership.nodeId,
      incarnation: this.membership.incarnation,
      natsConnected,
      leaseValid: this.membership.isLeaseValid(),
      partitions: this.placement.partitionCount,
      ownedPartitions: this.placement.ownedCount(),
      assignedPartitions: this.placement.assignedCount(),
      activations: this.host.activationCount(),
      actorTypes: this.host.registeredTypes(),
      liveNodes: this.membership.activeNodeIds(),
    };
  }

  /** Graceful leave: hand every partition over (draining in-flight calls), then leave the cluster. */
  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    await this.events.flushTraces();
    await this.placement.leave();
    await this.host.stop();
    await this.membership.stop();
    this.table.stop();
    for (const cache of this.caches) cache.stop();
  }
}

/** Provisions JetStream, builds a node's services and starts it. */
export async function startNode(
  setup: RuntimeSetup,
  definitions: readonly AnyActorDefinition[],
): Promise<{ runtime: ActorRuntime; container: DependencyContainer }> {
  const container = await buildContainer(setup);
  const runtime = container.resolve(ActorRuntime);
  await runtime.start(definitions);
  return { runtime, container };
}

/**
 * A caller that hosts no actors: for processes that only send (tests, tools, a separate proxy).
 * It keeps the replicated partition table to route calls.
 */
export async function connectClient(setup: RuntimeSetup): Promise<{ client: ActorClient; table: PartitionTable; close: () => void }> {
  const container = await buildContainer(setup);
  const table = container.resolve(PartitionTable);
  await table.start();
  await table.ready;
  return { client: container.resolve(ActorClient), table, close: () => table.stop() };
}
