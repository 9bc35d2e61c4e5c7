import { idSchema as id } from "../schemas";

/** Requests of /redact (gateway/redact-routes.ts, gateway/document-routes.ts); the redaction query itself is schemas' redactionQuery. */

/** A record to redact: any JSON object, bounded. */
export const recordBody = { type: "object", maxProperties: 10_000 } as const;
/** The job that stats, progress, document and DELETE name. */
export const jobQuery = { type: "object", additionalProperties: false, properties: { jobName: id }, required: ["jobName"] } as const;
export const jobListQuery = {
  type: "object",
  additionalProperties: false,
  properties: { status: { type: "string", enum: ["running", "complete", "failed"] } },
} as const;
