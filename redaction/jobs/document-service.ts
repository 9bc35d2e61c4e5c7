import { randomUUID } from "node:crypto";
import { jetstream, jetstreamManager, type JetStreamClient, type JetStreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import type { Logger } from "pino";
import { redactionJob, type JobRecord } from "../../actors/redaction/job-actor";
import { csvThreading } from "../threaded-csv-redactor";
import type { DocumentFormat } from "../types";
import { DocumentSubjects, documentStream, provisionDocuments } from "./subjects";
import { HandlerError, RetryableError } from "../../actors/runtime/errors";
import type { ActorRuntime } from "../../actors/runtime/runtime";
import type { DocumentPort, RedactRequest } from "../../api/types";
import type { DecisionService } from "../../ports/decision-service";
import { ChunkWriter, purgeDocuments, missingChunks, readChunks } from "./chunk-store";
import { JobSupervisor, removeJob } from "./job-supervisor";

/** Storage quotas of document redaction (issue 26 item 3). */
export interface DocumentQuotas {
  /** Largest document one job may upload (413 over it). */
  maxDocumentBytes: number;
  /** What the documents' stream holds at most, inputs and outputs of every job (507 when full). */
  maxTotalBytes: number;
}

/** JetStream's refusal of a message that a full stream with discard policy `new` cannot take. */
const streamFull = /maximum bytes exceeded|insufficient (storage|resources)|resource limits exceeded/i;

function tooLarge(limit: number): HandlerError {
  return new HandlerError(
    "DOCUMENT_TOO_LARGE",
    `the document is larger than the ${limit} bytes one redaction job may upload (REDACT_MAX_DOCUMENT_BYTES); nothing was kept`,
    { details: { maxDocumentBytes: limit } },
  );
}

function storageFull(limit: number): HandlerError {
  return new HandlerError(
    "DOCUMENT_STORAGE_FULL",
    `redaction storage is full (REDACT_STORAGE_MAX_BYTES, ${limit} bytes); nothing was kept: download and delete finished jobs, or try later`,
    { details: { maxTotalBytes: limit } },
  );
}

/**
 * Document redaction on a node: uploads go to JetStream as they arrive, each becomes a
 * redaction-job actor, and this node's supervisor runs the jobs whose actors it hosts.
 */
export class DocumentService implements DocumentPort {
  /** Document bytes uploaded to and downloaded from this node since start (read by the metrics). */
  readonly bytes = { in: 0, out: 0 };

  private constructor(
    private readonly runtime: ActorRuntime,
    private readonly decisions: DecisionService,
    private readonly js: JetStreamClient,
    private readonly jsm: JetStreamManager,
    private readonly supervisor: JobSupervisor,
    private readonly retentionHours: number,
    private readonly quotas: DocumentQuotas,
  ) {}

  static async start(options: {
    nc: NatsConnection;
    runtime: ActorRuntime;
    decisions: DecisionService;
    log: Logger;
    retentionHours: number;
    threads: number;
    /** How often a running job reports its progress (REDACT_PROGRESS_MS). */
    progressEveryMs: number;
    jsReplicas: number;
    quotas: DocumentQuotas;
  }): Promise<DocumentService> {
    await provisionDocuments(options.nc, options.jsReplicas, options.retentionHours, options.quotas.maxTotalBytes);
    const js = jetstream(options.nc);
    const jsm = await jetstreamManager(options.nc);
    const supervisor = new JobSupervisor({
      runtime: options.runtime,
      decisions: options.decisions,
      js,
      jsm,
      log: options.log.child({ component: "redaction" }),
      csvThreading: csvThreading(options.threads),
      progressEveryMs: options.progressEveryMs,
    });
    await supervisor.start();
    return new DocumentService(options.runtime, options.decisions, js, jsm, supervisor, options.retentionHours, options.quotas);
  }

  async submit(request: RedactRequest, format: DocumentFormat, body: AsyncIterable<Buffer>, owner: string | null, declaredBytes?: number): Promise<JobRecord> {
    const { compiled } = await this.decisions.redactionPlan(request);
    const { maxDocumentBytes, maxTotalBytes } = this.quotas;
    // A declared size is checked before a byte is read or stored.
    if (declaredBytes !== undefined && declaredBytes > maxDocumentBytes) throw tooLarge(maxDocumentBytes);
    if (declaredBytes !== undefined && (await this.jsm.streams.info(documentStream.name)).state.bytes + declaredBytes > maxTotalBytes)
      throw storageFull(maxTotalBytes);
    const jobName = randomUUID();
    const writer = new ChunkWriter(this.js, DocumentSubjects.input(jobName));
    let input: Awaited<ReturnType<ChunkWriter["close"]>>;
    let received = 0;
    try {
      for await (const chunk of body) {
        received += chunk.length;
        if (received > maxDocumentBytes) throw tooLarge(maxDocumentBytes);
        await writer.write(chunk);
      }
      input = await writer.close();
      this.bytes.in += input.bytes;
    } catch (error) {
      await writer.settle();
      await purgeDocuments(this.jsm, DocumentSubjects.job(jobName)).catch(() => undefined);
      if (error instanceof HandlerError) throw error;
      if (streamFull.test(String((error as Error).message))) throw storageFull(maxTotalBytes);
      // The client's own abort leaves no one to answer; a store that refused is worth a retry.
      throw new RetryableError("DOCUMENT_NOT_STORED", "the document could not be stored; nothing was kept", { cause: error });
    }
    const { type, purposeId, mappingGroup, thirdPartyId, termsId } = request;
    try {
      return await this.ref(jobName).create({
        request: { type, purposeId, mappingGroup, ...(thirdPartyId ? { thirdPartyId } : {}), ...(termsId ? { termsId } : {}) },
        format,
        revision: compiled.revision,
        input,
        retentionHours: this.retentionHours,
        owner,
      });
    } catch (error) {
      // A job that was not created leaves no one to delete its input: do it now, unless it may exist.
      const exists = await this.ref(jobName)
        .get()
        .then(
          () => true,
          (readError: { code?: string }) => readError.code !== "JOB_NOT_FOUND",
        );
      if (!exists) await purgeDocuments(this.jsm, DocumentSubjects.job(jobName)).catch(() => undefined);
      throw error;
    }
  }

  job(jobName: string): Promise<JobRecord> {
    return this.ref(jobName).get();
  }

  async download(jobName: string): Promise<{ job: JobRecord; chunks: AsyncIterable<Buffer> }> {
    const job = await this.job(jobName);
    if (job.status === "running") throw new HandlerError("JOB_RUNNING", `redaction job '${jobName}' is still running`);
    if (job.status === "failed" || !job.output)
      throw new HandlerError("JOB_FAILED", `redaction job '${jobName}' failed: ${job.error?.message ?? "no output"}`, { details: job.error });
    const subject = DocumentSubjects.output(jobName, job.output.attempt);
    // Checked before the answer starts: a document found incomplete once its bytes flow could only cut the download short.
    const lost = job.output.chunks > 0 ? await missingChunks(this.jsm, subject, job.output) : undefined;
    if (lost) throw new HandlerError("JOB_OUTPUT_LOST", `redaction job '${jobName}' is complete but its output is not all stored any more: ${lost.message}`);
    return { job, chunks: this.countedOut(readChunks(this.js, this.jsm, subject, job.output)) };
  }

  /** Jobs this node hosts, by status. */
  jobsByStatus(): Record<string, number> {
    return this.supervisor.ownedByStatus();
  }

  private async *countedOut(chunks: AsyncIterable<Buffer>): AsyncIterable<Buffer> {
    for await (const chunk of chunks) {
      this.bytes.out += chunk.length;
      yield chunk;
    }
  }

  list(): JobRecord[] {
    return this.supervisor.list();
  }

  remove(jobName: string): Promise<JobRecord> {
    return removeJob({ runtime: this.runtime, jsm: this.jsm }, jobName);
  }

  stop(): Promise<void> {
    return this.supervisor.stop();
  }

  private ref(jobName: string) {
    return this.runtime.client.ref(redactionJob, jobName);
  }
}
