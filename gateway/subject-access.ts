import type { FastifyRequest } from "fastify";
import { permits } from "../auth/authorization";
import { HttpError } from "../http/errors";

/**
 * Who may read and act on a user's report (docs/subject-rights.md): anyone where authorization
 * is not enforced; an admin of `user`; otherwise only the user the caller is (by the security
 * file's identity mapping), for themselves or as the guardian named in `actorId` (the service
 * then checks the guardian link). Returns why not, or undefined when allowed.
 */
export function subjectAccessRefusal(request: FastifyRequest, userId: string, actorId: string | undefined): HttpError | undefined {
  const rights = request.rights;
  if (!rights || rights.all || permits(rights, "user", "admin")) return undefined;
  const acting = actorId ?? userId;
  if (request.callerUserId !== undefined && request.callerUserId === acting) return undefined;
  return new HttpError(
    "ERR_USER_NOT_YOURS",
    request.callerUserId === undefined
      ? `'${rights.subject}' is no user by the identity mapping and does not hold user:admin`
      : `'${rights.subject}' is user ${request.callerUserId}: it reads and acts on its own report (or as guardian, actorId=${request.callerUserId}) only`,
  );
}
