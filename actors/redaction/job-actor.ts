import { actor, exclusive, shared } from "../runtime/define";
import { HandlerError } from "../runtime/errors";
import type { ExclusiveContext, SharedContext } from "../runtime/types";
import type { DocumentFormat, RedactionRequest, RedactionTally } from "../../redaction/types";

export type JobStatus = "running" | "complete" | "failed";

/** Why a job failed: a code, a sentence, and where in the document when the document is at fault. */
export interface JobError {
  code: string;
  message: string;
  line?: number;
  record?: number;
}

/** What a finished job did (the body of GET /redact/stats, with the job's identity). */
export interface JobStats extends RedactionTally {
  users: { seen: number; allowed: number; denied: number };
  /** Milliseconds: from upload to the last attempt's start, that attempt's run, and upload to end. */
  timings: { queuedMs: number; runMs: number; totalMs: number };
}

/** One document redaction (spec 2.13, 3.2), as stored. */
export interface JobRecord {
  jobName: string;
  status: JobStatus;
  request: RedactionRequest;
  format: DocumentFormat;
  /**
   * The configuration revision the job decides with: the current one when it was accepted, then the
   * one its completed attempt decided under (each attempt decides under the revision current when it
   * begins, and begins again when a newer one appears before it completes).
   */
  revision: number;
  input: { bytes: number; chunks: number };
  createdAt: string;
  /** Attempts started so far; each runs the whole document again and writes its own output. */
  attempt: number;
  /** Of those, the attempts that ended because the configuration changed under them (they do not count toward maxAttempts). */
  configurationRestarts?: number;
  runner: { nodeId: string; since: string } | null;
  progress: { bytesProcessed: number; rowsProcessed: number; at: string };
  finishedAt: string | null;
  /** When a finished job and its data are deleted. */
  expiresAt: string | null;
  retentionHours: number;
  stats: JobStats | null;
  /** The output of the attempt that completed. */
  output: { attempt: number; bytes: number; chunks: number } | null;
  error: JobError | null;
  /** Who created the job (`<verifier>/<profile>:<subject>`, auth/authorization.ts jobOwner; `<verifier>:<subject>` for jobs stored before), or null when its caller was not authenticated: only they, or a redact:admin, see it. */
  owner?: string | null;
}

type State = JobRecord | null;
type Exclusive = ExclusiveContext<State>;

/**
 * An attempt after this many is not started: the job fails instead (a document that kills nodes must not kill them all).
 * Attempts that ended because the configuration changed under them are not counted: they have their own bound.
 */
export const maxAttempts = 5;

/**
 * Attempts a job may lose to configuration changes before it fails (CONFIG_CHANGED): a configuration written more often
 * than the job takes would otherwise start it over forever.
 */
export const maxConfigurationRestarts = 5;

function existing(ctx: { state: Readonly<State>; id: string }): JobRecord {
  if (!ctx.state) throw new HandlerError("JOB_NOT_FOUND", `no redaction job '${ctx.id}'`);
  return ctx.state as JobRecord;
}

/** The running job, if `attempt` is still its current attempt; a superseded runner is told to stop. */
function currentAttempt(ctx: Exclusive, attempt: number): JobRecord {
  const job = existing(ctx);
  if (job.status !== "running" || job.attempt !== attempt)
    throw new HandlerError("ATTEMPT_SUPERSEDED", `attempt ${attempt} of job '${ctx.id}' is no longer current (status ${job.status}, attempt ${job.attempt})`);
  return job;
}

function finished(job: JobRecord, status: JobStatus, now: Date): JobRecord {
  return { ...job, status, runner: null, finishedAt: now.toISOString(), expiresAt: new Date(now.getTime() + job.retentionHours * 3_600_000).toISOString() };
}

export type NewJob = Pick<JobRecord, "request" | "format" | "revision" | "input" | "retentionHours" | "owner">;

/**
 * A redaction job. The actor holds the job's state and fences its runs: the node that owns
 * the job's partition runs it (see JobSupervisor) after `begin` gave it an attempt number,
 * and only the current attempt may report progress, complete or fail. When the node dies,
 * the partition's next owner begins a new attempt; the old one's reports are refused.
 */
