import type { InputSink } from "./direct-input";
import type { PipelineWaits } from "./pipeline-waits";
import type { Verdict } from "../decision/verdicts";
import type { DecisionRequest } from "../decision/types";
import type { CsvVerdicts } from "./csv-verdicts";
import type { Tally } from "./tally";

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
  /**
   * The caller has written `output` (a result of push or end) and reads it no more: its memory
   * may take a later output. Optional to call; a redactor without reusable outputs has no such method.
   */
  written?(output: Buffer): void;
  /** Releases what the redactor holds beyond memory (worker threads); safe to call more than once. */
  close(): Promise<void>;
  /**
   * Where it can, the rest of the input written straight into its buffers instead of pushed (direct-input.ts):
   * undefined while it cannot (yet). `resume` is called when the reader it stopped may read again.
   */
  directSink?(resume: () => void): InputSink | undefined;
  /** With a direct sink: the output released since the last call (waiting for some); undefined once all of it is out. */
  output?(): Promise<Buffer | undefined>;
  /** Where the document's pipeline waits, when that is measured (REDACTION_PIPELINE_WAITS=1). */
  readonly waits?: PipelineWaits;
}

/** Limits that keep a hostile document from exhausting a node (docs/redaction.md). */
export const documentLimits = {
  /** One CSV row, JSON array element or NDJSON line. */
  maxRecordBytes: 8 * 1024 * 1024,
  /** Nesting of objects and arrays within one record. */
  maxDepth: 32,
  /** Distinct field paths counted in the stats; further ones are counted together. */
  maxTalliedFields: 1000,
  /** Users whose decision one job remembers; past this the memo starts over. */
  maxRememberedUsers: 500_000,
} as const;

/** What a CSV row's user gets: shared by the users with the same decision, numbered per document. */
export interface CsvVerdict {
  id: number;
  allowed: boolean;
  /** Reason code of a drop. */
  reason: string;
  /** Per column: 1 when a kept row keeps the field, 0 when it is emptied. */
  keep: Uint8Array;
}

/** The header row, as far as the data rows need it. */
export interface CsvHeader {
  names: string[];
  /** Columns holding the user id, in mapping order. */
  userColumns: number[];
  /** The header's row ending (LF or CRLF); every output row ends with it. */
  terminator: Buffer;
}

/** A row the scan refused: the document fails with it. */
export interface CsvRowFault {
  code: string;
  /** What is wrong, after "the row on line N". */
  detail: string;
  /** The line the row starts on, counted from the line the scan started on. */
  line: number;
  /** Offset of the row's first byte in the scanned buffer. */
  rowStart: number;
}

/** What redacting a run of CSV rows counted; merged into the document's tally in document order. */
export interface CsvCounts {
  rowsIn: number;
  /** Rows without a user id. */
  noUserId: number;
  /** Rows per verdict id, kept or dropped. */
  rowsByVerdict: number[];
}

/** A CSV document's state after its first rows, for a redactor that goes on with it. */
export interface CsvHandover {
  header: CsvHeader;
  verdicts: CsvVerdicts;
  tally: Tally;
  /** The line the next row starts on. */
  line: number;
  /** The rest of the input not yet redacted (an unfinished row). */
  carry: Buffer;
  /** Where `carry` starts in the document. */
  offset: number;
}

/** How CSV redaction uses worker threads (docs/redaction.md). */
export interface CsvThreading {
  /** Worker threads redacting rows; 0: the calling thread redacts them all. */
  workers: number;
  /** Input handed to a worker at once (cut at a line end). */
  blockBytes: number;
  /** Documents up to this size are redacted on the calling thread: starting workers would cost more. */
  inlineBytes: number;
}

/** Messages from the thread that owns a CSV document to one of its workers. */
export type CsvWorkerRequest =
  /** A block to redact; `output`, when given, is a buffer to write its output into if it is big enough (else it comes back as `unused`). */
  | { kind: "block"; task: number; input: ArrayBuffer; length: number; final: boolean; output?: ArrayBuffer }
  /** The answer to `users`: a verdict id per user asked about, and the verdicts the worker has not seen yet. */
  | { kind: "decisions"; task: number; verdictIds: number[]; verdicts: CsvVerdict[] }
  /** The block does not start where a row starts: drop it. */
  | { kind: "abandon"; task: number }
  /** The document the worker serves from now on (csv-worker-pool.ts hands a worker to one document at a time). */
  | { kind: "setup"; setup: CsvWorkerSetup }
  /** The document is over: the worker drops everything of it and answers `released`. */
  | { kind: "release" };

/** Messages from a CSV worker. */
export type CsvWorkerReport =
  /** The block's rows are found; `users` are the ones whose decisions the worker needs before it writes them. */
  | { kind: "scanned"; task: number; end: number; lines: number; emptyLines: number; fault?: CsvRowFault; users: string[] }
  /**
   * The block is written (`output` holds `outputLength` bytes), or abandoned (no output); `input` comes back, and the output buffer it was given if unused.
   * A block written as soon as it was scanned (no user new to the worker) carries its `scanned` report: one message instead of two.
   */
  | {
      kind: "done";
      task: number;
      input: ArrayBuffer;
      output?: ArrayBuffer;
      outputLength: number;
      counts?: CsvCounts;
      unused?: ArrayBuffer;
      scanned?: CsvBlockScanned;
    }
  /** The answer to `release`: nothing of the document comes after it. */
  | { kind: "released" };

/** A worker's report that a block's rows are found (CsvWorkerReport). */
export type CsvBlockScanned = Extract<CsvWorkerReport, { kind: "scanned" }>;

/** What a CSV worker is given for a document. */
export interface CsvWorkerSetup {
  columns: number;
  userColumns: number[];
  terminator: Uint8Array;
}
