import { Readable } from "node:stream";

/**
 * The body of a streamedBody route, whose content-type parser hands on the request stream
 * unread: that stream, or undefined when the request has no body (Fastify calls no parser).
 * Anything else means a parser read the body after all: an error, never a body passed on.
 */
export function streamedBody(body: unknown): Readable | undefined {
  if (body === undefined || body instanceof Readable) return body;
  throw new TypeError("a streamed route's body is not the request stream");
}
