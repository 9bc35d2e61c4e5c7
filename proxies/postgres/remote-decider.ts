import { VerdictMemo, type RememberedVerdict } from "../../decision/verdict-memo";
import type { Verdict, VerdictInterner } from "../../decision/verdicts";
import type { MappingView, RowDecider, RowVerdict } from "../../exports/row-decider";
import type { DecideAnswer } from "./worker-messages";

/** A verdict the node made, with the mapping key (configuration revision) it was made under and the node's lifetime of it. */
interface Remembered extends RememberedVerdict {
  verdict: Verdict;
}

/**
 * An export's decisions in a proxy worker process: verdicts the serving node made, kept with the
 * node's lifetime (the configuration revision, the node's expiry of each) and forgotten when
 * the node says a user changed, or that it may have missed changes. A user with no verdict here
 * is decided by the node (`load`); nothing is guessed.
 */
export class RemoteDecider implements RowDecider {
  private readonly memo = new VerdictMemo<Remembered>();

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
    return this.memo.get(userId, this.view.key)?.verdict;
  }

  expiresAt(userId: string): number | undefined {
    return this.memo.get(userId, this.view.key)?.expiresAt;
  }

  forget(userId: string): void {
    this.memo.forget(userId);
  }

  /** Every verdict goes (the node may have missed user changes). */
  forgetAll(): void {
    this.memo.forgetAll();
  }

  async load(userIds: readonly string[]): Promise<void> {
    const answer = await this.decide(userIds);
    // Verdicts are made with the node's newest mapping: it is at least as new as the one held here.
    this.view = answer.mapping;
    for (const { userId, allowed, reason, categories, expiresAt } of answer.verdicts) {
      this.memo.set(userId, { verdict: this.verdicts.intern(allowed, reason, categories), madeUnder: answer.mapping.key, expiresAt });
    }
  }
}
