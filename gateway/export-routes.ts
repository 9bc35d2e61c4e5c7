import type { FastifyPluginAsync, FastifyRequest } from "fastify";
import { HttpError } from "../http/errors";
import { permits } from "../auth/authorization";
import { exportReadAnswer, exportView } from "./answers/export-answers";
import { requester as requesterOf } from "./requester";
import { exportBody, idBody, idQuery } from "./requests/export-requests";
import type { ExportBody, ExportPort } from "../api/types";

const tags = ["export"];

/** A route that names one export: stop, start and DELETE. */
interface ExportIdRoute {
  Querystring: { id?: string } | undefined;
  Body: { id?: string } | null | undefined;
}

function exportIdOf(request: FastifyRequest<ExportIdRoute>): string {
  const fromQuery = request.query?.id;
  const fromBody = request.body?.id;
  if (fromQuery !== undefined && fromBody !== undefined && fromQuery !== fromBody)
    throw new HttpError("ERR_REQUEST_INVALID", "the id in the query and the id in the body differ");
  const exportId = fromQuery ?? fromBody;
  if (exportId === undefined) throw new HttpError("ERR_REQUEST_INVALID", 'name the export: ?id=<id> or a JSON body {"id": "<id>"}');
  return exportId;
}

/** /export (spec 4.1, 3.1): create, list, stop, start, delete. */
export function exportRoutes(exports: ExportPort): FastifyPluginAsync {
  return async (app) => {
    // DELETE and PUT /export/stop|start may come without a body or content type.
    app.addContentTypeParser("*", { parseAs: "string" }, (_request, body, done) => {
      if (body === "") done(null, undefined);
      else done(new HttpError("ERR_REQUEST_CONTENT_TYPE", "send the id as ?id= or as a JSON body"), undefined);
    });

    app.put<{ Body: ExportBody }>(
      "/export",
      {
        schema: {
          tags,
          summary: "Create an export: a new endpoint in front of a backing store that applies one purpose (active at once)",
          body: exportBody,
          response: { 200: exportView },
        },
      },
      async (request) => exports.create(request.body, requesterOf(request), permits(request.rights, "export", "admin")),
    );

    app.get<{ Querystring: { id?: string } }>(
      "/export",
      {
        schema: {
          tags,
          summary: "Every export with its status, listen address, backing endpoint, purpose, mapping group and connection counts; ?id= for one",
          querystring: idQuery,
          response: { 200: exportReadAnswer },
        },
      },
      async (request) => {
        const { id: exportId } = request.query;
        if (exportId !== undefined) return exports.get(exportId);
        return { exports: await exports.list() };
      },
    );

    for (const action of ["stop", "start"] as const) {
      app.put<ExportIdRoute>(
        `/export/${action}`,
        {
          schema: {
            tags,
            summary: `${action === "stop" ? "Stop an active export (its port closes)" : "Start an inactive export (its port opens again)"}; the id as ?id= or {id}`,
            querystring: idQuery,
            body: idBody,
            response: { 200: exportView },
          },
        },
        async (request) => exports[action](exportIdOf(request), requesterOf(request)),
      );
    }

    app.delete<ExportIdRoute>(
      "/export",
      {
        schema: {
          tags,
          summary: "Remove an export from durable state (its port closes); the id as ?id= or {id}",
          querystring: idQuery,
          body: idBody,
          response: { 200: exportView },
        },
      },
      async (request) => exports.remove(exportIdOf(request), requesterOf(request)),
    );
  };
}
