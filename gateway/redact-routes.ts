import type { FastifyPluginAsync } from "fastify";
import { purposeTypes } from "../actors/decision/types";
import { GatewayError } from "./errors";
import type { RedactPort, RedactRequest } from "./types";
import { idSchema as id } from "./schemas";

const tags = ["redact"];

/** /redact: single records now (spec 4.4); documents answer 501 until they land. */
export function redactRoutes(redact: RedactPort): FastifyPluginAsync {
  return async (app) => {
    app.put(
      "/redact/record",
      {
        schema: {
          tags,
          summary: "Redact one JSON record for a purpose: dropped (no values returned) or with every field the purpose does not allow set to null; always with the summary advice",
          querystring: { type: "object", additionalProperties: false, properties: { purposeId: id, type: { type: "string", enum: [...purposeTypes] }, mappingGroup: id, thirdPartyId: id, termsId: id }, required: ["purposeId", "type", "mappingGroup"] },
          body: { type: "object", maxProperties: 10_000 },
        },
      },
      async (request) => redact.redactRecord(request.query as RedactRequest, request.body as Record<string, unknown>),
    );
    app.all("/redact/*", async () => {
      throw new GatewayError("ERR_SERVICE_NOT_IMPLEMENTED", "document redaction is not implemented yet");
    });
  };
}
