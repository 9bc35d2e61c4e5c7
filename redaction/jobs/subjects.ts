import { DiscardPolicy, RetentionPolicy, StorageType } from "@nats-io/jetstream";
import { nanos, type NatsConnection } from "@nats-io/transport-node";
import { ensureStream } from "../../actors/runtime/provision";

/** Redaction jobs' documents on JetStream: each job's upload and each attempt's output, in chunks. */
export const DocumentSubjects = {
  /** A redaction job's uploaded document, in chunks. */
  input: (job: string) => `warden.redact.${job}.in`,
  /** One attempt's redacted document, in chunks. */
  output: (job: string, attempt: number) => `warden.redact.${job}.out.${attempt}`,
  outputs: (job: string) => `warden.redact.${job}.out.>`,
  job: (job: string) => `warden.redact.${job}.>`,
} as const;

export const documentStream = { name: "WARDEN_REDACT", subjects: ["warden.redact.>"] } as const;

/** The documents' stream, created or updated at every node start (idempotent). */
export async function provisionDocuments(nc: NatsConnection, replicas: number, retentionHours: number): Promise<void> {
  // No size limit and no discard: a running job's document must never be dropped to make room; a day past the jobs' retention is the backstop.
  await ensureStream(nc, {
    retention: RetentionPolicy.Limits,
    storage: StorageType.File,
    discard: DiscardPolicy.Old,
    num_replicas: replicas,
    name: documentStream.name,
    subjects: [...documentStream.subjects],
    max_age: nanos((retentionHours + 24) * 3_600_000),
  });
}
