import { purposeTypes } from "../../decision/types";
import { backendTlsModes } from "../../actors/export/export-actor";
import { idSchema as id } from "../schemas";

/** Requests of /export (gateway/export-routes.ts): the create body, and the id of stop, start and DELETE (query or body). */

export const exportBody = {
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
    rangedReads: {
      type: "object",
      additionalProperties: false,
      minProperties: 1,
      description:
        "objectstore: how a document is read from the store: as consecutive ranges of rangeBytes, parallel at once (parallel 1: one GET); each absent one takes its default",
      properties: {
        parallel: { type: "integer", minimum: 1, maximum: 16 },
        rangeBytes: { type: "integer", minimum: 65536, maximum: 67108864 },
      },
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

/** The export id of stop, start and DELETE: `?id=` or a JSON body `{id}`; both may be given only if they agree. */
export const idQuery = { type: "object", additionalProperties: false, properties: { id } } as const;
export const idBody = { type: ["object", "null"], additionalProperties: false, properties: { id } } as const;
