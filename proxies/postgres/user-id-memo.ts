import type { TextDecoding } from "./types";

/** Slots of the memo (a power of two): more than the distinct users of most results. */
const slots = 4096;
/** Longer ids are decoded every time. */
const maxIdBytes = 64;

/**
 * User ids read from row values, remembered by their bytes. The same users come back row after
 * row, and reading a value into a string (a native call, a new string to hash again at every
 * look-up of its verdict) costs more than finding the string read before. A slot is chosen by a
 * hash of the bytes and holds the last id that hashed there; its bytes are compared in full, so
 * a hit is always the same bytes. Shared by an export's connections (one event loop), bounded:
 * slots * maxIdBytes bytes and as many short strings.
 */
export class UserIdMemo implements TextDecoding {
  private readonly bytes = new Uint8Array(slots * maxIdBytes);
  /** Per slot: how many bytes its id has; -1 while empty. */
  private readonly lengths = new Int32Array(slots).fill(-1);
  private readonly ids: string[] = new Array<string>(slots).fill("");

  text(source: Buffer, start: number, end: number): string {
    const length = end - start;
    if (length > maxIdBytes) return source.toString("utf8", start, end);
    // FNV-1a.
    let hash = 0x811c9dc5;
    for (let i = start; i < end; i++) hash = Math.imul(hash ^ source[i]!, 0x01000193);
    const slot = hash & (slots - 1);
    const at = slot * maxIdBytes;
    if (this.lengths[slot] === length) {
      let same = true;
      for (let i = 0; i < length; i++) {
        if (this.bytes[at + i] !== source[start + i]) {
          same = false;
          break;
        }
      }
      if (same) return this.ids[slot]!;
    }
    const id = source.toString("utf8", start, end);
    for (let i = 0; i < length; i++) this.bytes[at + i] = source[start + i]!;
    this.lengths[slot] = length;
    this.ids[slot] = id;
    return id;
  }
}
