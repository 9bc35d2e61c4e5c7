import type { Verdict } from "../decision/verdicts";
import type { DecisionRequest } from "../decision/types";

/** Document formats a redaction job reads and writes (the output is in the input's format). */
export const documentFormats = {
  csv: "text/csv",
  json: "application/json",
  ndjson: "application/x-ndjson",
} as const;

export type DocumentFormat = keyof typeof documentFormats;

/** What a document is redacted for (spec 4.4 query). */
export interface RedactionRequest {
  type: DecisionRequest["type"];
  purposeId: string;
  mappingGroup: string;
  thirdPartyId?: string;
  termsId?: string;
}

/** What one user's rows get: the same object for every user with the same outcome. */
export type RowDecision = Verdict;

/** Where a redactor gets decisions: `prepare` looks users up in bulk, then `of` answers at once. */
export interface DecisionSource {
  prepare(userIds: readonly string[]): Promise<void>;
  of(userId: string): RowDecision;
}

/** Why a field is emptied, per record field (policy-semantics 4). */
export interface FieldTally {
  /** The category the mapping gives the field, or null (unmapped, or mapped to no category). */
  category: string | null;
  kept: number;
  emptied: number;
  why: string;
}

/** Counts a redactor keeps as it goes; they become the job's stats. */
export interface RedactionTally {
  bytesIn: number;
  bytesOut: number;
  /** Data rows or records read (a CSV header and empty lines are not rows). */
  rowsIn: number;
  rowsKept: number;
  emptyLines: number;
  droppedBy: Record<string, number>;
  fields: Record<string, FieldTally>;
}

/** A document that cannot be redacted: the job fails with this, naming where. */
export class DocumentError extends Error {
  constructor(
    readonly code: string,
    message: string,
    readonly where: { line?: number; record?: number } = {},
  ) {
    super(message);
    this.name = "DocumentError";
  }
}

/** Streams one document through redaction: bytes in, redacted bytes out, in order. */
export interface DocumentRedactor {
  /** Redacts every row the chunk completes; returns their output (possibly empty). */
  push(chunk: Buffer): Promise<Buffer>;
  /** Redacts what is left and closes the document; throws DocumentError when it is incomplete. */
  end(): Promise<Buffer>;
  tally(): RedactionTally;
}

/** Limits that keep a hostile document from exhausting a node (docs/redaction.md). */
export const documentLimits = {
  /** One CSV row, JSON array element or NDJSON line. */
  maxRecordBytes: 8 * 1024 * 1024,
  /** Nesting of objects and arrays within one record. */
  maxDepth: 32,
  /** Distinct field paths counted in the stats; further ones are counted together. */
  maxTalliedFields: 1000,
} as const;
