import type { JetStreamClient, JetStreamManager } from "@nats-io/jetstream";
import type { Logger } from "pino";
import { flowOf } from "../../decision/engine";
import { redactionJob, type JobError, type JobRecord, type JobStats } from "../../actors/redaction/job-actor";
import { documentRedactor } from "../document-stream";
import { DocumentError, type CsvThreading, type DocumentRedactor, type RedactionTally } from "../types";
import { DocumentSubjects } from "./subjects";
import { RuntimeError } from "../../actors/runtime/errors";
import type { ActorRuntime } from "../../actors/runtime/runtime";
import type { DecisionService } from "../../ports/decision-service";
import { ChunkWriter, purgeDocuments, readChunks } from "./chunk-store";
import { JobDecisions } from "./job-decisions";

/** The attempt may not go on: another attempt superseded it, the job was deleted, or this node no longer owns it. */
class AttemptStopped extends Error {}

export interface RunnerDeps {
  runtime: ActorRuntime;
  decisions: DecisionService;
  js: JetStreamClient;
  jsm: JetStreamManager;
  log: Logger;
  /** How CSV documents are spread over worker threads (JSON and NDJSON use the event loop's thread). */
  csvThreading: CsvThreading;
  /** How often a running attempt reports its progress to the job actor, and learns whether it is still current (REDACT_PROGRESS_MS, default 1000). */
  progressEveryMs: number;
}

/**
 * Runs one attempt of a redaction job on the node that owns the job: reads the stored
 * document in order, redacts it chunk by chunk, writes the attempt's own output, and reports
 * progress, then completion or failure, to the job actor (which refuses a superseded attempt).
 * A document at fault fails the job; anything else ends the attempt, and the supervisor
 * begins another one.
 */
export async function runAttempt(deps: RunnerDeps, job: JobRecord, stillOwned: () => boolean): Promise<void> {
  const { runtime, js, jsm, log } = deps;
  const ref = runtime.client.ref(redactionJob, job.jobName);
  const attempt = job.attempt;
  const started = Date.now();
  let redactor: DocumentRedactor | undefined;
  let decisions: JobDecisions | undefined;
  let writer: ChunkWriter | undefined;
  let stopWatching: (() => void) | undefined;
  /** The revision this attempt decides under, once known. */
  let revision = job.revision;
  /**
   * The completion was sent to the job actor and not refused: it may have been made even though its answer never came (a
   * paused server delivers it after the call timed out). The output is then kept: the job may already name it, and an
   * attempt that begins after this one (only if the job is not complete) purges every earlier attempt's output first.
   */
  let completionMaybeMade = false;
  /** Deletes this attempt's output (never another attempt's: a newer one may have completed), unless its completion may stand. */
  const discardOutput = async () => {
    if (completionMaybeMade) return;
    await writer?.settle();
    await purgeDocuments(jsm, DocumentSubjects.output(job.jobName, attempt)).catch(() => undefined);
  };
  const stats = (): JobStats => ({
    ...(redactor?.tally() ?? emptyTally()),
    users: decisions ? { ...decisions.users } : { seen: 0, allowed: 0, denied: 0 },
    timings: { queuedMs: started - Date.parse(job.createdAt), runMs: Date.now() - started, totalMs: Date.now() - Date.parse(job.createdAt) },
  });
  try {
    await purgeDocuments(jsm, DocumentSubjects.outputs(job.jobName));
    // Decided under the configuration current now (policy-semantics 1 and 2: a narrowing takes effect at once), not the one the
    // upload began under; a newer revision before the attempt completes ends it, and the job begins again under that one.
    let changed = false;
    stopWatching = deps.decisions.onPolicyChange(() => void (changed = true));
    const { compiled, plan } = await deps.decisions.redactionPlan(job.request);
    revision = compiled.revision;
    const checkRevision = async (always = false) => {
      if (!changed && !always) return;
      changed = false;
      const current = (await deps.decisions.policy()).revision;
      if (current !== compiled.revision)
        throw new ConfigurationChanged(`the configuration changed to revision ${current} during this attempt (decided under ${compiled.revision})`);
    };
    decisions = new JobDecisions({
      jobName: job.jobName,
      attempt,
      nodeId: runtime.membership.nodeId,
      compiled,
      request: job.request,
      userState: (userId) => deps.decisions.userState(userId),
      events: runtime.events,
    });
    redactor = documentRedactor(job.format, plan, decisions, deps.csvThreading);
    writer = new ChunkWriter(js, DocumentSubjects.output(job.jobName, attempt));
    let lastReport = Date.now();
    let bytesProcessed = 0;
    for await (const chunk of readChunks(js, jsm, DocumentSubjects.input(job.jobName), job.input, () => !stillOwned())) {
      if (!stillOwned()) throw new AttemptStopped("this node no longer owns the job");
      await checkRevision();
      await writer.write(await redactor.push(chunk));
      bytesProcessed += chunk.length;
      if (Date.now() - lastReport >= deps.progressEveryMs) {
        lastReport = Date.now();
        await report(() => ref.progress({ attempt, bytesProcessed, rowsProcessed: redactor!.tally().rowsIn }));
      }
    }
    await writer.write(await redactor.end());
    const output = await writer.close();
    await checkRevision(true);
    const final = stats();
    // The job reports complete only once its record is stored; a failure ends the attempt (the supervisor runs it again).
    await traceJob(deps, job, attempt, "complete", final, undefined, revision);
    completionMaybeMade = true;
    await report(() => ref.complete({ attempt, stats: final, output, revision: compiled.revision })).catch((error: unknown) => {
      // Refused (superseded, or the job removed): the completion was not made.
      if (error instanceof AttemptStopped) completionMaybeMade = false;
      throw error;
    });
    log.info({ jobName: job.jobName, attempt, rowsIn: final.rowsIn, rowsKept: final.rowsKept, ms: final.timings.runMs }, "redaction job complete");
  } catch (error) {
    if (error instanceof ConfigurationChanged) {
      // The job actor counts these attempts (not toward its crash budget) and fails the job past its bound.
      await discardOutput();
      const final = stats();
      let now: JobRecord;
      try {
        now = await report(() => ref.configurationChanged({ attempt, message: error.message, stats: final }));
      } catch (reportError) {
        if (reportError instanceof AttemptStopped) return;
        throw reportError;
      }
      if (now.status === "failed" && now.error) {
        void traceJob(deps, job, attempt, "failed", final, now.error, revision);
        log.warn({ jobName: job.jobName, attempt, error: now.error }, "redaction job failed");
        return;
      }
      // Not the document's fault: the supervisor begins another attempt, under the new revision.
      throw error;
    }
    if (error instanceof AttemptStopped) {
      await discardOutput();
      log.info({ jobName: job.jobName, attempt, reason: error.message }, "redaction attempt stopped");
      return;
    }
    const failure = jobErrorOf(error);
    if (!failure) {
      await discardOutput();
      throw error;
    }
    const final = stats();
    await discardOutput();
    try {
      await report(() => ref.fail({ attempt, error: failure, stats: final }));
    } catch (reportError) {
      if (reportError instanceof AttemptStopped) return;
      throw reportError;
    }
    // The failure is already reported; a record JetStream does not store is logged and counted by the event log.
    void traceJob(deps, job, attempt, "failed", final, failure, revision);
    log.warn({ jobName: job.jobName, attempt, error: failure }, "redaction job failed");
  } finally {
    stopWatching?.();
    // A stopped or failed attempt leaves worker threads behind otherwise.
    await redactor?.close();
  }
}

