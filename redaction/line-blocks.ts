import { DocumentBufferPool } from "./buffer-pool";
import { documentLimits } from "./types";

const LF = 0x0a;
/** Room past a block's size for the chunk that completes it (a bigger chunk grows the buffer). */
const minSlack = 64 << 10;
/** The least free room handed to a reader that reads straight into the buffer (a socket read of Node's size). */
const minRoom = 64 << 10;

/**
 * Block buffers kept for reuse by every document of the process: a document's buffers, long-lived
 * and so in V8's old generation, would otherwise be garbage when it ends and wait for a mark-compact
 * (the node's RSS grew document after document where those were rare).
 */
const spare = new DocumentBufferPool(4);

/** A block of input in its own ArrayBuffer (so it can move to a worker without a copy). */
export interface InputBlock {
  input: ArrayBuffer;
  length: number;
}

/**
 * Input gathered into blocks of about `blockBytes` that end at a line end. Where a row ends can
 * only be known by reading every quote before it, which is the work the blocks are handed out
 * for: a line end is where a row most likely ends, and the reader of the block before checks it.
 */
export class LineBlocks {
  private buf: Buffer;
  private length = 0;
  /** Just after the last line feed gathered; 0 when there is none. */
  private lineEnd = 0;
  /**
   * What a block's buffer holds: a block and the chunk that completes it (the store's reads are 64 KiB).
   * Not twice the block: every buffer that comes back from a worker is new external memory to V8, and
   * what it adds up to per document (its byte lengths) is what starts the event loop's collections.
   */
  private readonly capacity: number;
  /**
   * The buffer whose free room was handed to a reader (`room`) that may still write into it (a
   * socket's reads land there): it never goes back for reuse by another document while lent.
   */
  private lent?: ArrayBuffer;

  constructor(private readonly blockBytes: number) {
    this.capacity = blockBytes + Math.max(blockBytes >> 2, minSlack);
    this.buf = this.fresh(0);
  }

  append(chunk: Buffer): void {
    if (this.length + chunk.length > this.buf.length) this.buf = this.moved(this.length + chunk.length, 0);
    chunk.copy(this.buf, this.length);
    this.gathered(chunk);
  }

  /**
   * The free room after what is gathered (at least `minRoom` bytes), for a reader to write the next
   * input into: bytes read there are gathered by `commit` without a copy. The buffer stays lent to
   * the reader (never reused by another document) until `endLoan`.
   */
  room(): Buffer {
    if (this.buf.length - this.length < minRoom) this.buf = this.moved(this.length + minRoom, 0);
    this.lent = this.buf.buffer as ArrayBuffer;
    return this.buf.subarray(this.length);
  }

  /**
   * Input that arrived: written at the start of the last `room` (gathered in place), or anywhere else,
   * a room handed out before the buffer moved (`prepend`) included (copied, as `append`).
   */
  commit(bytes: Buffer): void {
    const inPlace = bytes.buffer === this.buf.buffer && bytes.byteOffset === this.buf.byteOffset + this.length && this.length + bytes.length <= this.buf.length;
    if (!inPlace) return this.append(bytes);
    this.gathered(bytes);
  }

  /** The reader given `room` writes nothing more (its socket is closed): the buffer may be reused again. */
  endLoan(): void {
    this.lent = undefined;
  }

  /** `chunk` was just written after what is gathered. */
  private gathered(chunk: Buffer): void {
    const lf = chunk.lastIndexOf(LF);
    if (lf !== -1) this.lineEnd = this.length + lf + 1;
    this.length += chunk.length;
  }

  /** Puts bytes back in front of what is gathered: the unfinished row at the end of the last block. */
  prepend(bytes: Buffer): void {
    this.buf = this.moved(bytes.length + this.length, bytes.length);
    bytes.copy(this.buf, 0);
    this.length += bytes.length;
    if (this.lineEnd > 0) this.lineEnd += bytes.length;
  }

  /**
   * The next full block, cut after its last line feed, or undefined while there is none yet. A row
   * longer than any block (no line feed far past the size limit) is handed out as it is, for its
   * reader to refuse.
   */
  take(): InputBlock | undefined {
    if (this.length < this.blockBytes) return undefined;
    if (this.lineEnd > 0) return this.cut(this.lineEnd);
    return this.length > documentLimits.maxRecordBytes + this.blockBytes ? this.cut(this.length) : undefined;
  }

  /** Everything gathered (at the document's end; possibly nothing). */
  takeRest(): InputBlock {
    return this.cut(this.length);
  }

  private cut(cut: number): InputBlock {
    const block = { input: this.buf.buffer as ArrayBuffer, length: cut };
    const rest = this.buf.subarray(cut, this.length);
    this.buf = this.fresh(rest.length);
    rest.copy(this.buf);
    this.length = rest.length;
    this.lineEnd = 0;
    return block;
  }

  /** The unfinished end of one block followed by another block, as one block. */
  join(first: Buffer, second: Buffer): InputBlock {
    const joined = this.fresh(first.length + second.length);
    first.copy(joined, 0);
    second.copy(joined, first.length);
    return { input: joined.buffer as ArrayBuffer, length: first.length + second.length };
  }

  /** A block's buffer back from its reader, for reuse. */
  recycle(input: ArrayBuffer): void {
    if (input.byteLength >= this.capacity) spare.put(input, this);
  }

  /** The document is done (or failed): the gathering buffer goes back for reuse; nothing may be appended after. */
  release(): void {
    // A buffer a reader may still write into is left to the garbage collector, never to another document.
    if (this.lent !== this.buf.buffer) this.recycle(this.buf.buffer as ArrayBuffer);
    this.buf = Buffer.alloc(0);
    this.length = 0;
    this.lineEnd = 0;
  }

  /** The gathered bytes moved into a buffer of at least `size`, starting at `at`: twice as long only when they outgrow it. */
  private moved(size: number, at: number): Buffer {
    const grown = this.fresh(size > this.buf.length ? Math.max(size, this.buf.length * 2) : size);
    this.buf.copy(grown, at, 0, this.length);
    return grown;
  }

  /** A buffer of at least `size` bytes with an ArrayBuffer of its own. */
  private fresh(size: number): Buffer {
    const needed = Math.max(size, this.capacity);
    const kept = spare.take(this, needed);
    return kept ? Buffer.from(kept) : Buffer.allocUnsafeSlow(needed);
  }
}
