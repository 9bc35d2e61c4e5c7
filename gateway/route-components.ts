import type { FastifyRequest } from "fastify";
import { component } from "../auth/components";
import type { Component } from "../auth/types";
import { domainOf } from "../http/authentication";
import { rootPaths, type RootPath } from "./types";

/**
 * The component of the route the router matched (not of the raw target: the router decodes
 * `/%63onfig` and absolute-form targets to `/config`). Unmatched requests have none: they 404.
 */
export function componentOfRequest(request: FastifyRequest): Component | undefined {
  const route = request.routeOptions.url ?? "";
  const host = request.headers.host ?? "";
  const key = `${route} ${host}`;
  let known = knownComponents.get(key);
  if (known === undefined) {
    const first = route.split("/", 2)[1] ?? "";
    known = (rootPaths as readonly string[]).includes(first) ? component(first as RootPath, domainOf(request)) : null;
    // Bounded: Host is the client's to choose.
    if (knownComponents.size >= 1024) knownComponents.clear();
    knownComponents.set(key, known);
  }
  return known ?? undefined;
}

/** Components by matched route and Host header: working them out (a split, three replaces) for every request showed in profiles. */
const knownComponents = new Map<string, Component | null>();
