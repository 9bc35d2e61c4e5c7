import type { FastifyPluginAsync } from "fastify";
import type { RightsPort } from "../api/types";
import { requester } from "./requester";
import { subjectAccessRefusal } from "./subject-access";
import type { FastifyRequest } from "fastify";
import { idSchema as id } from "./schemas";
import { accessReportAnswer, restrictionAnswer } from "./answers/rights-answers";

const tags = ["user"];
const userParams = { type: "object", properties: { userId: id }, required: ["userId"] } as const;
const time = { type: "string", minLength: 10, maxLength: 40 } as const;

/** Refuses (and audits) a caller that may not read or act on this user's report; every report request is audited, refused or not. */
async function checkSubject(rights: RightsPort, request: FastifyRequest, userId: string, actorId: string | undefined, what: string): Promise<void> {
  const refusal = subjectAccessRefusal(request, userId, actorId);
  if (!refusal) return;
  await rights.refused(userId, requester(request), what, refusal.message);
  throw refusal;
}

/** Data-subject rights under /user (docs/subject-rights.md): the access report (JSON or CSV) and restriction. */
export function rightsRoutes(rights: RightsPort): FastifyPluginAsync {
  return async (app) => {
    app.get(
      "/user/:userId/report",
      {
        config: { subjectRights: true },
        schema: {
          tags,
          summary:
            "The access report: the user's state, what may use each user-access category now, and the decisions of the period (default: the last 30 days) grouped by purpose and door, with the latest events paged. format=csv downloads the decisions",
          params: userParams,
          querystring: {
            type: "object",
            additionalProperties: false,
            properties: {
              from: time,
              to: time,
              offset: { type: "string", pattern: "^[0-9]{1,3}$" },
              limit: { type: "string", pattern: "^[0-9]{1,3}$" },
              actorId: id,
              format: { type: "string", enum: ["json", "csv"] },
            },
          },
          response: { 200: accessReportAnswer },
        },
      },
      async (request, reply) => {
        const { userId } = request.params as { userId: string };
        const q = request.query as { from?: string; to?: string; offset?: string; limit?: string; actorId?: string; format?: "json" | "csv" };
        await checkSubject(rights, request, userId, q.actorId, "report");
        const report = await rights.report(
          userId,
          { from: q.from, to: q.to, offset: Number(q.offset ?? 0), limit: Math.min(100, Math.max(1, Number(q.limit ?? 20))), actorId: q.actorId },
          requester(request),
        );
        if (q.format !== "csv") return report;
        return reply.type("text/csv; charset=utf-8").header("content-disposition", `attachment; filename="access-report.csv"`).send(rights.csv(report));
      },
    );
    app.put(
      "/user/:userId/restriction",
      {
        config: { subjectRights: true },
        schema: {
          tags,
          summary:
            "Restriction: turn off every opt-in and consent (or those of purposeIds) in one call; a guardian (actorId) acts within the guardian categories and also turns off the allowedToDisable flows",
          params: userParams,
          body: {
            type: "object",
            additionalProperties: false,
            properties: { actorId: id, purposeIds: { type: "array", minItems: 1, maxItems: 100, uniqueItems: true, items: id } },
          },
          response: { 200: restrictionAnswer },
        },
      },
      async (request) => {
        const { userId } = request.params as { userId: string };
        const body = request.body as { actorId?: string; purposeIds?: string[] };
        await checkSubject(rights, request, userId, body.actorId, "restriction");
        return rights.restrict(userId, body, requester(request));
      },
    );
  };
}
