import { JetStreamApiCodes, JetStreamApiError } from "@nats-io/jetstream";
import { Kvm, type KV } from "@nats-io/kv";
import type { NatsConnection } from "@nats-io/transport-node";
import { sha256Hex } from "./cloud-signature";
import type { ReplayGuard } from "./types";

/** JetStream's answers to a create of a key that already holds a value. */
const keyExists = new Set<number>([JetStreamApiCodes.StreamWrongLastSequence, JetStreamApiCodes.StreamWrongLastSequenceUnknown]);

/**
 * Cluster-wide "seen before" on a JetStream KV bucket: the first `create` of a key wins, every
 * later one fails with a wrong-last-sequence answer. The bucket's max age forgets keys after
 * `maxAgeMs`; a bucket-wide age rather than per-message TTLs, which nats-server 2.9 lacks.
 */
export class KvReplayGuard implements ReplayGuard {
  static readonly bucket = "warden_auth_replay";
  /** Longer than the cloud verifier's 10-minute window, so a key outlives every chance to replay it. */
  static readonly maxAgeMs = 11 * 60_000;

  private constructor(
    private readonly kv: KV,
    private readonly maxAgeMs: number,
  ) {}

  /** Creates the bucket, or opens it when it exists; rejects when an existing bucket keeps keys too short a time. */
  static async open(nc: NatsConnection, options: { replicas: number }): Promise<KvReplayGuard> {
    const kvm = new Kvm(nc);
    let kv: KV;
    try {
      kv = await kvm.create(KvReplayGuard.bucket, { history: 1, ttl: KvReplayGuard.maxAgeMs, replicas: options.replicas });
    } catch (error) {
      // Exists with other settings (another replica count): use it if it still remembers long enough.
      if (!/already in use|exists/i.test(String((error as Error).message))) throw error;
      kv = await kvm.open(KvReplayGuard.bucket);
    }
    const { ttl } = await kv.status();
    // 0 is "keep for ever": safe, though the bucket then only grows.
    const maxAgeMs = ttl === 0 ? Number.POSITIVE_INFINITY : ttl;
    if (maxAgeMs < KvReplayGuard.maxAgeMs)
      throw new Error(`KV bucket ${KvReplayGuard.bucket} keeps keys ${ttl} ms, less than the ${KvReplayGuard.maxAgeMs} ms the replay guard needs`);
    return new KvReplayGuard(kv, maxAgeMs);
  }

  async firstUse(key: string, windowMs: number): Promise<boolean> {
    if (windowMs > this.maxAgeMs) throw new Error(`a ${windowMs} ms replay window is longer than the ${this.maxAgeMs} ms the bucket remembers`);
    // Hex SHA-256: a valid KV key token whatever `key` holds, and of fixed length.
    const token = sha256Hex(key);
    try {
      await this.kv.create(token, "");
      return true;
    } catch (error) {
      if (error instanceof JetStreamApiError && keyExists.has(error.code)) return false;
      throw error;
    }
  }
}
