import { summaryAdvice } from "../../decision/record-redaction";
import type { PipelineAnswer, PipelineRecordError } from "./types";

/** A record refused before any decision: an error and the advice, none of its values. */
export function refusedAnswer(code: PipelineRecordError, message: string): PipelineAnswer {
  return { dropped: true, error: { code, message }, advice: [summaryAdvice(`Refused: ${message}.`)] };
}
