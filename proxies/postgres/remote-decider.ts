import { maxRememberedVerdicts } from "../../decision/verdict-lifetime";
import type { Verdict, VerdictInterner } from "../../decision/verdicts";
import type { MappingView, RowDecider, RowVerdict } from "./types";
import type { DecideAnswer } from "./worker-messages";

interface Remembered {
  verdict: Verdict;
  /** The mapping (configuration revision) the verdict was made under: a newer one voids it. */
  mappingKey: string;
  /** The node's lifetime of the verdict. */
  expiresAt: number;
}

/**
 * An export's decisions in a proxy worker process: verdicts the serving node made, kept with the
 * node's lifetime (the configuration revision, the node's expiry of each) and forgotten when
 * the node says a user changed, or that it may have missed changes. A user with no verdict here
 * is decided by the node (`load`); nothing is guessed.
 */
export class RemoteDecider implements RowDecider {
  private readonly memo = new Map<string, Remembered>();
  /** A clock read twice a second: verdicts are looked up per row, and their lifetime is minutes. */
  private now = Date.now();
  private readonly clock = setInterval(() => (this.now = Date.now()), 500).unref();

  constructor(
    private view: MappingView,
    private readonly verdicts: VerdictInterner,
    private readonly decide: (userIds: readonly string[]) => Promise<DecideAnswer>,
  ) {}

  mapping(): MappingView {
    return this.view;
  }

  /** The node's mapping changed (a new configuration revision, or the group changed). */
  remap(view: MappingView): void {
    this.view = view;
  }

  verdict(userId: string): RowVerdict | undefined {
    return this.remembered(userId)?.verdict;
  }

  expiresAt(userId: string): number | undefined {
    return this.remembered(userId)?.expiresAt;
  }

  /** The user's verdict while it holds (dropped once its mapping or lifetime is past). */
  private remembered(userId: string): Remembered | undefined {
    const remembered = this.memo.get(userId);
    if (!remembered) return undefined;
    if (remembered.mappingKey !== this.view.key || this.now >= remembered.expiresAt) {
      this.memo.delete(userId);
      return undefined;
    }
    return remembered;
  }

  forget(userId: string): void {
    this.memo.delete(userId);
  }

  /** Every verdict goes (the node may have missed user changes). */
  forgetAll(): void {
    this.memo.clear();
  }

  async load(userIds: readonly string[]): Promise<void> {
    const answer = await this.decide(userIds);
    // Verdicts are made with the node's newest mapping: it is at least as new as the one held here.
    this.view = answer.mapping;
    if (this.memo.size > maxRememberedVerdicts) this.memo.clear();
    for (const { userId, allowed, reason, categories, expiresAt } of answer.verdicts) {
      this.memo.set(userId, { verdict: this.verdicts.intern(allowed, reason, categories), mappingKey: answer.mapping.key, expiresAt });
    }
  }

  close(): void {
    clearInterval(this.clock);
  }
}
