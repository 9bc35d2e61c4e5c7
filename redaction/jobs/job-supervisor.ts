import { partitionOf } from "../../actors/runtime/addressing";
import { DocumentSubjects } from "./subjects";
import { WatchedBucket } from "../../actors/runtime/watched-bucket";
import { redactionJob, type JobRecord } from "../../actors/redaction/job-actor";
import { purgeDocuments } from "./chunk-store";
import { runAttempt, type RunnerDeps } from "./job-runner";

const scanEveryMs = 1000;
/** Wait before beginning another attempt after one ended in trouble (not the document's fault). */
const retryAfterMs = 2000;

/**
 * Runs the redaction jobs whose actors live on this node. Every node keeps a replica of the
 * jobs' states (a watch on `redaction-job.*` keys); on each pass, a running job in a partition
 * this node owns, with no attempt running here, gets a new attempt (`begin` on the job actor,
 * which numbers it and fences the old one). When a node dies its partitions move and the new
 * owner's next pass resumes its jobs. Finished jobs past their retention are deleted, with
 * their documents, by the same owner.
 */
export class JobSupervisor {
  private readonly jobs: WatchedBucket<JobRecord>;
  private readonly running = new Map<string, Promise<void>>();
  private readonly retryAt = new Map<string, number>();
  private readonly expiring = new Set<string>();
  private timer?: NodeJS.Timeout;
  private stopping = false;

  constructor(private readonly deps: RunnerDeps) {
    this.jobs = new WatchedBucket<JobRecord>("redaction jobs", deps.runtime.host.store.kv, deps.log, `${redactionJob.type}.>`);
  }

  async start(): Promise<void> {
    await this.jobs.start();
    await this.jobs.ready;
    this.jobs.on("change", () => this.scan());
    this.timer = setInterval(() => this.scan(), scanEveryMs);
    this.scan();
  }

  /** Every job this node knows of (the replica: a change made elsewhere shows up within moments). */
  list(): JobRecord[] {
    return [...this.jobs.all()].map(([, entry]) => entry.value);
  }

  /** The jobs whose actors this node hosts, by status: summed over the nodes, the cluster's jobs. */
  ownedByStatus(): Record<string, number> {
    const counts: Record<string, number> = { running: 0, complete: 0, failed: 0 };
    for (const [, { value: job }] of this.jobs.all()) if (this.owns(job.jobName)()) counts[job.status] = (counts[job.status] ?? 0) + 1;
    return counts;
  }

  private owns(jobName: string): () => boolean {
    const partition = partitionOf(redactionJob.type, jobName, this.deps.runtime.placement.partitionCount);
    return () => !this.stopping && this.deps.runtime.host.serves(partition) && this.deps.runtime.membership.isLeaseValid();
  }

  private scan(): void {
    if (this.stopping) return;
    const now = Date.now();
    for (const [, { value: job }] of this.jobs.all()) {
      if (!this.owns(job.jobName)()) continue;
      if (job.status === "running" && !this.running.has(job.jobName) && (this.retryAt.get(job.jobName) ?? 0) <= now) this.begin(job.jobName);
      else if (job.status !== "running" && job.expiresAt !== null && Date.parse(job.expiresAt) <= now && !this.expiring.has(job.jobName))
        this.expire(job.jobName);
    }
  }

  private begin(jobName: string): void {
    const { runtime, log } = this.deps;
    const attempt = (async () => {
      const { run, job } = await runtime.client.ref(redactionJob, jobName).begin({ nodeId: runtime.membership.nodeId });
      if (run) await runAttempt(this.deps, job, this.owns(jobName));
      this.retryAt.delete(jobName);
    })()
      .catch((error: unknown) => {
        log.warn({ err: error, jobName }, "redaction attempt ended in trouble; another will begin");
        this.retryAt.set(jobName, Date.now() + retryAfterMs);
      })
      .finally(() => this.running.delete(jobName));
    this.running.set(jobName, attempt);
  }

  private expire(jobName: string): void {
    this.expiring.add(jobName);
    void removeJob(this.deps, jobName)
      .then(() => this.deps.log.info({ jobName }, "redaction job expired and deleted"))
      .catch((error: unknown) => this.deps.log.warn({ err: error, jobName }, "deleting an expired redaction job failed; will retry"))
      .finally(() => this.expiring.delete(jobName));
  }

  /** Stops beginning attempts; running ones stop at their next chunk (the next owner resumes them). */
  async stop(): Promise<void> {
    this.stopping = true;
    clearInterval(this.timer);
    this.jobs.stop();
    await Promise.allSettled([...this.running.values()]);
  }
}

/** Deletes a job: its state first (its runner's next report is refused), then its documents. */
export async function removeJob(deps: Pick<RunnerDeps, "runtime" | "jsm">, jobName: string): Promise<JobRecord> {
  const removed = await deps.runtime.client.ref(redactionJob, jobName).remove();
  await purgeDocuments(deps.jsm, DocumentSubjects.job(jobName));
  return removed;
}
