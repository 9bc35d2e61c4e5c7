import type { FastifyPluginAsync } from "fastify";
import type { GatewayDeps } from "./types";

const alive = {
  type: "object",
  properties: { status: { type: "string", enum: ["alive"] }, nodeId: { type: "string" } },
  required: ["status", "nodeId"],
} as const;
const readiness = {
  type: "object",
  properties: {
    status: { type: "string", enum: ["ready", "not ready"] },
    nodeId: { type: "string" },
    checks: {
      type: "object",
      description: "nats, lease, partitions: each {ok, detail?}",
      additionalProperties: {
        type: "object",
        properties: { ok: { type: "boolean" }, detail: { type: "object", additionalProperties: true } },
        required: ["ok"],
      },
    },
  },
  required: ["status", "nodeId", "checks"],
} as const;

/** /healthz: the process is alive. /readyz: it is connected and its partitions are served. */
export const healthRoutes: FastifyPluginAsync<Pick<GatewayDeps, "health" | "nodeId">> = async (app, deps) => {
  app.get("/healthz", { schema: { tags: ["health"], summary: "The process is alive (liveness)", response: { 200: alive } } }, async () => ({
    status: "alive",
    nodeId: deps.nodeId,
  }));
  app.get(
    "/readyz",
    {
      schema: {
        tags: ["health"],
        summary: "The node is connected and every partition is served (readiness); 503 with the failing checks otherwise",
        response: { 200: readiness, 503: readiness },
      },
    },
    async (_request, reply) => {
      const report = deps.health();
      return reply.status(report.ready ? 200 : 503).send({ status: report.ready ? "ready" : "not ready", nodeId: deps.nodeId, checks: report.checks });
    },
  );
};
