import { readdirSync, readFileSync } from "node:fs";
import { setTimeout as sleep } from "node:timers/promises";

/**
 * Resolves once every thread of a process is stopped (Linux /proc). SIGSTOP takes effect only when
 * the process is next scheduled: on a busy machine it can still answer messages for milliseconds
 * after kill() returned, which a test that holds a message in transit must not allow.
 */
export async function untilStopped(pid: number, timeoutMs = 5000): Promise<void> {
  const until = Date.now() + timeoutMs;
  while (!everyThreadStopped(pid)) {
    if (Date.now() > until) throw new Error(`process ${pid} did not stop within ${timeoutMs} ms`);
    await sleep(1);
  }
}

function everyThreadStopped(pid: number): boolean {
  return readdirSync(`/proc/${pid}/task`).every((thread) => {
    const state = readFileSync(`/proc/${pid}/task/${thread}/stat`, "utf8").split(") ")[1]![0];
    return state === "T" || state === "t";
  });
}
