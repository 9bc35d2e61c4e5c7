import { keptSummary, RecordShapeError, redactRecord, summaryAdvice, userIdOf } from "../../actors/decision/record-redaction";
import { refusedAnswer } from "../../proxies/pipeline/refused";
import type { PipelineAnswer, RecordCounts, RecordRedactor } from "../../proxies/pipeline/types";
import type { ExportDecider } from "../export/export-decider";

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

const dropped = (summary: string): PipelineAnswer => ({ dropped: true, advice: [summaryAdvice(summary)] });

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

  async redactAll(records: readonly unknown[]): Promise<PipelineAnswer[]> {
    let plan = this.decider.recordPlan();
    if (!plan) {
      await this.decider.warm();
      plan = this.decider.recordPlan();
    }
    if (plan) {
      const unknown = new Set<string>();
      for (const record of records) {
        const userId = isRecord(record) ? userIdOf(record, plan) : undefined;
        if (userId !== undefined && !this.decider.decision(userId)) unknown.add(userId);
      }
      if (unknown.size > 0) await this.decider.load([...unknown]);
    }
    return records.map((record) => this.count(this.answer(record)));
  }

  private answer(record: unknown): PipelineAnswer {
    if (!isRecord(record)) return refusedAnswer("ERR_PIPELINE_RECORD_INVALID", "a record is one JSON object");
    const plan = this.decider.recordPlan();
    if (!plan) return dropped(`Dropped: the export's mapping group '${this.mappingGroup}' is not configured.`);
    const userId = userIdOf(record, plan);
    if (userId === undefined) return dropped(`Dropped: the record names no user (mapping group '${plan.group}').`);
    const decision = this.decider.decision(userId);
    if (!decision) return dropped("Dropped: the decision could not be made now.");
    if (!decision.allowed) return dropped(decision.summary);
    try {
      const redacted = redactRecord(record as never, plan, decision);
      for (const outcome of Object.values(redacted.fields)) if (!outcome.kept) this.counts.valuesNulled++;
      return { dropped: false, record: redacted.record, advice: [summaryAdvice(keptSummary(decision.summary, redacted.fields))] };
    } catch (error) {
      if (error instanceof RecordShapeError) return refusedAnswer("ERR_PIPELINE_RECORD_INVALID", error.message);
      throw error;
    }
  }

  private count(answer: PipelineAnswer): PipelineAnswer {
    this.counts.in++;
    if (answer.dropped) this.counts.dropped++;
    else this.counts.kept++;
    return answer;
  }
}
