import type { FastifyPluginAsync } from "fastify";
import type { RightsPort } from "../api/types";
import { requester } from "./requester";
import { subjectAccessRefusal } from "./subject-access";
import type { FastifyRequest } from "fastify";
import { userParams } from "./requests/user-requests";
import { reportQuery, restrictionBody } from "./requests/rights-requests";
import { accessReportAnswer, restrictionAnswer } from "./answers/rights-answers";

const tags = ["user"];

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
    app.get<{
      Params: { userId: string };
      Querystring: { from?: string; to?: string; offset?: string; limit?: string; actorId?: string; format?: "json" | "csv" };
    }>(
      "/user/:userId/report",
      {
        config: { subjectRights: true },
        schema: {
          tags,
          summary:
            "The access report: the user's state, what may use each user-access category now, and the decisions of the period (default: the last 30 days) grouped by purpose and door, with the latest events paged. format=csv downloads the decisions",
          params: userParams,
          querystring: reportQuery,
          response: { 200: accessReportAnswer },
        },
      },
      async (request, reply) => {
        const { userId } = request.params;
        const q = request.query;
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
    app.put<{ Params: { userId: string }; Body: { actorId?: string; purposeIds?: string[] } }>(
      "/user/:userId/restriction",
      {
        config: { subjectRights: true },
        schema: {
          tags,
          summary:
            "Restriction: turn off every opt-in and consent (or those of purposeIds) in one call; a guardian (actorId) acts within the guardian categories and also turns off the allowedToDisable flows",
          params: userParams,
          body: restrictionBody,
          response: { 200: restrictionAnswer },
        },
      },
      async (request) => {
        const { userId } = request.params;
        const body = request.body;
        await checkSubject(rights, request, userId, body.actorId, "restriction");
        return rights.restrict(userId, body, requester(request));
      },
    );
  };
}
