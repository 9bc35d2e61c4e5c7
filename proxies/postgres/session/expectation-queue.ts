import { encodeReadyForQuery } from "../../../protocols/postgres/ready-for-query";
import { FrontendCode, TransactionStatus } from "../../../protocols/postgres/codes";
import { ProtocolError } from "../../../protocols/postgres/wire";
import type { OutputBuffer } from "../output-buffer";
import { stateless, type Expectation } from "./expectations";

/**
 * The backend's protocol state as the proxy mirrors it: what the backend will answer, in order,
 * for the messages forwarded so far (and the refusals the proxy answers itself in their turn),
 * the transaction status, and COPY IN and skip-to-Sync, during which messages are answered by
 * nothing. The client pump pushes, the backend pump shifts.
 */
export class ExpectationQueue {
  readonly items: Expectation[] = [];
  transaction: TransactionStatus = TransactionStatus.Idle;
  /** Extended-protocol messages sent since the last Sync: the connection is not idle. */
  extendedOpen = false;
  copyingIn = false;
  /** The backend skips messages until Sync after an error in the extended protocol; so does the bookkeeping. */
  backendSkipsToSync = false;
  /** After a refused extended-protocol message, the client's messages are dropped until its Sync, as the backend does after an error. */
  clientSkipsToSync = false;

  get length(): number {
    return this.items.length;
  }

  head(): Expectation | undefined {
    return this.items[0];
  }

  last(): Expectation | undefined {
    return this.items[this.items.length - 1];
  }

  push(expectation: Expectation): void {
    this.items.push(expectation);
  }

  /** Nothing under way: no answer awaited, no extended-protocol batch open, no COPY, no transaction. */
  get idle(): boolean {
    return this.items.length === 0 && !this.extendedOpen && !this.copyingIn && this.transaction === TransactionStatus.Idle;
  }

  /** Removes the head expectation, and the ends of COPYs that turned out not to be running behind it. */
  shift(): Expectation | undefined {
    const done = this.items.shift();
    while (this.items[0]?.kind === "copyEnd") this.items.shift();
    return done;
  }

  /** Removes the head expectation; a row-limited Execute lets the client's next messages go. */
  finishExecute(): void {
    const done = this.shift();
    if (done?.kind === "execute") done.limit?.finished?.();
  }

  /** The client's Sync: the extended-protocol batch ends, and with it any skipping. */
  sync(): void {
    this.extendedOpen = false;
    this.backendSkipsToSync = false;
    this.clientSkipsToSync = false;
    this.items.push(stateless.sync);
  }

  /** An error in the extended protocol: the backend skips every message (a Query too) until the next Sync; `skipped` sees each expectation that will not be answered. */
  skipToSync(skipped?: (expectation: Expectation) => void): void {
    while (this.items.length > 0 && this.items[0]!.kind !== "sync") {
      skipped?.(this.items[0]!);
      this.finishExecute();
    }
    if (this.items.length === 0) this.backendSkipsToSync = true;
  }

  /**
   * The backend entered COPY IN for the head expectation (a Query or an Execute). It reads the
   * client's next messages as part of the COPY, until a CopyDone or CopyFail: the Syncs among them
   * it ignores, so they are answered by nothing. Returns false when the client sent anything else
   * there (PostgreSQL would fail the COPY on it; the proxy ends the connection instead of guessing).
   */
  enterCopyIn(): boolean {
    let end = 1;
    while (end < this.items.length && this.items[end]!.kind === "sync") end++;
    const ended = this.items[end]?.kind === "copyEnd";
    if (end < this.items.length && !ended) return false;
    this.items.splice(1, ended ? end : end - 1);
    this.copyingIn = !ended;
    return true;
  }

  /**
   * During COPY IN only copy messages, Flush and Sync may come. A Sync is not forwarded: the backend
   * ignores it in COPY IN but answers it once an error has ended the COPY, and which of the two
   * happens depends on timing the proxy cannot see. Returns whether the message is forwarded.
   */
  copyInFrame(code: number): boolean {
    switch (code) {
      case FrontendCode.CopyDone:
      case FrontendCode.CopyFail:
        this.copyingIn = false;
        return true;
      case FrontendCode.CopyData:
      case FrontendCode.Flush:
        return true;
      case FrontendCode.Sync:
        return false;
      default:
        throw new ProtocolError(`message '${String.fromCharCode(code)}' during COPY IN`);
    }
  }

  /** Answers the refusals at the head of the queue (their turn has come). */
  answerRefusals(out: OutputBuffer): void {
    for (let head = this.head(); head?.kind === "refusal"; head = this.head()) {
      this.shift();
      out.push(head.error);
      if (head.readyForQuery) out.push(encodeReadyForQuery(this.transaction));
    }
  }

  /** The connection closed: row-limited Executes still waiting let the client pump go (it then sees the close). */
  releaseWaiting(): void {
    for (const pending of this.items) if (pending.kind === "execute") pending.limit?.finished?.();
  }
}
