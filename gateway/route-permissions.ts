import type { FastifyRequest } from "fastify";
import type { RequiredPermission } from "../http/authentication";
import { componentOfRequest } from "./route-components";
import type { RootPath } from "./types";

/**
 * The permission a gateway request needs (docs/authorization.md). A route may name its own in
 * `config: { permission }`; otherwise it follows from the root and the method: the decision
 * API queries, the redaction API acts on the caller's own jobs, and elsewhere GET and HEAD read
 * while PUT, POST and DELETE write. Requests outside the components (health, metrics, docs) need none.
 */
export function permissionOfRequest(request: FastifyRequest): RequiredPermission | undefined {
  const config = request.routeOptions.config;
  if (config?.permission) return config.permission;
  // The subject-rights routes decide for themselves: one's own report needs no permission, another's needs user:admin (gateway/subject-access.ts).
  if (config?.subjectRights) return undefined;
  const component = componentOfRequest(request);
  if (!component) return undefined;
  const root = component.name as RootPath;
  if (root === "decision") return { component: root, action: "query" };
  if (root === "redact") return { component: root, action: "own" };
  return { component: root, action: request.method === "GET" || request.method === "HEAD" ? "read" : "write" };
}

/** Route options of a route that needs more than its method says (e.g. erasing a user is user:admin). */
export const needs = (permission: RequiredPermission) => ({ permission });
