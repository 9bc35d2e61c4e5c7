import { jetstreamManager, RetentionPolicy, StorageType, DiscardPolicy, type StreamConfig } from "@nats-io/jetstream";
import { Kvm, type KV } from "@nats-io/kv";
import { nanos, type NatsConnection } from "@nats-io/transport-node";
import { Buckets, Streams } from "./addressing";
import type { RuntimeBuckets } from "./tokens";

export interface ProvisionOptions {
  /** JetStream replicas of every bucket and stream: 1 on a single server, 3 on a NATS cluster. */
  replicas: number;
  /** Partition count used when this is the cluster's first start; afterwards the stored count wins. */
  partitions: number;
  auditRetention: { maxAgeDays: number; maxBytes: number };
  traceRetention: { maxAgeDays: number; maxBytes: number };
}

export const defaultRetention = {
  audit: { maxAgeDays: 365, maxBytes: 1024 ** 3 },
  trace: { maxAgeDays: 30, maxBytes: 4 * 1024 ** 3 },
  documentHours: 7 * 24,
};

/** Creates a key-value bucket, or opens it as it is. */
export async function openBucket(kvm: Kvm, name: string, replicas: number): Promise<KV> {
  try {
    return await kvm.create(name, { history: 1, replicas });
  } catch (error) {
    // Exists with other settings (e.g. created by a node with another replica count): use it as it is. Created by another
    // node at the same moment, nats-server 2.9.10 may say "subjects overlap with an existing stream": open it too (open
    // fails if no bucket of this name exists, a real conflict).
    if (/already in use|exists|subjects overlap/i.test(String((error as Error).message))) return kvm.open(name);
    throw error;
  }
}

/** Creates a stream, or brings an existing one to this configuration. */
export async function ensureStream(nc: NatsConnection, config: Partial<StreamConfig> & { name: string }): Promise<void> {
  const jsm = await jetstreamManager(nc);
  try {
    await jsm.streams.add(config);
  } catch (error) {
    // Another node creating the same stream at the same moment: nats-server 2.9.10 may answer "subjects overlap with an
    // existing stream" (the other's, being made) rather than "already in use". Either way the stream of this name is updated;
    // an overlap with a stream of another name is a real conflict and stands.
    const message = String((error as Error).message);
    if (!/already in use/i.test(message) && !(/subjects overlap/i.test(message) && (await streamExists(jsm, config.name)))) throw error;
    await jsm.streams.update(config.name, config);
  }
}

async function streamExists(jsm: Awaited<ReturnType<typeof jetstreamManager>>, name: string): Promise<boolean> {
  try {
    await jsm.streams.info(name);
    return true;
  } catch {
    return false;
  }
}

export interface Provisioned {
  buckets: RuntimeBuckets;
  /** The cluster's partition count (fixed at its first start). */
  partitions: number;
}

/** Creates (or opens) every bucket and stream the runtime uses. Idempotent: safe on every start of every node, and to retry. */
export async function provision(nc: NatsConnection, options: ProvisionOptions): Promise<Provisioned> {
  const kvm = new Kvm(nc);
  const [nodes, partitionsBucket, state, meta] = await Promise.all([
    openBucket(kvm, Buckets.nodes, options.replicas),
    openBucket(kvm, Buckets.partitions, options.replicas),
    openBucket(kvm, Buckets.state, options.replicas),
    openBucket(kvm, Buckets.meta, options.replicas),
  ]);
  let partitions = options.partitions;
  try {
    await meta.create("partitions", String(options.partitions));
  } catch (error) {
    const stored = await meta.get("partitions");
    // Nothing stored: the create failed for another reason (JetStream still electing its leader); the caller retries.
    if (stored?.operation !== "PUT") throw error;
    partitions = Number(stored.string());
    if (!Number.isInteger(partitions) || partitions < 1) throw new Error(`the cluster's stored partition count '${stored.string()}' is invalid`);
  }
  const day = 24 * 60 * 60 * 1000;
  const streamDefaults = { retention: RetentionPolicy.Limits, storage: StorageType.File, discard: DiscardPolicy.Old, num_replicas: options.replicas };
  await ensureStream(nc, {
    ...streamDefaults,
    // Full, the audit stream refuses new records rather than drop the oldest: a flood cannot push the history out (writes fail closed instead).
    discard: DiscardPolicy.New,
    name: Streams.audit.name,
    subjects: [...Streams.audit.subjects],
    max_age: nanos(options.auditRetention.maxAgeDays * day),
    max_bytes: options.auditRetention.maxBytes,
  });
  await ensureStream(nc, {
    ...streamDefaults,
    name: Streams.trace.name,
    subjects: [...Streams.trace.subjects],
    max_age: nanos(options.traceRetention.maxAgeDays * day),
    max_bytes: options.traceRetention.maxBytes,
  });
  return { buckets: { nodes, partitions: partitionsBucket, state }, partitions };
}
