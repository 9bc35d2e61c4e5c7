import { operationOutcome, type IssueCode, type OperationOutcome } from "../../protocols/fhir/operation-outcome";

/** A FHIR answer that is an error: its HTTP status and the OperationOutcome that says why. */
export class FhirError extends Error {
  constructor(
    readonly status: number,
    readonly code: IssueCode,
    message: string,
    readonly items?: ReadonlyArray<{ expression: string; diagnostics: string }>,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = "FhirError";
  }

  outcome(): OperationOutcome {
    return operationOutcome(this.code, this.message, this.items);
  }
}

/**
 * The one answer for a resource that is absent, gone, or not released (its patient may not be
 * used, or none can be found): the same bytes in every case, so a read reveals nothing.
 */
export const notFound = (): FhirError => new FhirError(404, "not-found", "no such resource");
