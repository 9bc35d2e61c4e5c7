import type { FastifyPluginAsync } from "fastify";
import type { DecisionPort, DecisionQuery } from "../api/types";
import { decisionBatchBody, decisionQuery } from "./requests/decision-requests";

const tags = ["decision"];

const reasons = {
  type: "array",
  items: { type: "object", properties: { code: { type: "string" }, text: { type: "string" } }, required: ["code", "text"] },
} as const;
/** The answer's shape: documents it, and lets Fastify serialize it with a compiled serializer. */
const answer = {
  type: "object",
  properties: {
    traceId: { type: "string" },
    userId: { type: "string" },
    decidedAt: { type: "string" },
    allowed: { type: "boolean" },
    flow: { type: "string", enum: ["platform", "contractual", "consent"] },
    categoryIds: { type: "array", items: { type: "string" } },
    fields: { type: "object", additionalProperties: { type: "boolean" } },
    reasons,
    summary: { type: "string", description: "the urn:service:attribute:message:summary advice" },
    revision: { type: "integer" },
  },
  required: ["traceId", "userId", "decidedAt", "allowed", "flow", "categoryIds", "reasons", "summary", "revision"],
} as const;

/** /decision: traced decision queries, one or many users at once. */
export function decisionRoutes(decisions: DecisionPort): FastifyPluginAsync {
  return async (app) => {
    app.put<{ Body: DecisionQuery }>(
      "/decision",
      {
        schema: {
          tags,
          summary:
            "Decide whether a user's data may be used for a purpose: allowed, categories, fields of a mapping group when asked, reasons, revision, trace id",
          body: decisionQuery,
          response: { 200: answer },
        },
      },
      async (request) => decisions.decide(request.body, "decision", request.access),
    );
    app.put<{ Body: { queries: DecisionQuery[] } }>(
      "/decision/batch",
      {
        schema: {
          tags,
          summary: "Many decisions at once (up to 1000), answered in order",
          body: decisionBatchBody,
          response: { 200: { type: "object", properties: { decisions: { type: "array", items: answer } }, required: ["decisions"] } },
        },
      },
      async (request) => ({
        decisions: await Promise.all(request.body.queries.map((q) => decisions.decide(q, "decision", request.access))),
      }),
    );
  };
}
