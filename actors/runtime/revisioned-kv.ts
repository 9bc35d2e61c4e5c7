import { performance } from "node:perf_hooks";
import { setTimeout as sleep } from "node:timers/promises";
import type { KV } from "@nats-io/kv";
import { RetryableError, StaleRevisionError } from "./errors";

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
 * No answer from JetStream: a stream leader being elected, a server restarting. A write that
 * timed out may still have been stored; a write answered "no responders" was not.
 */
function isTransient(error: unknown): boolean {
  return /no responders|timeout|timed out|jetstream is not enabled|temporarily unavailable|503|disconnect|reconnect/i.test(String((error as Error)?.message));
}

const firstRetryMs = 25;
const maxRetryMs = 500;

/**
 * JSON values in a KV bucket with compare-and-set on the revision: a write names the revision
 * it was based on and is rejected (StaleRevisionError) when the key has moved on since.
 *
 * While JetStream does not answer, reads and writes are retried until `retryForMs` runs out,
 * then fail with a retryable STATE_UNAVAILABLE. A retried write that finds the key moved on
 * checks whether the entry there is its own earlier attempt (which timed out but was stored).
 */
export class RevisionedKv<T> {
  constructor(readonly kv: KV) {}

  async read(key: string, retryForMs = 0): Promise<Revisioned<T>> {
    const entry = await this.retrying(`reading ${key}`, retryForMs, () => this.kv.get(key));
    if (!entry) return { value: undefined, revision: 0 };
    if (entry.operation !== "PUT") return { value: undefined, revision: entry.revision };
    return { value: entry.json<T>(), revision: entry.revision };
  }

  /** Writes `value` if the key is still at `expectedRevision` (0: never written). Returns the new revision. */
  async write(key: string, value: T, expectedRevision: number, retryForMs = 0): Promise<number> {
    const payload = JSON.stringify(value);
    let attempts = 0;
    try {
      return await this.retrying(`writing ${key}`, retryForMs, () => {
        attempts++;
        // kv.create would also accept a key whose last entry is a delete marker without checking
        // which one; an explicit update against the marker's revision keeps the fence exact.
        return expectedRevision === 0 ? this.kv.create(key, payload) : this.kv.update(key, payload, expectedRevision);
      });
    } catch (error) {
      if (!isWrongLastSequence(error)) throw error;
      if (attempts > 1) {
        const landed = await this.kv.get(key);
        if (landed && landed.operation === "PUT" && landed.revision > expectedRevision && landed.string() === payload) return landed.revision;
      }
      throw new StaleRevisionError(key, expectedRevision, { cause: error });
    }
  }

  /** Deletes the key if it is still at `expectedRevision`. Returns the revision of the delete marker. */
  async remove(key: string, expectedRevision: number, retryForMs = 0): Promise<number> {
    try {
      await this.retrying(`deleting ${key}`, retryForMs, () => this.kv.delete(key, { previousSeq: expectedRevision }));
    } catch (error) {
      if (isWrongLastSequence(error)) throw new StaleRevisionError(key, expectedRevision, { cause: error });
      throw error;
    }
    return (await this.read(key, retryForMs)).revision;
  }

  private async retrying<R>(what: string, retryForMs: number, operation: () => Promise<R>): Promise<R> {
    const until = performance.now() + retryForMs;
    for (let wait = firstRetryMs; ; wait = Math.min(wait * 2, maxRetryMs)) {
      try {
        return await operation();
      } catch (error) {
        if (isWrongLastSequence(error) || !isTransient(error)) throw error;
        const left = until - performance.now();
        if (left <= 0) throw new RetryableError("STATE_UNAVAILABLE", `JetStream did not answer while ${what}; try again`, { cause: error });
        await sleep(Math.min(wait, left));
      }
    }
  }
}
