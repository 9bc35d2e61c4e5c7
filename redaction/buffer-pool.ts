/**
 * ArrayBuffers kept for reuse by every document of the process (a document's buffers would
 * otherwise be garbage when it ends, new external memory to V8 for every block, and what that
 * adds up to is what starts the event loop's collections), each with the document whose bytes
 * it holds: a buffer is zeroed before another document gets it, so no byte of one document
 * reaches another, not even past a block's or an output's length.
 */
export class DocumentBufferPool {
  private readonly spare: { buffer: ArrayBuffer; holder: object }[] = [];

  constructor(private readonly max: number) {}

  /** Keeps `buffer`, which holds `holder`'s bytes, while fewer than `max` are kept; else it is left to the collector. */
  put(buffer: ArrayBuffer, holder: object): void {
    if (this.spare.length < this.max) this.spare.push({ buffer, holder });
  }

  /** The most recently kept buffer of `bytes` to `most` bytes, for `holder`'s use (zeroed when another's bytes are in it); undefined when none is kept. */
  take(holder: object, bytes = 0, most = Number.POSITIVE_INFINITY): ArrayBuffer | undefined {
    for (let index = this.spare.length - 1; index >= 0; index--) {
      const kept = this.spare[index]!;
      if (kept.buffer.byteLength < bytes || kept.buffer.byteLength > most) continue;
      this.spare.splice(index, 1);
      if (kept.holder !== holder) new Uint8Array(kept.buffer).fill(0);
      return kept.buffer;
    }
    return undefined;
  }
}
