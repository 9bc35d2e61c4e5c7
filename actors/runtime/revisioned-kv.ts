import type { KV } from "@nats-io/kv";
import { StaleRevisionError } from "./errors";

/** JetStream's answers when the expected last sequence of a subject does not match. */
const WRONG_LAST_SEQUENCE = new Set([10071, 10164]);

export interface Revisioned<T> {
  /** undefined when the key has never been written or was deleted */
  value: T | undefined;
  /** 0 when the key has never been written; otherwise the revision of its last entry (a delete marker included) */
  revision: number;
}

function isWrongLastSequence(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return WRONG_LAST_SEQUENCE.has(code as number) || /wrong last sequence/i.test(String((error as Error)?.message));
}

/**
 * JSON values in a KV bucket with compare-and-set on the revision: a write names the revision
 * it was based on and is rejected (StaleRevisionError) when the key has moved on since.
 */
export class RevisionedKv<T> {
  constructor(readonly kv: KV) {}

  async read(key: string): Promise<Revisioned<T>> {
    const entry = await this.kv.get(key);
    if (!entry) return { value: undefined, revision: 0 };
    if (entry.operation !== "PUT") return { value: undefined, revision: entry.revision };
    return { value: entry.json<T>(), revision: entry.revision };
  }

  /** Writes `value` if the key is still at `expectedRevision` (0: never written). Returns the new revision. */
  async write(key: string, value: T, expectedRevision: number): Promise<number> {
    const payload = JSON.stringify(value);
    try {
      // kv.create would also accept a key whose last entry is a delete marker without checking
      // which one; an explicit update against the marker's revision keeps the fence exact.
      return expectedRevision === 0 ? await this.kv.create(key, payload) : await this.kv.update(key, payload, expectedRevision);
    } catch (error) {
      if (isWrongLastSequence(error)) {
        throw new StaleRevisionError(key, expectedRevision, { cause: error });
      }
      throw error;
    }
  }

  /** Deletes the key if it is still at `expectedRevision`. Returns the revision of the delete marker. */
  async remove(key: string, expectedRevision: number): Promise<number> {
    try {
      await this.kv.delete(key, { previousSeq: expectedRevision });
    } catch (error) {
      if (isWrongLastSequence(error)) throw new StaleRevisionError(key, expectedRevision, { cause: error });
      throw error;
    }
    return (await this.read(key)).revision;
  }
}
