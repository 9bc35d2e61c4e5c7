import { anyObject, count, flag, listOf, nullableText, openObject, text } from "./answer";

/** Answers of /redact: single records (api/types.ts RecordRedaction) and document jobs (gateway/document-routes.ts). */

const reasons = listOf(openObject("why", { code: text, text }, ["code", "text"]));

export const recordRedactionAnswer = openObject(
  "a redacted record, or a dropped one (which carries none of the record's values)",
  {
    traceId: text,
    dropped: flag,
    record: anyObject("the record with every field the purpose does not allow set to null (absent when dropped)"),
    fields: anyObject("per record field: kept, and why (absent when dropped)"),
    reasons,
    advice: listOf(anyObject("summary advice")),
    revision: count,
  },
  ["traceId", "dropped", "reasons", "advice", "revision"],
);

const jobSummary = {
  jobName: text,
  status: text,
  format: text,
  type: text,
  purposeId: text,
  mappingGroup: text,
  revision: count,
  inputBytes: count,
  createdAt: text,
  finishedAt: nullableText,
  expiresAt: nullableText,
  links: openObject("where to follow the job", { stats: text, progress: text, document: text }),
};

export const jobAnswer = openObject("a document job", jobSummary, ["jobName", "status"]);
export const jobStatsAnswer = openObject(
  "what a job did: rows in, kept and dropped, per field",
  { ...jobSummary, attempts: count, error: anyObject("why it failed"), rows: { type: ["object", "null"], additionalProperties: true } },
  ["jobName", "status"],
);
export const jobProgressAnswer = openObject(
  "how far a job is",
  {
    jobName: text,
    status: text,
    bytesTotal: count,
    bytesProcessed: count,
    percent: { type: "number" },
    rowsProcessed: count,
    attempt: count,
    runner: nullableText,
    updatedAt: nullableText,
  },
  ["jobName", "status"],
);
export const jobListAnswer = openObject("document jobs", { jobs: listOf(jobAnswer) }, ["jobs"]);
export const jobRemovedAnswer = openObject("a removed job", { jobName: text, deleted: flag, status: text }, ["jobName", "deleted"]);
