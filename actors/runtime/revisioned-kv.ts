import { performance } from "node:perf_hooks";
import { setTimeout as sleep } from "node:timers/promises";
import type { KV } from "@nats-io/kv";
import { FatalError, RetryableError, StaleRevisionError } from "./errors";

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

/** JetStream did not take the request at all (no stream leader yet, server restarting): nothing was stored. */
function notDelivered(error: unknown): boolean {
  return /no responders|jetstream is not enabled|503/i.test(String((error as Error)?.message));
}

/** No answer in time: a write may or may not have been stored; a read can simply be asked again. */
function timedOut(error: unknown): boolean {
  return /timeout|timed out/i.test(String((error as Error)?.message));
}

const firstRetryMs = 25;
const maxRetryMs = 500;

/** Checked before every write attempt: throws when the writer may no longer write. */
export type WriteGuard = () => void;

/**
 * JSON values in a KV bucket with compare-and-set on the revision: a write names the revision
 * it was based on and is rejected (StaleRevisionError) when the key has moved on since.
 *
 * While JetStream does not take requests (a stream leader being elected), reads and writes are
 * retried until `retryForMs` runs out, then fail with a retryable STATE_UNAVAILABLE. A write
 * that timed out is never sent again: it may have been stored, so it fails with OUTCOME_UNKNOWN
 * and the writer must read the key again before anything else.
 */
export class RevisionedKv<T> {
  constructor(readonly kv: KV) {}

  async read(key: string, retryForMs = 0): Promise<Revisioned<T>> {
    const entry = await this.retrying(
      `reading ${key}`,
      retryForMs,
      (error) => notDelivered(error) || timedOut(error),
      () => this.kv.get(key),
    );
    if (!entry) return { value: undefined, revision: 0 };
    if (entry.operation !== "PUT") return { value: undefined, revision: entry.revision };
    return { value: entry.json<T>(), revision: entry.revision };
  }

  /** Writes `value` if the key is still at `expectedRevision` (0: never written). Returns the new revision. */
  async write(key: string, value: T, expectedRevision: number, retryForMs = 0, guard?: WriteGuard): Promise<number> {
    const payload = JSON.stringify(value);
    return this.writing(key, expectedRevision, retryForMs, guard, () =>
      // kv.create would also accept a key whose last entry is a delete marker without checking
      // which one; an explicit update against the marker's revision keeps the fence exact.
      expectedRevision === 0 ? this.kv.create(key, payload) : this.kv.update(key, payload, expectedRevision),
    );
  }

  /** Deletes the key if it is still at `expectedRevision`. Returns the revision of the delete marker. */
  async remove(key: string, expectedRevision: number, retryForMs = 0, guard?: WriteGuard): Promise<number> {
    await this.writing(key, expectedRevision, retryForMs, guard, () => this.kv.delete(key, { previousSeq: expectedRevision }));
    // Only the key's owner writes it, so the newest entry is our marker unless someone moved on.
    const after = await this.kv.get(key);
    if (!after || after.operation === "PUT") throw new StaleRevisionError(key, expectedRevision);
    return after.revision;
  }

  private async writing<R>(key: string, expectedRevision: number, retryForMs: number, guard: WriteGuard | undefined, operation: () => Promise<R>): Promise<R> {
    try {
      return await this.retrying(`writing ${key}`, retryForMs, notDelivered, () => {
        guard?.();
        return operation();
      });
    } catch (error) {
      if (isWrongLastSequence(error)) throw new StaleRevisionError(key, expectedRevision, { cause: error });
      if (timedOut(error)) throw new FatalError("OUTCOME_UNKNOWN", `JetStream did not confirm writing ${key}: it may or may not be stored`, { cause: error });
      throw error;
    }
  }

  private async retrying<R>(what: string, retryForMs: number, retryable: (error: unknown) => boolean, operation: () => Promise<R>): Promise<R> {
    const until = performance.now() + retryForMs;
    for (let wait = firstRetryMs; ; wait = Math.min(wait * 2, maxRetryMs)) {
      try {
        return await operation();
      } catch (error) {
        if (isWrongLastSequence(error) || !retryable(error)) throw error;
        const left = until - performance.now();
        if (left <= 0) throw new RetryableError("STATE_UNAVAILABLE", `JetStream did not answer while ${what}; try again`, { cause: error });
        await sleep(Math.min(wait, left));
      }
    }
  }
}
