import { ByteStringMemo } from "./byte-string-memo";
import type { TextDecoding } from "./types";

/**
 * User ids read from row values (UTF-8), remembered by their bytes (byte-string-memo.ts). Shared
 * by an export's connections (one event loop): 4,096 slots of ids up to 64 bytes, more than the
 * distinct users of most results.
 */
export class UserIdMemo extends ByteStringMemo implements TextDecoding {
  constructor() {
    super(4096, "utf8", 64);
  }
}
