import { readdirSync, readFileSync } from "node:fs";

/** One thread as last read: CPU ticks, name, run-queue wait and slices. */
interface Sample {
  ticks: number;
  name: string;
  waitedNs: number;
  slices: number;
}

/**
 * CPU seconds per kind of thread of a node process while something runs, sampled from
 * /proc/<pid>/task/* (clock ticks of 1/100 s). Node names its threads "node" but for the CSV
 * redaction workers, which name themselves "csv-worker" (started before their document when they
 * are spares); the others are told apart by when they exist: the event loop (thread id = pid), threads started during the
 * run (a document's worker threads; one ending between samples loses at most one interval),
 * and the threads that were there before (V8's helpers, mostly garbage collection, and libuv's pool).
 * Threads whose ids the caller knows (`named`, e.g. a bench's own client thread) are counted under their name.
 */
export class ThreadCpuSampler {
  /** Ticks per thread id: at the start, and the last seen. */
  private readonly first = new Map<string, Sample>();
  private readonly last = new Map<string, Sample>();
  private readonly timer: NodeJS.Timeout;

  constructor(
    private readonly pid: number,
    intervalMs = 50,
    private readonly named = new Map<string, string>(),
  ) {
    for (const [tid, sample] of this.sample()) this.first.set(tid, sample);
    this.timer = setInterval(() => this.record(), intervalMs);
  }

  /** Stops sampling; CPU seconds per kind of thread. */
  stop(): Map<string, number> {
    clearInterval(this.timer);
    this.record();
    const byKind = new Map<string, number>();
    for (const [tid, { ticks }] of this.last) {
      const kind = this.kindOf(tid);
      byKind.set(kind, (byKind.get(kind) ?? 0) + (ticks - (this.first.get(tid)?.ticks ?? 0)) / 100);
    }
    return byKind;
  }

  /**
   * After stop: per kind of thread, the seconds its threads were ready to run and waited for a core
   * (the kernel's run queue, /proc/.../schedstat) and how many times they were put on a core.
   */
  queued(): Map<string, { waitedSeconds: number; slices: number }> {
    const byKind = new Map<string, { waitedSeconds: number; slices: number }>();
    for (const [tid, { waitedNs, slices }] of this.last) {
      const kind = this.kindOf(tid);
      const sum = byKind.get(kind) ?? { waitedSeconds: 0, slices: 0 };
      sum.waitedSeconds += (waitedNs - (this.first.get(tid)?.waitedNs ?? 0)) / 1e9;
      sum.slices += slices - (this.first.get(tid)?.slices ?? 0);
      byKind.set(kind, sum);
    }
    return byKind;
  }

  private kindOf(tid: string): string {
    const name = this.last.get(tid)?.name;
    return (
      this.named.get(tid) ??
      (tid === String(this.pid)
        ? "event loop"
        : name === "csv-worker"
          ? "CSV workers"
          : this.first.has(tid)
            ? "helper threads (GC, libuv)"
            : "threads started (workers)")
    );
  }

  /** The ids of a process's threads now (to name one started next: the id that was not there before). */
  static threadIds(pid: number): string[] {
    try {
      return readdirSync(`/proc/${pid}/task`);
    } catch {
      return [];
    }
  }

  private record(): void {
    for (const [tid, entry] of this.sample()) this.last.set(tid, entry);
  }

  private sample(): Map<string, Sample> {
    const threads = new Map<string, Sample>();
    for (const tid of ThreadCpuSampler.threadIds(this.pid)) {
      try {
        const stat = readFileSync(`/proc/${this.pid}/task/${tid}/stat`, "utf8");
        const fields = stat.slice(stat.lastIndexOf(") ") + 2).split(" ");
        // schedstat: nanoseconds on a core, nanoseconds waiting for one, times put on one.
        const [, waitedNs, slices] = readFileSync(`/proc/${this.pid}/task/${tid}/schedstat`, "utf8").trim().split(" ").map(Number);
        threads.set(tid, {
          ticks: Number(fields[11]) + Number(fields[12]),
          name: stat.slice(stat.indexOf("(") + 1, stat.lastIndexOf(") ")),
          waitedNs: waitedNs ?? 0,
          slices: slices ?? 0,
        });
      } catch {
        // the thread ended between listing and reading
      }
    }
    return threads;
  }
}