/** The configuration changed during an attempt: not the document's fault; the supervisor begins another attempt, under the new revision. */
class ConfigurationChanged extends Error {}

/** A report the job actor refuses because the attempt is superseded, or the job gone, stops the attempt. */
async function report<T>(call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (error) {
    const code = (error as RuntimeError).code;
    if (code === "ATTEMPT_SUPERSEDED" || code === "JOB_NOT_FOUND") throw new AttemptStopped((error as Error).message);
    throw error;
  }
}

/** The job's failure when the document (or the configuration it names) is at fault; undefined for infrastructure trouble. */
function jobErrorOf(error: unknown): JobError | undefined {
  if (error instanceof DocumentError) return { code: error.code, message: error.message, ...error.where };
  // The job's purpose or mapping group is no longer configured.
  if (error instanceof RuntimeError && error.code === "REDACT_INVALID") return { code: "CONFIG_CHANGED", message: error.message };
  return undefined;
}

function emptyTally(): RedactionTally {
  return { bytesIn: 0, bytesOut: 0, rowsIn: 0, rowsKept: 0, emptyLines: 0, droppedBy: {}, fields: {} };
}

/** One trace record per job, beside the per-user ones: what the job did, without any values. */
function traceJob(
  deps: RunnerDeps,
  job: JobRecord,
  attempt: number,
  status: string,
  stats: JobStats,
  error: JobError | undefined,
  revision: number,
): Promise<void> {
  return deps.runtime.events.trace("redact", flowOf(job.request.type), {
    traceId: job.jobName,
    time: new Date().toISOString(),
    door: "redact",
    kind: "document.job",
    jobName: job.jobName,
    attempt,
    nodeId: deps.runtime.membership.nodeId,
    status,
    ...job.request,
    format: job.format,
    revision,
    rowsIn: stats.rowsIn,
    rowsKept: stats.rowsKept,
    droppedBy: stats.droppedBy,
    users: stats.users,
    // The code and where, never the message: a message can quote the document (a key name, V8's excerpt of a line).
    ...(error
      ? {
          error: {
            code: error.code,
            ...(error.line !== undefined ? { line: error.line } : {}),
            ...(error.record !== undefined ? { record: error.record } : {}),
          },
        }
      : {}),
  });
}
