/** FHIR issue-type codes this service answers with (http://hl7.org/fhir/R4/valueset-issue-type.html). */
export type IssueCode =
  | "invalid"
  | "structure"
  | "required"
  | "value"
  | "security"
  | "login"
  | "forbidden"
  | "not-supported"
  | "not-found"
  | "too-costly"
  | "exception"
  | "timeout"
  | "transient"
  | "processing";

export interface OperationOutcome {
  resourceType: "OperationOutcome";
  issue: Array<{ severity: "fatal" | "error" | "warning" | "information"; code: IssueCode; diagnostics?: string; expression?: string[] }>;
}

/** One error issue, or one per item (a list of unknown mapping paths). */
export function operationOutcome(code: IssueCode, diagnostics: string, items?: ReadonlyArray<{ expression: string; diagnostics: string }>): OperationOutcome {
  if (items && items.length > 0)
    return {
      resourceType: "OperationOutcome",
      issue: items.map((item) => ({ severity: "error", code, diagnostics: `${diagnostics}: ${item.diagnostics}`, expression: [item.expression] })),
    };
  return { resourceType: "OperationOutcome", issue: [{ severity: "error", code, diagnostics }] };
}
