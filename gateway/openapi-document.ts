import pino from "pino";
import { Registry } from "prom-client";
import { build } from "./build";
import type { GatewayDeps } from "./types";

/** A port for building the gateway without serving: every route is registered, none may be called. */
const inert = new Proxy(
  {},
  {
    get: () => () => {
      throw new Error("the OpenAPI document's gateway serves nothing");
    },
  },
) as never;

/** The OpenAPI document of a node's gateway with every component in place (openapi.json is this, written by scripts/openapi.mjs). */
export async function openApiDocument(): Promise<Record<string, unknown>> {
  const deps: GatewayDeps = {
    logger: pino({ level: "silent" }),
    metrics: new Registry(),
    nodeId: "openapi",
    health: () => ({ ready: true, checks: {} }),
    policy: inert,
    users: inert,
    rights: inert,
    decisions: inert,
    redact: inert,
    documents: inert,
    exports: inert,
  };
  const app = build(deps);
  await app.ready();
  const document = app.swagger() as unknown as Record<string, unknown>;
  await app.close();
  return document;
}

/** openapi.json's text: two-space JSON and a final newline, so a diff shows what changed. */
export const openApiText = (document: unknown): string => `${JSON.stringify(document, null, 2)}\n`;
