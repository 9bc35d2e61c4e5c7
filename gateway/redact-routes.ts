import type { FastifyPluginAsync } from "fastify";
import { HttpError } from "../http/errors";
import { documentRoutes } from "./document-routes";
import type { DocumentPort, RedactPort, RedactRequest } from "../api/types";
import { redactionQuery } from "./schemas";
import { recordBody } from "./requests/redact-requests";
import { recordRedactionAnswer } from "./answers/redact-answers";

const tags = ["redact"];
const writeAsIs = (answer: unknown): string => JSON.stringify(answer);

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
        // The answer schema documents the route; every object in it is open (passes fields it does not name), which a compiled
        // serializer writes property by property: JSON.stringify writes the same answer in two thirds of the time (~2 µs a record).
        serializerCompiler: () => writeAsIs,
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
