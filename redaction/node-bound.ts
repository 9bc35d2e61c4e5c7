/**
 * A quantity the whole node holds at once, up to a limit the operator sets: CSV worker threads
 * documents hold (REDACTION_MAX_WORKERS), range buffers GetObjects hold
 * (OBJECTSTORE_RANGE_MEMORY_BYTES). A taker that finds too little free does without (goes on on
 * the calling thread, reads fewer ranges), so no one waits for another to give back.
 */
export class NodeBound {
  held = 0;

  constructor(public limit: number) {}

  /** Holds `amount` more when it fits, or regardless (`always`: what takes the place of something just given back). */
  take(amount: number, always = false): boolean {
    if (!always && this.held + amount > this.limit) return false;
    this.held += amount;
    return true;
  }

  giveBack(amount: number): void {
    this.held -= amount;
  }
}
