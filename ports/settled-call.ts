/** Codes that leave a call's outcome unknown (it may still run, or have run), or that say it never started: it may be asked again. */
const askAgainCodes = new Set(["DEADLINE_EXCEEDED", "OUTCOME_UNKNOWN", "EXPIRED_BEFORE_START"]);

/**
 * An idempotent actor call asked again (250 ms, doubling to 2 s apart) while its outcome is unknown
 * (a paused or lost server may still deliver it) or while it reached its actor too late to start
 * (nothing ran), for up to `settleMs`; any other error, or one still unknown after that, is thrown.
 */
export async function settledCall<T>(call: () => Promise<T>, settleMs: number): Promise<T> {
  const settleBy = Date.now() + settleMs;
  for (let wait = 250; ; wait = Math.min(wait * 2, 2000)) {
    try {
      return await call();
    } catch (error) {
      if (!askAgainCodes.has(String((error as { code?: string }).code)) || Date.now() + wait > settleBy) throw error;
      await new Promise((resolve) => setTimeout(resolve, wait));
    }
  }
}
