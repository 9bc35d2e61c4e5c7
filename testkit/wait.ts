import { connect as connectTcp } from "node:net";

/** Polls `check` every 200 ms until it holds; throws, naming `what`, after `timeoutMs`. */
export async function until(what: string, check: () => Promise<boolean>, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting until ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

/**
 * Retries `attempt` every 200 ms until it succeeds and answers its result; after `timeoutMs` throws its last error.
 * An error `retryable` rejects is thrown at once (e.g. a login the export refused, where only a closed port is worth waiting out).
 */
export async function firstSuccess<T>(attempt: () => Promise<T>, timeoutMs = 20_000, retryable: (error: unknown) => boolean = () => true): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      return await attempt();
    } catch (error) {
      if (!retryable(error) || Date.now() > deadline) throw error;
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  }
}

/** Whether something accepts TCP connections on the loopback port (an export's door is open). */
export const listening = (port: number) =>
  new Promise<boolean>((resolve) => {
    const socket = connectTcp({ host: "127.0.0.1", port }, () => {
      socket.destroy();
      resolve(true);
    });
    socket.on("error", () => resolve(false));
  });
