import type { FastifyPluginAsync, FastifyRequest } from "fastify";
import { purposeTypes } from "../decision/types";
import { HttpError } from "../http/errors";
import { backendTlsModes } from "../actors/export/export-actor";
import { exportReadAnswer, exportView } from "./answers/export-answers";
import { requester as requesterOf } from "./requester";
import { idSchema as id } from "./schemas";
import type { ExportBody, ExportPort } from "../api/types";

const tags = ["export"];

const exportBody = {
  type: "object",
  additionalProperties: false,
  required: ["type", "resolverGroup", "metadata"],
  properties: {
    type: { type: "string", minLength: 1, maxLength: 64 },
    endpoint: {
      type: "string",
      minLength: 3,
      maxLength: 300,
      description: "the backing store: host:port (postgres, mysql), http://host:port (objectstore), the FHIR base URL (fhir); a pipeline export has none",
    },
    resolverGroup: id,
    metadata: {
      type: "object",
      additionalProperties: false,
      required: ["type", "purposeId"],
      properties: { type: { type: "string", enum: [...purposeTypes] }, purposeId: id, thirdPartyId: id, termsId: id },
    },
    port: { type: "integer", minimum: 1, maximum: 65535, description: "listen port; allocated from the export range when absent" },
    credentials: {
      description:
        "the export's own back-end identity, in its type's shape: {user, password} (postgres) or {accessKeyId, secretAccessKey, region?, sessionToken?} (objectstore); needs direct verification; never shown by reads",
      oneOf: [
        {
          type: "object",
          additionalProperties: false,
          required: ["user", "password"],
          properties: { user: { type: "string", minLength: 1, maxLength: 63 }, password: { type: "string", minLength: 1, maxLength: 1024 } },
        },
        {
          type: "object",
          additionalProperties: false,
          required: ["accessKeyId", "secretAccessKey"],
          properties: {
            accessKeyId: { type: "string", minLength: 1, maxLength: 128 },
            secretAccessKey: { type: "string", minLength: 1, maxLength: 1024 },
            region: { type: "string", minLength: 1, maxLength: 64, pattern: "^[a-z0-9-]+$" },
            sessionToken: { type: "string", minLength: 1, maxLength: 8192 },
          },
        },
      ],
    },
    resourceServerId: { type: "string", minLength: 1, maxLength: 300, description: "OAuth audience of tokens given to this export (overrides the verifier's)" },
    allowWrites: {
      type: "boolean",
      description:
        "postgres, mysql: let clients write (INSERT, UPDATE, DDL...); objectstore: pass PutObject, DeleteObject and CopyObject unchanged; fhir: pass writes; without it the export is read-only",
    },
    strict: {
      type: "boolean",
      description:
        "postgres, mysql: refuse statements whose WHERE, JOIN ON, GROUP BY, HAVING, ORDER BY, window or DISTINCT ON use columns other than resource-context ones",
    },
    backendTls: {
      type: "string",
      enum: [...backendTlsModes],
      description:
        "postgres, mysql: TLS to the backend, as libpq's sslmode: disable (default), prefer (postgres only), require, verify-ca, verify-full; require and the verify modes never fall back to cleartext",
    },
    backendCa: {
      type: "string",
      minLength: 1,
      maxLength: 65536,
      description: "postgres, mysql, verify-ca and verify-full: the CA certificates (PEM) the backend's certificate must chain to; absent: the system's",
    },
    pushdown: {
      type: "boolean",
      description:
        "postgres: rewrite every SELECT so that mapped tables are read through derived tables of allowed rows and values (aggregates, joins and predicates see allowed data only); needs credentials, which keep a verdict table in the schema warden of the backing database",
    },
    buckets: {
      type: "array",
      minItems: 1,
      maxItems: 1000,
      uniqueItems: true,
      items: { type: "string", minLength: 3, maxLength: 63 },
      description: "objectstore: the buckets clients may see and use; absent: every bucket of the store",
    },
    formats: {
      type: "object",
      maxProperties: 100,
      additionalProperties: { type: "string", enum: ["csv", "json", "ndjson"] },
      description: "objectstore: document formats by content type (text/csv) or key suffix (.csv), over the defaults",
    },
    cloudSigning: {
      type: "object",
      additionalProperties: false,
      minProperties: 1,
      description:
        "cloud-signing properties of this export over the verifier profile's (pipeline exports, whose HTTP door takes signed requests); the key is never shown by reads",
      properties: { id: { type: "string", maxLength: 128 }, key: { type: "string", maxLength: 1024 }, region: { type: "string", maxLength: 64 } },
    },
  },
} as const;

const idQuery = { type: "object", additionalProperties: false, properties: { id } } as const;
const idBody = { type: ["object", "null"], additionalProperties: false, properties: { id } } as const;

/** The export id of stop, start and DELETE: `?id=` or a JSON body `{id}`; both may be given only if they agree. */
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
      async (request) => exports.create(request.body, requesterOf(request)),
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
