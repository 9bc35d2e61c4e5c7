import pino, { type Logger } from "pino";
import type { LogFormat, LogLevel } from "./config";

/**
 * Logs on stdout; every line carries the node id (and, below, the actor address or component).
 * JSON lines by default (for collectors); `pretty` formats them in this thread, synchronously
 * (leaving out the node id: one node per terminal),
 * so a line written just before process.exit is not lost.
 */
export function createLogger(nodeId: string, level: LogLevel, format: LogFormat = "json"): Logger {
  const options = { level, base: { node: nodeId }, timestamp: pino.stdTimeFunctions.isoTime };
  if (format === "json") return pino(options);
  // Loaded only when asked for: a JSON node never loads the formatter.
  const pretty = require("pino-pretty") as typeof import("pino-pretty");
  return pino(options, pretty({ sync: true, colorize: process.stdout.isTTY === true, translateTime: "SYS:HH:MM:ss.l", ignore: "pid,hostname,node" }));
}
