import type { FastifyPluginAsync } from "fastify";
import type { GatewayDeps } from "./types";

/** /healthz: the process is alive. /readyz: it is connected and its partitions are served. */
export const healthRoutes: FastifyPluginAsync<Pick<GatewayDeps, "health" | "nodeId">> = async (app, deps) => {
  app.get("/healthz", async () => ({ status: "alive", nodeId: deps.nodeId }));
  app.get("/readyz", async (_request, reply) => {
    const report = deps.health();
    return reply.status(report.ready ? 200 : 503).send({ status: report.ready ? "ready" : "not ready", nodeId: deps.nodeId, checks: report.checks });
  });
};
