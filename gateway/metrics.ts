import type { FastifyPluginAsync } from "fastify";
import fastifyPlugin from "fastify-plugin";
import { Counter, Histogram, type Registry } from "prom-client";
import type { HttpErrorCode } from "../http/errors";

/**
 * Prometheus metrics at /metrics, and the duration of every HTTP request by route and status.
 * Not encapsulated: its hook must see the requests of every other plugin.
 */
const metricsPlugin: FastifyPluginAsync<{ metrics: Registry }> = async (app, { metrics }) => {
  const duration = new Histogram({
    name: "warden_http_request_duration_seconds",
    help: "Gateway request durations",
    labelNames: ["method", "route", "status"],
    buckets: [0.0005, 0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 30],
    registers: [metrics],
  });
  app.addHook("onResponse", async (request, reply) => {
    duration.observe({ method: request.method, route: request.routeOptions.url ?? "unmatched", status: String(reply.statusCode) }, reply.elapsedTime / 1000);
  });
  app.get(
    "/metrics",
    {
      schema: {
        tags: ["health"],
        summary: "Prometheus metrics (text exposition format; docs/metrics.md)",
        response: { 200: { description: "Prometheus text", content: { "text/plain": { schema: { type: "string" } } } } },
      },
    },
    async (_request, reply) => reply.type(metrics.contentType).send(await metrics.metrics()),
  );
};

export const metricsRoutes = fastifyPlugin(metricsPlugin, { name: "warden-metrics" });

const refusalsName = "warden_refusals_total";

/**
 * Counts the gateway's refusals by error code (its kind), a child bound per code. One counter per
 * registry: the HTTP export doors count their Host refusals in the gateway's.
 */
export function refusalCounter(metrics: Registry): (code: HttpErrorCode) => void {
  const refusals =
    (metrics.getSingleMetric(refusalsName) as Counter<"kind"> | undefined) ??
    new Counter({
      name: refusalsName,
      help: "Requests the gateway refused, by error code (the registry in http/errors.ts); HTTP export doors count their ERR_REQUEST_HOST here too",
      labelNames: ["kind"],
      registers: [metrics],
    });
  const byCode = new Map<HttpErrorCode, Counter.Internal>();
  return (code) => {
    let child = byCode.get(code);
    if (!child) byCode.set(code, (child = refusals.labels({ kind: code })));
    child.inc();
  };
}
