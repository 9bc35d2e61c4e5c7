import { createServer as createHttpServer, type IncomingMessage, type Server, type ServerOptions, type ServerResponse } from "node:http";
import { createServer as createHttpsServer } from "node:https";

/**
 * Limits of one HTTP listener (the gateway, an HTTP export door). Fastify turns Node's request
 * and connection timeouts off; without these a client that sends a header a byte at a time
 * (slowloris), or opens sockets and says nothing, holds them for ever. 0 turns a timeout off.
 */
export interface HttpListenerLimits {
  /** A request's headers must arrive whole within this (slow headers are cut). */
  headersTimeoutMs: number;
  /** A request must arrive whole, body included, within this; 0 for doors that stream request bodies for as long as they flow. */
  requestTimeoutMs: number;
  /** An idle kept-alive connection is closed after this. */
  keepAliveTimeoutMs: number;
  /** A connection on which nothing is received or sent for this long is closed (a stalled body, a silent socket). */
  idleTimeoutMs: number;
  /** Connections open at once; further ones are closed as they arrive, and counted. */
  maxConnections: number;
}

/** The defaults (docs/operations.md): room for a large document upload, none for a silent client. */
export const defaultHttpListenerLimits: HttpListenerLimits = {
  headersTimeoutMs: 10_000,
  requestTimeoutMs: 300_000,
  keepAliveTimeoutMs: 5_000,
  idleTimeoutMs: 60_000,
  maxConnections: 1_000,
};

/** Limits of a door that streams request bodies (NDJSON): no whole-request deadline, the idle timeout cuts a stall. */
export function streamingLimits(limits: HttpListenerLimits): HttpListenerLimits {
  return { ...limits, requestTimeoutMs: 0 };
}

type Handler = (request: IncomingMessage, response: ServerResponse) => void;

export interface ListenerServerOptions {
  /** TLS server authentication: PEM certificate chain and key; absent: plain HTTP. */
  tls?: { cert: Buffer; key: Buffer };
  /** Called with the remote address of each connection refused for being over `maxConnections`. */
  onRefused?: (remoteAddress: string | undefined) => void;
}

/**
 * Fastify's `serverFactory` for a listener with these limits: the one place every HTTP door
 * gets them. Use `Fastify({ serverFactory: limitedServerFactory(limits, { tls }), ... })`
 * (without Fastify's own `https` option, which the factory replaces).
 */
export function limitedServerFactory(limits: HttpListenerLimits, options: ListenerServerOptions = {}): (handler: Handler) => Server {
  return (handler) => {
    const serverOptions: ServerOptions = {
      headersTimeout: limits.headersTimeoutMs,
      requestTimeout: limits.requestTimeoutMs,
      keepAliveTimeout: limits.keepAliveTimeoutMs,
      // Node checks the two timeouts above on this interval (30 s by default): a 10 s limit would hold up to 40 s.
      connectionsCheckingInterval: Math.max(250, Math.min(1_000, limits.headersTimeoutMs / 4)),
    };
    const server = options.tls
      ? createHttpsServer({ ...serverOptions, cert: options.tls.cert, key: options.tls.key }, handler)
      : createHttpServer(serverOptions, handler);
    server.maxConnections = limits.maxConnections;
    // A silent or stalled connection (0: never); with no 'timeout' listener Node destroys it.
    server.setTimeout(limits.idleTimeoutMs);
    server.on("drop", (data?: { remoteAddress?: string }) => options.onRefused?.(data?.remoteAddress));
    return server;
  };
}

/** The listener limits as read from settings: every problem named, nothing silently adjusted. */
export function checkListenerLimits(limits: HttpListenerLimits): string[] {
  const problems: string[] = [];
  if (limits.maxConnections < 1) problems.push("maxConnections must be at least 1");
  if (limits.headersTimeoutMs < 1) problems.push("the headers timeout cannot be off");
  if (limits.requestTimeoutMs > 0 && limits.headersTimeoutMs > limits.requestTimeoutMs)
    problems.push("the headers timeout must not exceed the request timeout");
  return problems;
}
