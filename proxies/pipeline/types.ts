import type { SummaryAdvice } from "../../decision/record-redaction";

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
export type JsonRecord = { [key: string]: Json };

/**
 * What a pipeline export answers for one record, whichever way it came in (spec 4.4 rule 5):
 * always the summary advice; the redacted record only when kept. A dropped or refused record
 * answers none of its values.
 */
export type PipelineAnswer =
  | { dropped: false; record: JsonRecord; advice: [SummaryAdvice] }
  | { dropped: true; advice: [SummaryAdvice] }
  | { dropped: true; error: { code: PipelineRecordError; message: string }; advice: [SummaryAdvice] };

/** Why one record was refused (the others of a stream go on). */
export type PipelineRecordError =
  | "ERR_PIPELINE_RECORD_INVALID"
  | "ERR_PIPELINE_UNAVAILABLE"
  | "ERR_AUTH_REQUIRED"
  | "ERR_AUTH_INVALID"
  | "ERR_AUTH_UNSUPPORTED"
  | "ERR_AUTH_UNAVAILABLE"
  | "ERR_AUTH_THROTTLED"
  | "ERR_AUTH_FORBIDDEN"
  | "ERR_AUDIT_UNAVAILABLE";

/** Redacts records for one export; answers in the order given. */
export interface RecordRedactor {
  redactAll(records: readonly unknown[]): Promise<PipelineAnswer[]>;
}

/** Counts of one export's records, for GET /export. */
export interface RecordCounts {
  in: number;
  kept: number;
  dropped: number;
  valuesNulled: number;
}
