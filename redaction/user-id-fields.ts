import { canNameUser } from "../decision/user-id-shape";
import { decodeField, type ScannedRows } from "./csv-rows";
import { documentLimits } from "./types";

/** Raw fields longer than this are decoded each time (an id is at most 200 characters; longer fields name no one). */
const maxCachedBytes = 256;

/** A raw user-id field seen before: its bytes, its decoded text, and the id it names (undefined: none). */
interface KnownField {
  raw: Buffer;
  text: string;
  id: string | undefined;
}

/**
 * The user id of each CSV row, read from its user-id columns. A document repeats few users over
 * many rows, so each distinct raw field is decoded and checked once and looked up by its bytes
 * afterwards: a row costs a hash of its id's bytes, not a new string, a pattern test and a
 * string hash (which made up a quarter of a worker's time, and most of its garbage).
 */
export class UserIdFields {
  private readonly known = new Map<number, KnownField[]>();
  private size = 0;

  constructor(private readonly userColumns: readonly number[]) {}

  /** The id of each row from `first`: the first user-id column that is not empty, decoded; undefined when none is or it cannot name a user. */
  idsOf(buf: Buffer, rows: ScannedRows, first: number): Array<string | undefined> {
    const ids = new Array<string | undefined>(rows.count - first);
    const { bounds, columns } = rows;
    for (let r = first; r < rows.count; r++) {
      let id: string | undefined;
      for (const column of this.userColumns) {
        const field = (r * columns + column) * 2;
        const start = bounds[field];
        const end = bounds[field + 1];
        if (end <= start) continue;
        const known = this.field(buf, start, end);
        if (known.text !== "") {
          id = known.id;
          break;
        }
      }
      ids[r - first] = id;
    }
    return ids;
  }

  private field(buf: Buffer, start: number, end: number): KnownField {
    if (end - start > maxCachedBytes) return fieldOf(buf, start, end);
    let hash = 0x811c9dc5;
    for (let i = start; i < end; i++) hash = Math.imul(hash ^ buf[i], 0x01000193);
    const candidates = this.known.get(hash);
    if (candidates) {
      for (const candidate of candidates) if (sameBytes(candidate.raw, buf, start, end)) return candidate;
    }
    // Bounded like the verdicts remembered per document: past the limit, start over.
    if (this.size >= documentLimits.maxRememberedUsers) {
      this.known.clear();
      this.size = 0;
    }
    const known = fieldOf(buf, start, end);
    const list = this.known.get(hash);
    if (list) list.push(known);
    else this.known.set(hash, [known]);
    this.size++;
    return known;
  }
}

function fieldOf(buf: Buffer, start: number, end: number): KnownField {
  const text = decodeField(buf, start, end);
  return { raw: Buffer.from(buf.subarray(start, end)), text, id: text !== "" && canNameUser(text) ? text : undefined };
}

function sameBytes(raw: Buffer, buf: Buffer, start: number, end: number): boolean {
  if (raw.length !== end - start) return false;
  for (let i = 0; i < raw.length; i++) if (raw[i] !== buf[start + i]) return false;
  return true;
}
