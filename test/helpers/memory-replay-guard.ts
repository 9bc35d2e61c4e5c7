import type { ReplayGuard } from "../../auth/types";

/** A single-process ReplayGuard for unit tests, on the test's clock. */
export class MemoryReplayGuard implements ReplayGuard {
  private readonly seenUntil = new Map<string, number>();

  constructor(private readonly now: () => number = Date.now) {}

  async firstUse(key: string, windowMs: number): Promise<boolean> {
    const now = this.now();
    const until = this.seenUntil.get(key);
    if (until !== undefined && until > now) return false;
    this.seenUntil.set(key, now + windowMs);
    return true;
  }
}
