import type { RecordPlan } from "../../decision/record-redaction";
import type { ExportDecider } from "../../exports/export-decider";
import type { DecisionSource, RowDecision } from "../../redaction/types";

/** A user's verdict went stale while it was loaded three times in a row (users changing under the document). */
const loadAttempts = 3;

/**
 * The export's decider as the document redactors ask for decisions: `prepare` has the decider
 * decide (and trace) the users it has no verdict for; `of` answers from its memory. A verdict
 * voided meanwhile (the user changed) is decided again; one still missing when a row needs it,
 * or a configuration change under the document (its field plan would no longer match the
 * verdicts), throws: the document is cut off, never written with a wrong decision.
 */
export class ExportDecisionSource implements DecisionSource {
  constructor(
    private readonly decider: ExportDecider,
    private readonly plan: RecordPlan,
  ) {}

  async prepare(userIds: readonly string[]): Promise<void> {
    for (let attempt = 0; attempt < loadAttempts; attempt++) {
      this.checkPlan();
      const missing = [...new Set(userIds)].filter((userId) => this.decider.verdict(userId) === undefined);
      if (missing.length === 0) return;
      await this.decider.load(missing);
    }
    throw new Error("user verdicts kept changing while the document was decided");
  }

  of(userId: string): RowDecision {
    this.checkPlan();
    const verdict = this.decider.verdict(userId);
    if (!verdict) throw new Error("a user's verdict is not loaded");
    return verdict;
  }

  private checkPlan(): void {
    if (this.decider.recordPlan() !== this.plan) throw new Error("the configuration changed while the document was redacted");
  }
}
