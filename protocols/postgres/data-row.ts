import { BackendCode } from "./codes";
import { ProtocolError } from "./wire";

/**
 * Where each value of a DataRow lies in `bytes` (no copy): `starts[i]` is the offset of the
 * value, `lengths[i]` its length or -1 for NULL. Reused across rows by passing the same arrays.
 */
export interface RowValues {
  count: number;
  starts: Int32Array;
  lengths: Int32Array;
}

export function newRowValues(capacity = 64): RowValues {
  return { count: 0, starts: new Int32Array(capacity), lengths: new Int32Array(capacity) };
}

/** Locates the values of the DataRow whose body is bytes[bodyStart, end). */
export function decodeDataRow(bytes: Buffer, bodyStart: number, end: number, into: RowValues): RowValues {
  if (end - bodyStart < 2) throw new ProtocolError("DataRow too short for its column count");
  const count = bytes.readInt16BE(bodyStart);
  if (count < 0) throw new ProtocolError("DataRow has a negative column count");
  if (into.starts.length < count) {
    into.starts = new Int32Array(count);
    into.lengths = new Int32Array(count);
  }
  let offset = bodyStart + 2;
  for (let i = 0; i < count; i++) {
    if (offset + 4 > end) throw new ProtocolError("DataRow too short for its values");
    const length = bytes.readInt32BE(offset);
    offset += 4;
    if (length < -1 || (length > 0 && offset + length > end)) throw new ProtocolError("DataRow value overruns the message");
    into.starts[i] = offset;
    into.lengths[i] = length;
    if (length > 0) offset += length;
  }
  if (offset !== end) throw new ProtocolError("DataRow has bytes after its last value");
  into.count = count;
  return into;
}

/** A DataRow from values (null for NULL). */
export function encodeDataRow(values: ReadonlyArray<Buffer | null>): Buffer {
  const out = Buffer.allocUnsafe(1 + 4 + 2 + values.reduce((size, value) => size + 4 + (value?.length ?? 0), 0));
  out[0] = BackendCode.DataRow;
  out.writeInt32BE(out.length - 1, 1);
  out.writeInt16BE(values.length, 5);
  let at = 7;
  for (const value of values) {
    out.writeInt32BE(value === null ? -1 : value.length, at);
    at += 4;
    if (value) at += value.copy(out, at);
  }
  return out;
}

/** The DataRow `message` (a whole message) with the values `keep` does not keep set to NULL, as a message of its own. */
export function encodeMaskedDataRow(message: Buffer, keep: ValueActions): Buffer {
  const out = Buffer.allocUnsafe(message.length);
  return out.subarray(0, writeMaskedRowFrom(out, 0, message, 5, message.length, keep));
}

/**
 * Where value `column` of the DataRow in bytes[bodyStart, end) lies, without decoding the
 * others: its offset and length (-1 for NULL); undefined when the row has no such column or
 * its lengths overrun the message.
 */
export function locateValue(bytes: Buffer, bodyStart: number, end: number, column: number): { start: number; length: number } | undefined {
  const at = valueLengthAt(bytes, bodyStart, end, column);
  return at < 0 ? undefined : { start: at + 4, length: bytes.readInt32BE(at) };
}

/**
 * `locateValue` without an object per call (a row's user is read per row): the offset of value
 * `column`'s int32 length (its bytes follow it), or -1 when the row has no such column or its
 * lengths overrun the message.
 */
export function valueLengthAt(bytes: Buffer, bodyStart: number, end: number, column: number): number {
  if (end - bodyStart < 2 || column >= bytes.readInt16BE(bodyStart)) return -1;
  let offset = bodyStart + 2;
  for (let i = 0; ; i++) {
    if (offset + 4 > end) return -1;
    const length = bytes.readInt32BE(offset);
    if (length < -1 || (length > 0 && offset + 4 + length > end)) return -1;
    if (i === column) return offset;
    offset += 4;
    if (length > 0) offset += length;
  }
}

/**
 * What becomes of each value of a row: kept (true or 1), set to NULL (false or 0), or left
 * out of the row altogether (-1: a column the client never asked for).
 */
export type ValueActions = ArrayLike<boolean | number>;

/**
 * Writes at `offset` of `target` the DataRow in bytes[bodyStart, end) with the values where
 * `keep[i]` is false replaced by NULL and those where it is -1 left out, in one pass over the
 * source, checking it as `decodeDataRow` does; returns the offset after it. A kept value is
 * the source's bytes (its length and data), so each run of kept values is copied at once.
 * Never longer than the source row, so `target` needs room for that.
 */
export function writeMaskedRowFrom(target: Buffer, offset: number, bytes: Buffer, bodyStart: number, end: number, keep: ValueActions): number {
  if (end - bodyStart < 2) throw new ProtocolError("DataRow too short for its column count");
  const count = bytes.readInt16BE(bodyStart);
  if (count < 0) throw new ProtocolError("DataRow has a negative column count");
  target[offset] = BackendCode.DataRow;
  let written = 0;
  let from = bodyStart + 2;
  let at = offset + 7;
  /** Where the run of kept values not copied yet starts in the source. */
  let kept = from;
  for (let i = 0; i < count; i++) {
    if (from + 4 > end) throw new ProtocolError("DataRow too short for its values");
    const length = bytes.readInt32BE(from);
    const next = from + 4 + Math.max(length, 0);
    if (length < -1 || next > end) throw new ProtocolError("DataRow value overruns the message");
    const action = keep[i];
    if (action === -1) {
      if (from > kept) at += bytes.copy(target, at, kept, from);
      kept = next;
    } else {
      written++;
      if (!action) {
        if (from > kept) at += bytes.copy(target, at, kept, from);
        // NULL: a length of -1.
        target[at] = target[at + 1] = target[at + 2] = target[at + 3] = 0xff;
        at += 4;
        kept = next;
      }
    }
    from = next;
  }
  if (from !== end) throw new ProtocolError("DataRow has bytes after its last value");
  if (from > kept) at += bytes.copy(target, at, kept, from);
  target.writeInt16BE(written, offset + 5);
  target.writeInt32BE(at - offset - 1, offset + 1);
  return at;
}
