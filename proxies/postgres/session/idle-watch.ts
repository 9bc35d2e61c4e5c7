/** How many checks per idle timeout: a silent session ends between the timeout and a quarter more. */
const checksPerTimeout = 4;

/**
 * Ends a session with no traffic either way for the idle timeout. A coarse check a few times per
 * timeout instead of a socket timeout: `socket.setTimeout` re-arms its timer on every read and
 * write, which cost the prepared pgbench run about 5% of its transactions. Traffic only sets a flag.
 */
export class IdleWatch {
  /** Set by every read from and write to the client; cleared by each check. */
  traffic = true;
  private silentChecks = 0;
  private readonly timer: NodeJS.Timeout;

  constructor(idleMs: number, expired: () => void) {
    this.timer = setInterval(() => {
      if (this.traffic) {
        this.traffic = false;
        this.silentChecks = 0;
      } else if (++this.silentChecks >= checksPerTimeout) {
        this.stop();
        expired();
      }
    }, idleMs / checksPerTimeout);
    this.timer.unref();
  }

  stop(): void {
    clearInterval(this.timer);
  }
}
