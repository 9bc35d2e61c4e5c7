import { isObject, nestsDeeperThan, recordLimits, summaryAdvice, userIdOf } from "../../decision/record-redaction";
import { recordOutcome } from "../../decision/record-outcome";
import { refusedAnswer } from "./refused";
import type { PipelineAnswer, RecordCounts, RecordRedactor } from "./types";
import type { RecordPlan } from "../../decision/record-redaction";
import type { Decision } from "../../decision/types";
import type { ExportDecider } from "../../exports/export-decider";

const dropped = (summary: string): PipelineAnswer => ({ dropped: true, advice: [summaryAdvice(summary)] });

/**
 * Nothing can be decided now (the configuration is not in memory yet, a decision was not made):
 * not an answer. The stream retries the record; HTTP and NATS requests answer
 * ERR_PIPELINE_UNAVAILABLE, and the client asks again.
 */
export class PipelineUnavailable extends Error {}

/**
 * One pipeline export's record redaction (policy-semantics 4, the same rules as PUT
 * /redact/record): the user from the resource-context fields, the export's purpose decided once
 * per user from the cached engine (traced by the decider) and reused until the user or the
 * configuration changes; every field the decision does not allow emptied. No configuration or
 * no mapping group: every record is dropped (fail closed).
 */
export class PipelineRedactor implements RecordRedactor {
  readonly counts: RecordCounts = { in: 0, kept: 0, dropped: 0, valuesNulled: 0 };

  constructor(
    private readonly decider: ExportDecider,
    private readonly mappingGroup: string,
  ) {}

  /** Answers in order; throws PipelineUnavailable when nothing can be decided now. */
  async redactAll(records: readonly unknown[]): Promise<PipelineAnswer[]> {
    if (!this.decider.hasPolicy()) await this.decider.warm();
    if (!this.decider.hasPolicy()) throw new PipelineUnavailable("the configuration is not in memory yet");
    const plan = this.decider.recordPlan();
    const decided = new Map<string, Decision>();
    if (plan) {
      const unknown = new Set<string>();
      for (const record of records) {
        const userId = isObject(record) ? userIdOf(record, plan) : undefined;
        const known = userId === undefined ? undefined : this.decider.decision(userId);
        if (known) decided.set(userId!, known);
        else if (userId !== undefined) unknown.add(userId);
      }
      // The decisions made now are used as made: the memo may be cleared by another door meanwhile.
      if (unknown.size > 0) for (const [userId, decision] of await this.decider.load([...unknown])) decided.set(userId, decision);
    }
    return records.map((record) => this.count(this.answer(record, plan, decided)));
  }

  private answer(record: unknown, plan: RecordPlan | undefined, decided: ReadonlyMap<string, Decision>): PipelineAnswer {
    if (!isObject(record)) return refusedAnswer("ERR_PIPELINE_RECORD_INVALID", "a record is one JSON object");
    if (nestsDeeperThan(record, recordLimits.depth))
      return refusedAnswer("ERR_PIPELINE_RECORD_INVALID", `the record nests deeper than ${recordLimits.depth} levels`);
    if (!plan) return dropped(`Dropped: the export's mapping group '${this.mappingGroup}' is not configured.`);
    const userId = userIdOf(record, plan);
    const decision = userId === undefined ? null : decided.get(userId);
    if (decision === undefined) throw new PipelineUnavailable("a decision was not made");
    const outcome = recordOutcome(record, plan, decision);
    if (outcome.kind === "invalid") return refusedAnswer("ERR_PIPELINE_RECORD_INVALID", outcome.message);
    if (outcome.kind === "dropped") return dropped(outcome.summary);
    for (const field of Object.values(outcome.fields)) if (!field.kept) this.counts.valuesNulled++;
    return { dropped: false, record: outcome.record, advice: [summaryAdvice(outcome.summary)] };
  }

  private count(answer: PipelineAnswer): PipelineAnswer {
    this.counts.in++;
    if (answer.dropped) this.counts.dropped++;
    else this.counts.kept++;
    return answer;
  }
}
