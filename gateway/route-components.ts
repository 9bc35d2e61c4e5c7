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
  let byHost = knownComponents.get(route);
  if (!byHost) knownComponents.set(route, (byHost = new Map()));
  let known = byHost.get(host);
  if (known === undefined) {
    const first = route.split("/", 2)[1] ?? "";
    known = (rootPaths as readonly string[]).includes(first) ? component(first as RootPath, domainOf(request)) : null;
    // Bounded: Host is the client's to choose (routes are the router's own).
    if (byHost.size >= 1024) byHost.clear();
    byHost.set(host, known);
  }
  return known ?? undefined;
}

/**
 * Components by matched route, then Host header: working them out (a split, three replaces) for
 * every request showed in profiles; two look-ups, no key string built per request.
 */
const knownComponents = new Map<string, Map<string, Component | null>>();
