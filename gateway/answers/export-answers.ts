import { exportTypes } from "../../actors/export/export-actor";
import { anyObject, count, flag, listOf, nullableText, openObject, text, texts } from "./answer";

/** Answers of /export: an export as GET /export shows it (api/types.ts ExportView); credentials are never shown. */
export const exportView = openObject(
  "an export: its stored state and what its serving node reports",
  {
    id: text,
    type: { type: "string", enum: [...exportTypes] },
    endpoint: text,
    resolverGroup: text,
    metadata: anyObject("the purpose applied: type, purposeId, thirdPartyId, termsId"),
    status: { type: "string", description: "active or inactive" },
    listen: openObject("where the export listens", { host: text, port: count }),
    resourceServerId: text,
    cloudSigning: anyObject("cloud-signing id and region; key: (set) when it has its own"),
    buckets: texts,
    formats: anyObject("document format by file suffix"),
    rangedReads: anyObject("objectstore: parallel ranges and their bytes, as set"),
    allowWrites: flag,
    strict: flag,
    backendTls: text,
    backendCa: text,
    pushdown: flag,
    createdAt: text,
    updatedAt: text,
    backendIdentity: { type: "string", enum: ["export", "client"] },
    subjects: openObject("pipeline exports: the NATS subjects", { request: text, input: text, output: text }),
    serving: {
      type: ["object", "null"],
      description: "the node serving it now, with its connection and row counts; null when no node serves it",
      additionalProperties: true,
      properties: {
        nodeId: text,
        host: text,
        port: count,
        since: text,
        connections: anyObject("open, total, refused"),
        rows: anyObject("in, kept, dropped, valuesNulled"),
      },
    },
    servingError: nullableText,
  },
  ["id", "type", "resolverGroup", "metadata", "status", "listen", "backendIdentity", "serving", "servingError"],
);

export const exportList = openObject("every export", { exports: listOf(exportView) }, ["exports"]);

/** GET /export answers one export with ?id=, the list without. */
export const exportReadAnswer = { anyOf: [exportList, exportView] } as const;
