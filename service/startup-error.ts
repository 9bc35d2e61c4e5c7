/**
 * A missing or broken prerequisite (a busy port, no nats-server, an unreachable NATS, a bad
 * setting). Printed as one line saying what is wrong and how to fix it; never a stack trace.
 */
export class StartupError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "StartupError";
  }
}
