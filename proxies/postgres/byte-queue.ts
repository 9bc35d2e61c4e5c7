/**
 * Bytes received but not yet handled. Chunks are joined only once the first message in them is
 * whole, so a large message arriving in many chunks is copied once, not once per chunk.
 */
export class ByteQueue {
  private chunks: Buffer[] = [];
  private size = 0;

  constructor(
    /** Bytes before a message's int32 length: 1 for typed messages, 0 for startup packets. */
    private readonly headerBytes: number,
    /** A message announced longer than this is handed over at once, for the caller to reject. */
    private maxLength: number,
  ) {}

  /** Changes the longest message waited for (larger once a session is authenticated). */
  limit(maxLength: number): void {
    this.maxLength = maxLength;
  }

  get length(): number {
    return this.size;
  }

  push(chunk: Buffer): void {
    if (chunk.length === 0) return;
    this.chunks.push(chunk);
    this.size += chunk.length;
  }

  /** The length of the first message, once its length field is here (not checked: the caller checks). */
  private firstMessageLength(): number | undefined {
    const need = this.headerBytes + 4;
    if (this.size < need) return undefined;
    const head = this.chunks[0]!.length >= need ? this.chunks[0]! : Buffer.concat(this.chunks, need);
    return this.headerBytes + head.readInt32BE(this.headerBytes);
  }

  /**
   * The next bytes to handle, once at least one whole message is there (undefined while the
   * first is still arriving): the first chunk as it is when it holds a whole message, otherwise
   * exactly the first message, joined from the chunks it spans. Only bytes of a message that
   * straddles chunks are copied. A first message whose length field is invalid comes with
   * everything queued, for the caller to reject.
   */
  take(): Buffer | undefined {
    const first = this.firstMessageLength();
    if (first === undefined) return undefined;
    const valid = first >= this.headerBytes + 4 && first <= this.maxLength + this.headerBytes;
    if (valid && this.size < first) return undefined;
    if (!valid) {
      const all = Buffer.concat(this.chunks, this.size);
      this.chunks = [];
      this.size = 0;
      return all;
    }
    const head = this.chunks[0]!;
    if (head.length >= first) {
      this.chunks.shift();
      this.size -= head.length;
      return head;
    }
    const joined = Buffer.allocUnsafe(first);
    let filled = 0;
    while (filled < first) {
      const chunk = this.chunks[0]!;
      const need = first - filled;
      if (chunk.length <= need) {
        chunk.copy(joined, filled);
        filled += chunk.length;
        this.chunks.shift();
      } else {
        chunk.copy(joined, filled, 0, need);
        this.chunks[0] = chunk.subarray(need);
        filled += need;
      }
    }
    this.size -= first;
    return joined;
  }

  /** Copies the queued bytes that still lie in `readBuffer`: a socket's read buffer, about to be read into again. */
  copyOut(readBuffer: Buffer): void {
    for (let i = 0; i < this.chunks.length; i++) if (this.chunks[i]!.buffer === readBuffer.buffer) this.chunks[i] = Buffer.from(this.chunks[i]!);
  }

  /** Puts back the unhandled tail of what `take` returned. */
  unshift(rest: Buffer): void {
    if (rest.length === 0) return;
    this.chunks.unshift(rest);
    this.size += rest.length;
  }
}
