import pino, { type Logger } from "pino";
import type { LogLevel } from "./config";

/** JSON logs on stdout; every line carries the node id (and, below, the actor address or component). */
export function createLogger(nodeId: string, level: LogLevel): Logger {
  return pino({ level, base: { node: nodeId }, timestamp: pino.stdTimeFunctions.isoTime });
}
