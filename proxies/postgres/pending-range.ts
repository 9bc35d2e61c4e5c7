const empty = Buffer.alloc(0);

/**
 * Bytes of one source buffer not handled yet, source[start, end): a range that grows while the
 * next range is adjacent to it, so a run of messages passed as they came is handled as one.
 */
export class PendingRange {
  source: Buffer = empty;
  start = 0;
  end = 0;

  get size(): number {
    return this.end - this.start;
  }

  /** Adds source[start, end); false when it does not follow the range (end the range, then `restart`). */
  extend(source: Buffer, start: number, end: number): boolean {
    if (source !== this.source || start !== this.end) return false;
    this.end = end;
    return true;
  }

  restart(source: Buffer, start: number, end: number): void {
    this.source = source;
    this.start = start;
    this.end = end;
  }

  clear(): void {
    this.restart(empty, 0, 0);
  }
}
