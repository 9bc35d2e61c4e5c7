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
export async function provisionDocuments(nc: NatsConnection, replicas: number, retentionHours: number, maxBytes: number): Promise<void> {
  // Full at maxBytes, the stream refuses new chunks (discard new): a stored document is never dropped to make room; a day past the jobs' retention is the backstop.
  await ensureStream(nc, {
    retention: RetentionPolicy.Limits,
    storage: StorageType.File,
    discard: DiscardPolicy.New,
    max_bytes: maxBytes,
    num_replicas: replicas,
    name: documentStream.name,
    subjects: [...documentStream.subjects],
    max_age: nanos((retentionHours + 24) * 3_600_000),
  }).catch((error: Error) => {
    // JetStream reserves max_bytes on its servers: say which setting asked for too much.
    if (/insufficient (storage )?resources/i.test(error.message))
      throw new Error(
        `JetStream cannot reserve ${maxBytes} bytes for redaction documents (REDACT_STORAGE_MAX_BYTES): lower it, or give nats-server more storage (${error.message})`,
        { cause: error },
      );
    throw error;
  });
}
