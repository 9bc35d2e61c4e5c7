import type { FastifyPluginAsync } from "fastify";
import { HttpError } from "../http/errors";
import { documentRoutes } from "./document-routes";
import type { DocumentPort, RedactPort, RedactRequest } from "../api/types";
import { redactionQuery } from "./schemas";
import { recordBody } from "./requests/redact-requests";
import { recordRedactionAnswer } from "./answers/redact-answers";

const tags = ["redact"];

/** /redact: single records (spec 4.4) and, when the node runs them, document jobs. */
export function redactRoutes(redact: RedactPort, documents: DocumentPort | undefined): FastifyPluginAsync {
  return async (app) => {
    app.put<{ Querystring: RedactRequest; Body: Record<string, unknown> }>(
      "/redact/record",
      {
        schema: {
          tags,
          summary:
            "Redact one JSON record for a purpose: dropped (no values returned) or with every field the purpose does not allow set to null; always with the summary advice",
          querystring: redactionQuery,
          body: recordBody,
          response: { 200: recordRedactionAnswer },
        },
      },
      async (request) => redact.redactRecord(request.query, request.body, request.access),
    );
    if (documents) {
      // Its own context: document bodies are streams, never parsed (record bodies are JSON).
      await app.register(documentRoutes(documents));
    } else {
      app.all("/redact/*", async () => {
        throw new HttpError("ERR_SERVICE_NOT_IMPLEMENTED", "document redaction is not available on this gateway");
      });
    }
  };
}
