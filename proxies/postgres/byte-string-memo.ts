/**
 * Strings read from bytes, remembered by their bytes. The same values come back message after
 * message (a row's user id, a Bind's statement name), and reading bytes into a string (a native
 * call, a new string to hash again at every Map look-up) costs more than finding the string read
 * before. A slot is chosen by a hash of the bytes and holds the last string that hashed there; its
 * bytes are compared in full, so a hit is always the same bytes. Bounded: slots * maxBytes bytes
 * and as many short strings; longer values are read every time.
 */
export class ByteStringMemo {
  private readonly bytes: Uint8Array;
  /** Per slot: how many bytes its string has; -1 while empty. */
  private readonly lengths: Int32Array;
  private readonly strings: string[];

  constructor(
    /** A power of two. */
    private readonly slots: number,
    private readonly encoding: "utf8" | "latin1",
    private readonly maxBytes: number,
  ) {
    this.bytes = new Uint8Array(slots * maxBytes);
    this.lengths = new Int32Array(slots).fill(-1);
    this.strings = new Array<string>(slots).fill("");
  }

  text(source: Buffer, start: number, end: number): string {
    const length = end - start;
    if (length === 0) return "";
    if (length > this.maxBytes) return source.toString(this.encoding, start, end);
    // FNV-1a.
    let hash = 0x811c9dc5;
    for (let i = start; i < end; i++) hash = Math.imul(hash ^ source[i]!, 0x01000193);
    const slot = hash & (this.slots - 1);
    const at = slot * this.maxBytes;
    if (this.lengths[slot] === length) {
      let same = true;
      for (let i = 0; i < length; i++) {
        if (this.bytes[at + i] !== source[start + i]) {
          same = false;
          break;
        }
      }
      if (same) return this.strings[slot]!;
    }
    const read = source.toString(this.encoding, start, end);
    for (let i = 0; i < length; i++) this.bytes[at + i] = source[start + i]!;
    this.lengths[slot] = length;
    this.strings[slot] = read;
    return read;
  }
}
