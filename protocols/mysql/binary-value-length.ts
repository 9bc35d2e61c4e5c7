import { ColumnType } from "./column-types";
import { readLengthEncodedInteger } from "./length-encoded";
import { ProtocolError } from "./protocol-error";

/**
 * How a value of each type lies in a binary row or COM_STMT_EXECUTE (ProtocolBinary::*):
 * integers and floats have fixed widths, dates and times a one-byte length of a few allowed
 * values, everything else (decimals, strings, blobs, BIT, JSON, geometry, vectors) is a
 * length-encoded string.
 */
const fixedWidth = new Map<number, number>([
  [ColumnType.Null, 0],
  [ColumnType.Tiny, 1],
  [ColumnType.Short, 2],
  [ColumnType.Year, 2],
  [ColumnType.Long, 4],
  [ColumnType.Int24, 4],
  [ColumnType.Float, 4],
  [ColumnType.LongLong, 8],
  [ColumnType.Double, 8],
]);

/** Date and time values: a length byte and that many bytes, the length one of these. */
const dateLengths = new Set([0, 4, 7, 11]);
const timeLengths = new Set([0, 8, 12]);
const lengthPrefixed = new Map<number, Set<number>>([
  [ColumnType.Date, dateLengths],
  [ColumnType.NewDate, dateLengths],
  [ColumnType.DateTime, dateLengths],
  [ColumnType.DateTime2, dateLengths],
  [ColumnType.Timestamp, dateLengths],
  [ColumnType.Timestamp2, dateLengths],
  [ColumnType.Time, timeLengths],
  [ColumnType.Time2, timeLengths],
]);

const lengthEncoded = new Set<number>([
  ColumnType.Decimal,
  ColumnType.NewDecimal,
  ColumnType.VarChar,
  ColumnType.Bit,
  ColumnType.Json,
  ColumnType.Enum,
  ColumnType.Set,
  ColumnType.TinyBlob,
  ColumnType.MediumBlob,
  ColumnType.LongBlob,
  ColumnType.Blob,
  ColumnType.VarString,
  ColumnType.String,
  ColumnType.Geometry,
  ColumnType.Vector,
]);

/** Where a value's content lies: from `start` for `length` bytes; the value ends at `next`. */
export interface BinaryValueExtent {
  start: number;
  length: number;
  next: number;
}

/**
 * The value of `type` at `offset`, not past `end`, written into `into` (rows reuse one object: no
 * allocation per value). A type with no binary form is a ProtocolError.
 */
export function binaryValueExtent(
  type: number,
  bytes: Buffer,
  offset: number,
  end: number,
  into: BinaryValueExtent = { start: 0, length: 0, next: 0 },
): BinaryValueExtent {
  const width = fixedWidth.get(type);
  if (width !== undefined) {
    if (offset + width > end) throw new ProtocolError(`binary value of type 0x${type.toString(16)} overruns the packet`);
    return set(into, offset, width);
  }
  const allowed = lengthPrefixed.get(type);
  if (allowed) {
    if (offset >= end) throw new ProtocolError("binary date/time value overruns the packet");
    const length = bytes[offset]!;
    if (!allowed.has(length)) throw new ProtocolError(`binary value of type 0x${type.toString(16)} cannot be ${length} bytes`);
    if (offset + 1 + length > end) throw new ProtocolError("binary date/time value overruns the packet");
    return set(into, offset + 1, length);
  }
  if (lengthEncoded.has(type)) {
    const { value, next } = readLengthEncodedInteger(bytes, offset, end);
    if (typeof value === "bigint" || next + value > end) throw new ProtocolError("binary string value overruns the packet");
    return set(into, next, value);
  }
  throw new ProtocolError(`type 0x${type.toString(16)} has no binary protocol encoding`);
}

function set(into: BinaryValueExtent, start: number, length: number): BinaryValueExtent {
  into.start = start;
  into.length = length;
  into.next = start + length;
  return into;
}

export type BinaryValueForm = "fixed" | "length-byte" | "length-encoded";

/** How `type`'s value is framed, for encoders; undefined for a type with no binary form. */
export function binaryValueForm(type: number): { form: BinaryValueForm; width?: number; allowed?: ReadonlySet<number> } | undefined {
  const width = fixedWidth.get(type);
  if (width !== undefined) return { form: "fixed", width };
  const allowed = lengthPrefixed.get(type);
  if (allowed) return { form: "length-byte", allowed };
  if (lengthEncoded.has(type)) return { form: "length-encoded" };
  return undefined;
}
