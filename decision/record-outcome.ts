import { keptSummary, noUserSummary, RecordShapeError, redactRecord, type FieldOutcome, type RecordPlan } from "./record-redaction";
import type { Decision } from "./types";

type JsonRecord = Parameters<typeof redactRecord>[0];

/** What becomes of one record (policy-semantics 4): dropped with why, kept with its fields emptied as decided, or refused as not a record. */
export type RecordOutcome =
  | { kind: "dropped"; summary: string }
  | { kind: "kept"; record: JsonRecord; fields: Record<string, FieldOutcome>; summary: string }
  | { kind: "invalid"; message: string };

/**
 * The one rule every record door applies (PUT /redact/record, pipeline exports): no user in the
 * resource-context fields, or a user the purpose may not use: dropped; otherwise every field the
 * decision does not allow, and every unmapped one, emptied. `decision` is null when the record
 * names no user.
 */
export function recordOutcome(record: JsonRecord, plan: RecordPlan, decision: Decision | null): RecordOutcome {
  if (decision === null) return { kind: "dropped", summary: noUserSummary(plan.group) };
  if (!decision.allowed) return { kind: "dropped", summary: decision.summary };
  try {
    const redacted = redactRecord(record, plan, decision);
    return { kind: "kept", record: redacted.record, fields: redacted.fields, summary: keptSummary(decision.summary, redacted.fields) };
  } catch (error) {
    if (error instanceof RecordShapeError) return { kind: "invalid", message: error.message };
    throw error;
  }
}
