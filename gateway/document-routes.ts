import { Readable } from "node:stream";
import type { FastifyPluginAsync, FastifyRequest } from "fastify";
import { seesJob } from "../auth/authorization";
import type { JobRecord } from "../actors/redaction/job-actor";
import { documentFormats, type DocumentFormat } from "../redaction/types";
import { HttpError } from "../http/errors";
import { redactionQuery } from "./schemas";
import { jobListQuery, jobQuery } from "./requests/redact-requests";
import { jobAnswer, jobListAnswer, jobProgressAnswer, jobRemovedAnswer, jobStatsAnswer } from "./answers/redact-answers";
import type { DocumentPort, RedactRequest } from "../api/types";

const tags = ["redact"];
const formatOfMediaType = new Map<string, DocumentFormat>(
  Object.entries(documentFormats).map(([format, mediaType]): [string, DocumentFormat] => [mediaType, format as DocumentFormat]),
);

function links(jobName: string) {
  const query = `jobName=${encodeURIComponent(jobName)}`;
  return { stats: `/redact/stats?${query}`, progress: `/redact/progress?${query}`, document: `/redact/document?${query}` };
}

/** A job in lists and in the answer to an upload. */
function summaryOf(job: JobRecord) {
  return {
    jobName: job.jobName,
    status: job.status,
    format: job.format,
    ...job.request,
    revision: job.revision,
    inputBytes: job.input.bytes,
    createdAt: job.createdAt,
    finishedAt: job.finishedAt,
    expiresAt: job.expiresAt,
    links: links(job.jobName),
  };
}

/** How far a job is: for progress bars (any status). */
function progressOf(job: JobRecord) {
  const bytesProcessed = job.status === "complete" ? job.input.bytes : job.progress.bytesProcessed;
  return {
    jobName: job.jobName,
    status: job.status,
    bytesTotal: job.input.bytes,
    bytesProcessed,
    percent: job.input.bytes === 0 ? (job.status === "running" ? 0 : 100) : Math.floor((bytesProcessed / job.input.bytes) * 1000) / 10,
    rowsProcessed: job.progress.rowsProcessed,
    attempt: job.attempt,
    runner: job.runner?.nodeId ?? null,
    updatedAt: job.progress.at,
  };
}

/** What a finished job did (spec 4.4: "details of how data was redacted or dropped"). */
function statsOf(job: JobRecord) {
  const stats = job.stats;
  return {
    ...summaryOf(job),
    attempts: job.attempt,
    ...(job.error ? { error: job.error } : {}),
    rows: stats ? { in: stats.rowsIn, kept: stats.rowsKept, dropped: stats.rowsIn - stats.rowsKept, emptyLines: stats.emptyLines } : null,
    droppedBy: stats?.droppedBy ?? {},
    fields: stats?.fields ?? {},
    users: stats?.users ?? null,
    bytes: stats ? { in: stats.bytesIn, out: stats.bytesOut } : null,
    timings: stats?.timings ?? null,
  };
}

/**
 * Document redaction (spec 4.4, 3.2): upload, stats (404 while running), progress, download,
 * list, delete. Bodies are not parsed here: every accepted media type reaches the handler as
 * the request stream, which goes to JetStream chunk by chunk as it arrives.
 */
export function documentRoutes(documents: DocumentPort): FastifyPluginAsync {
  /** The named job, if this caller may see it; another caller's job is answered as if it did not exist (its name says nothing). */
  const visibleJob = async (request: FastifyRequest<{ Querystring: { jobName: string } }>): Promise<JobRecord> => {
    const job = await documents.job(request.query.jobName);
    if (!seesJob(request.rights, job.owner)) throw new HttpError("ERR_REDACT_JOB_NOT_FOUND");
    return job;
  };
  return async (app) => {
    app.removeAllContentTypeParsers();
    app.addContentTypeParser(Object.values(documentFormats), (_request, payload, done) => done(null, payload));

    app.put<{ Querystring: RedactRequest; Body: Readable }>(
      "/redact/document",
      {
        // Read as a stream and stored as it arrives: a signed upload must declare its body hash up front.
        config: { streamedBody: true },
        schema: {
          tags,
          summary: "Upload a CSV, JSON array or NDJSON document for redaction; answers with the job's name once the document is stored",
          querystring: redactionQuery,
          response: { 200: jobAnswer },
        },
      },
      async (request) => {
        const mediaType = (request.headers["content-type"] ?? "").split(";")[0].trim().toLowerCase();
        const format = formatOfMediaType.get(mediaType);
        if (!format) throw new HttpError("ERR_REQUEST_CONTENT_TYPE", `send the document as ${Object.values(documentFormats).join(", ")}`);
        const length = request.headers["content-length"];
        const declared = length === undefined ? undefined : Number(length);
        const job = await documents.submit(
          request.query,
          format,
          request.body,
          request.rights?.owner ?? null,
          Number.isSafeInteger(declared) ? declared : undefined,
        );
        return summaryOf(job);
      },
    );

    app.get<{ Querystring: { jobName: string } }>(
      "/redact/stats",
      {
        schema: {
          tags,
          summary: "What a finished job did (404 while it runs; status 'failed' with the error and where)",
          querystring: jobQuery,
          response: { 200: jobStatsAnswer },
        },
      },
      async (request) => {
        const job = await visibleJob(request);
        if (job.status === "running") throw new HttpError("ERR_REDACT_JOB_RUNNING", undefined, { progress: links(job.jobName).progress });
        return statsOf(job);
      },
    );

    app.get<{ Querystring: { jobName: string } }>(
      "/redact/progress",
      {
        schema: {
          tags,
          summary: "How far a job is: bytes and rows processed, for a progress bar",
          querystring: jobQuery,
          response: { 200: jobProgressAnswer },
        },
      },
      async (request) => progressOf(await visibleJob(request)),
    );

    app.get<{ Querystring: { jobName: string } }>(
      "/redact/document",
      {
        schema: {
          tags,
          summary: "The redacted document of a complete job, in the uploaded format, rows in their original order",
          querystring: jobQuery,
          response: {
            200: {
              description: "the redacted document, in the uploaded format",
              content: Object.fromEntries(Object.values(documentFormats).map((type) => [type, { schema: { type: "string" } }])),
            },
          },
        },
      },
      async (request, reply) => {
        const { job, chunks } = await documents.download((await visibleJob(request)).jobName);
        void reply
          .type(documentFormats[job.format])
          .header("content-length", job.output!.bytes)
          .header("content-disposition", `attachment; filename="${job.jobName}.${job.format}"`);
        return reply.send(Readable.from(chunks));
      },
    );

    app.get<{ Querystring: { status?: string } }>(
      "/redact/jobs",
      {
        schema: {
          tags,
          summary: "Redaction jobs, newest first",
          querystring: jobListQuery,
          response: { 200: jobListAnswer },
        },
      },
      async (request) => {
        const { status } = request.query;
        const jobs = documents.list().filter((job) => (status === undefined || job.status === status) && seesJob(request.rights, job.owner));
        jobs.sort((a, b) => b.createdAt.localeCompare(a.createdAt));
        return { jobs: jobs.map(summaryOf) };
      },
    );

    app.delete<{ Querystring: { jobName: string } }>(
      "/redact/document",
      { schema: { tags, summary: "Delete a job and its documents (a running job stops)", querystring: jobQuery, response: { 200: jobRemovedAnswer } } },
      async (request) => {
        const job = await documents.remove((await visibleJob(request)).jobName);
        return { jobName: job.jobName, deleted: true, status: job.status };
      },
    );
  };
}
