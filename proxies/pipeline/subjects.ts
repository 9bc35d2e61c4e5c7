import { DiscardPolicy, RetentionPolicy, StorageType } from "@nats-io/jetstream";
import { Kvm, type KV } from "@nats-io/kv";
import { nanos, type NatsConnection } from "@nats-io/transport-node";
import { ensureStream, openBucket } from "../../actors/runtime/provision";

/** A pipeline export's subjects. */
export const PipelineSubjects = {
  /** Request/reply: one record in, its answer back (core NATS). */
  request: (exportId: string) => `warden.pipeline.${exportId}.request`,
  /** The streaming input (JetStream: records published here are never lost). */
  input: (exportId: string) => `warden.pipeline.${exportId}.in`,
  /** The streaming output: one answer per input record, in input order, exactly once. */
  output: (exportId: string) => `warden.pipeline.${exportId}.out`,
} as const;

export const PipelineStreams = {
  input: { name: "WARDEN_PIPELINE_IN", subjects: ["warden.pipeline.*.in"] },
  output: { name: "WARDEN_PIPELINE_OUT", subjects: ["warden.pipeline.*.out"] },
} as const;

/** Pipeline export id -> the last input sequence whose answer is stored on the output subject. */
export const pipelineProgressBucket = "warden_pipeline_progress";

/** How long an answer's message id is remembered on the output stream: a replay after a failover must fall inside it. */
export const pipelineDuplicateWindowMs = 10 * 60_000;

/**
 * The streams and bucket of pipeline exports, created when the first pipeline export is (a
 * cluster without pipelines carries no replicated groups for them). Idempotent.
 */
export async function provisionPipelines(nc: NatsConnection, replicas: number): Promise<KV> {
  const day = 24 * 60 * 60 * 1000;
  const streamDefaults = { retention: RetentionPolicy.Limits, storage: StorageType.File, discard: DiscardPolicy.Old, num_replicas: replicas };
  // Input is purged as its answers are stored; a week covers an export stopped for a while.
  await ensureStream(nc, { ...streamDefaults, name: PipelineStreams.input.name, subjects: [...PipelineStreams.input.subjects], max_age: nanos(7 * day) });
  // The duplicate window is what makes a replay after a failover exactly-once: answers are published with their input's sequence as the message id.
  await ensureStream(nc, {
    ...streamDefaults,
    name: PipelineStreams.output.name,
    subjects: [...PipelineStreams.output.subjects],
    max_age: nanos(7 * day),
    duplicate_window: nanos(pipelineDuplicateWindowMs),
  });
  return openBucket(new Kvm(nc), pipelineProgressBucket, replicas);
}
