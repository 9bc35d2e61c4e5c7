import { isObject, nestsDeeperThan, recordLimits, RecordShapeError, summaryAdvice, userIdOf } from "../../decision/record-redaction";
import { recordOutcome } from "../../decision/record-outcome";
import { refusedAnswer } from "./refused";
import type { PipelineAnswer, RecordCounts, RecordRedactor } from "./types";
import type { RecordPlan } from "../../decision/record-redaction";
import type { Decision } from "../../decision/types";
import type { ExportDecider } from "../../exports/export-decider";

/** What reading a record gives: its user id (undefined: it names none), or why it is refused. */
type RecordRead = { userId: string | undefined } | { refused: string };

/** Reads a record once, before anything is decided: a refused record decides (and traces) nothing. */
function readRecord(record: unknown, plan: RecordPlan | undefined): RecordRead {
  if (!isObject(record)) return { refused: "a record is one JSON object" };
  if (nestsDeeperThan(record, recordLimits.depth)) return { refused: `the record nests deeper than ${recordLimits.depth} levels` };
  if (!plan) return { userId: undefined };
  try {
    return { userId: userIdOf(record, plan) };
  } catch (error) {
    if (error instanceof RecordShapeError) return { refused: error.message };
    throw error;
  }
}

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
    // Each record is read once: the user decided for it is the one its answer uses, and a refused one decides nothing.
    const reads = records.map((record) => readRecord(record, plan));
    const decided = new Map<string, Decision>();
    const unknown = new Set<string>();
    for (const read of reads) {
      if (!("userId" in read) || read.userId === undefined) continue;
      const known = this.decider.decision(read.userId);
      if (known) decided.set(read.userId, known);
      else unknown.add(read.userId);
    }
    // The decisions made now are used as made: the memo may be cleared by another door meanwhile.
    if (unknown.size > 0) for (const [userId, decision] of await this.decider.load([...unknown])) decided.set(userId, decision);
    const answers = records.map((record, index) => this.answer(record, plan, reads[index]!, decided));
    // Records dropped without a decision say why in the trace too, before they are answered (policy-semantics 8).
    const undecided: Record<string, number> = {};
    reads.forEach((read) => {
      if ("refused" in read) return;
      const reason = !plan ? "MAPPING_GROUP_MISSING" : read.userId === undefined ? "NO_USER_ID" : undefined;
      if (reason) undecided[reason] = (undecided[reason] ?? 0) + 1;
    });
    if (Object.keys(undecided).length > 0) await this.decider.traceUndecided(undecided);
    return answers.map((answer) => this.count(answer));
  }

  private answer(record: unknown, plan: RecordPlan | undefined, read: RecordRead, decided: ReadonlyMap<string, Decision>): PipelineAnswer {
    if ("refused" in read) return refusedAnswer("ERR_PIPELINE_RECORD_INVALID", read.refused);
    if (!plan) return dropped(`Dropped: the export's mapping group '${this.mappingGroup}' is not configured.`);
    const decision = read.userId === undefined ? null : decided.get(read.userId);
    if (decision === undefined) throw new PipelineUnavailable("a decision was not made");
    // A record read without refusal is an object (readRecord).
    const outcome = recordOutcome(record as Parameters<typeof recordOutcome>[0], plan, decision);
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
