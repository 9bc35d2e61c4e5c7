import type { VerdictState } from "./verdict-table";

/** How long a statement waits for its database's verdicts to be current before it is refused. */
const currentWithinMs = 10_000;

/**
 * One database's verdict table as a session sees it (pushdown): the version in the table and
 * whether it holds every change the node knows of. Fed by the table itself on the node, or by
 * the node's messages in a proxy worker.
 */
export class VerdictWatch {
  private value: VerdictState = { version: 0, current: false };
  private readonly waiters = new Set<{ resolve(state: VerdictState): void; reject(error: Error): void }>();
  private readonly listeners = new Set<() => void>();

  state(): VerdictState {
    return this.value;
  }

  /** Called after every change of state; returns how to stop. */
  onChange(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  set(state: VerdictState): void {
    this.value = state;
    for (const listener of this.listeners) listener();
    if (!state.current && state.error === undefined) return;
    for (const waiter of [...this.waiters]) {
      if (state.current) waiter.resolve(state);
      else waiter.reject(new Error(state.error));
    }
  }

  /** The state once current; rejects when the table reports a failure or is not current in time. */
  whenCurrent(): Promise<VerdictState> {
    if (this.value.current) return Promise.resolve(this.value);
    return new Promise((resolve, reject) => {
      const waiter = {
        resolve: (state: VerdictState) => {
          this.waiters.delete(waiter);
          clearTimeout(timer);
          resolve(state);
        },
        reject: (error: Error) => {
          this.waiters.delete(waiter);
          clearTimeout(timer);
          reject(error);
        },
      };
      const timer = setTimeout(() => waiter.reject(new Error("the export's verdicts were not brought up to date in time")), currentWithinMs);
      this.waiters.add(waiter);
    });
  }
}

/** The verdict tables of one pushdown export, by database (a session asks for its own). */
export interface PushdownVerdicts {
  of(database: string): VerdictWatch;
}