export const redactionJob = actor({
  type: "redaction-job",
  initialState: (): State => null,
  handlers: {
    get: shared((ctx: SharedContext<State>) => existing(ctx)),

    create: exclusive((ctx: Exclusive, arg: NewJob) => {
      if (ctx.state) throw new HandlerError("JOB_EXISTS", `redaction job '${ctx.id}' exists`);
      const now = new Date().toISOString();
      const job: JobRecord = {
        jobName: ctx.id,
        status: "running",
        ...arg,
        createdAt: now,
        attempt: 0,
        runner: null,
        progress: { bytesProcessed: 0, rowsProcessed: 0, at: now },
        finishedAt: null,
        expiresAt: null,
        stats: null,
        output: null,
        error: null,
      };
      ctx.setState(job);
      return job;
    }),

    /** Starts the next attempt on this node, or fails the job when it has had too many. */
    begin: exclusive((ctx: Exclusive, arg: { nodeId: string }): { run: boolean; job: JobRecord } => {
      const job = existing(ctx);
      if (job.status !== "running") return { run: false, job };
      const now = new Date();
      if (job.attempt - (job.configurationRestarts ?? 0) >= maxAttempts) {
        const failed: JobRecord = {
          ...finished(job, "failed", now),
          error: {
            code: "JOB_ATTEMPTS_EXHAUSTED",
            message: `the job was started ${job.attempt} times without finishing; the last runner was ${job.runner?.nodeId ?? "unknown"}`,
          },
        };
        ctx.setState(failed);
        return { run: false, job: failed };
      }
      const next: JobRecord = {
        ...job,
        attempt: job.attempt + 1,
        runner: { nodeId: arg.nodeId, since: now.toISOString() },
        progress: { bytesProcessed: 0, rowsProcessed: 0, at: now.toISOString() },
      };
      ctx.setState(next);
      return { run: true, job: next };
    }),

    progress: exclusive((ctx: Exclusive, arg: { attempt: number; bytesProcessed: number; rowsProcessed: number }) => {
      const job = currentAttempt(ctx, arg.attempt);
      ctx.setState({ ...job, progress: { bytesProcessed: arg.bytesProcessed, rowsProcessed: arg.rowsProcessed, at: new Date().toISOString() } });
    }),

    complete: exclusive((ctx: Exclusive, arg: { attempt: number; stats: JobStats; output: { bytes: number; chunks: number }; revision?: number }) => {
      const job = currentAttempt(ctx, arg.attempt);
      const now = new Date();
      ctx.setState({
        ...finished(job, "complete", now),
        ...(arg.revision !== undefined ? { revision: arg.revision } : {}),
        stats: arg.stats,
        output: { attempt: arg.attempt, ...arg.output },
        progress: { bytesProcessed: job.input.bytes, rowsProcessed: arg.stats.rowsIn, at: now.toISOString() },
      });
    }),

    /**
     * The current attempt ended because the configuration changed before it completed: the next attempt decides under the
     * new one. Past maxConfigurationRestarts such attempts the job fails (CONFIG_CHANGED). Returns the job as it now is.
     */
    configurationChanged: exclusive((ctx: Exclusive, arg: { attempt: number; message: string; stats: JobStats }) => {
      const job = currentAttempt(ctx, arg.attempt);
      const restarts = (job.configurationRestarts ?? 0) + 1;
      const next: JobRecord =
        restarts > maxConfigurationRestarts
          ? {
              ...finished(job, "failed", new Date()),
              configurationRestarts: restarts,
              error: { code: "CONFIG_CHANGED", message: `the configuration changed during ${restarts} attempts: ${arg.message}` },
              stats: arg.stats,
            }
          : { ...job, runner: null, configurationRestarts: restarts };
      ctx.setState(next);
      return next;
    }),

    fail: exclusive((ctx: Exclusive, arg: { attempt: number; error: JobError; stats: JobStats }) => {
      const job = currentAttempt(ctx, arg.attempt);
      ctx.setState({ ...finished(job, "failed", new Date()), error: arg.error, stats: arg.stats });
    }),

    /** Forgets the job; its runner's next report is refused and it stops. Returns what was removed. */
    remove: exclusive((ctx: Exclusive) => {
      const job = existing(ctx);
      ctx.clearState();
      return job;
    }),
  },
});
