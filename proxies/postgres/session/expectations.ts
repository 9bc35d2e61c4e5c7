import type { QueryAnalysis } from "../analysis/statement-analysis";
import type { NamedChange } from "./named-results";

/** A query the proxy runs on the client's connection, whose answer the client never sees. */
export interface InternalQuery {
  results: string[][][];
  error?: string;
  done(): void;
}

/**
 * A Describe forwarded to the backend. `forClient`: the client's own (its answer is forwarded),
 * otherwise the proxy's (kept from the client). `decidesRows`: the answer describes the rows of
 * the Execute right behind it: the proxy's Describe of the portal, or the client's own Describe
 * of that portal when it came just before the Execute (nothing between them can change it).
 */
export interface DescribeExpectation {
  kind: "describe";
  forClient: boolean;
  decidesRows: boolean;
  /** The described portal's name (`portal`) or statement's: what it returns is looked up when the answer comes (the backend's objects as confirmed by then). */
  portal: boolean;
  name: string;
}

/** An Execute's row limit: `rows` of `portal` (its name as sent); `finished` lets the client's next messages go. */
export interface RowLimit {
  portal: Buffer;
  rows: number;
  finished?: () => void;
}

/** What the backend will answer, in order, for the messages forwarded so far (only what the proxy must tell apart). */
export type Expectation =
  /** A Query: its statements' effects, in order; `index` is the one being answered. */
  | { kind: "simple"; analysis: QueryAnalysis; index: number }
  | DescribeExpectation
  /** `limit`: the client asked for at most that many rows. `portal`: its name (what its statement does is looked up when it completes). */
  | { kind: "execute"; limit?: RowLimit; portal: string }
  | { kind: "sync" }
  /**
   * The client ended a COPY (CopyDone, CopyFail) before the proxy saw it start: the messages between
   * a COPY FROM STDIN and this reach the backend during COPY IN. Never at the head of the queue.
   */
  | { kind: "copyEnd" }
  /**
   * ParseComplete, BindComplete, CloseComplete: tracked so the queue mirrors the backend exactly (a
   * Parse's analysis maps error positions back). `change`: the statement or portal it makes or
   * closes, applied when it comes (never when an error comes instead).
   */
  | { kind: "complete"; code: number; analysis?: QueryAnalysis; change?: NamedChange }
  /** A statement the export refused: its error goes to the client in turn, nothing went to the backend. */
  | { kind: "refusal"; error: Buffer; readyForQuery: boolean }
  | { kind: "internal"; query: InternalQuery };

/** Expectations with nothing of their own, one object each, shared and never changed: none made per message. */
export const stateless = {
  sync: { kind: "sync" },
  copyEnd: { kind: "copyEnd" },
} as const satisfies Record<string, Expectation>;
