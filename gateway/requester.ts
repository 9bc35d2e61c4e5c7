import type { FastifyRequest } from "fastify";
import type { Requester } from "../api/types";

/** Who made a request, for history and audit: the verified subject, or "anonymous" where authentication is not enforced. */
export function requester(request: FastifyRequest): Requester {
  return request.access?.subject ?? "anonymous";
}
