import type { FastifyRequest } from "fastify";
import type { Requester } from "./types";

/** Who made a request, for history and audit. Authentication (issue 7) will set it; until then every request is anonymous. */
export function requester(_request: FastifyRequest): Requester {
  return "anonymous";
}
