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

/** Bytes of the DataRow `writeMaskedDataRow` writes. */
export function maskedDataRowSize(row: RowValues, keep: ArrayLike<boolean>): number {
  let size = 1 + 4 + 2;
  for (let i = 0; i < row.count; i++) size += 4 + (keep[i] && row.lengths[i]! > 0 ? row.lengths[i]! : 0);
  return size;
}

/**
 * Writes at `offset` of `target` the DataRow with the values of `row` where `keep[i]` is true
 * and NULL elsewhere; returns the offset after it. Never longer than the row it came from.
 */
export function writeMaskedDataRow(target: Buffer, offset: number, bytes: Buffer, row: RowValues, keep: ArrayLike<boolean>): number {
  const size = maskedDataRowSize(row, keep);
  target[offset] = BackendCode.DataRow;
  target.writeInt32BE(size - 1, offset + 1);
  target.writeInt16BE(row.count, offset + 5);
  let at = offset + 7;
  for (let i = 0; i < row.count; i++) {
    const length = keep[i] ? row.lengths[i]! : -1;
    target.writeInt32BE(length, at);
    at += 4;
    if (length > 0) {
      bytes.copy(target, at, row.starts[i]!, row.starts[i]! + length);
      at += length;
    }
  }
  return at;
}

/** The masked DataRow as a message of its own. */
export function encodeMaskedDataRow(bytes: Buffer, row: RowValues, keep: ArrayLike<boolean>): Buffer {
  const out = Buffer.allocUnsafe(maskedDataRowSize(row, keep));
  writeMaskedDataRow(out, 0, bytes, row, keep);
  return out;
}

/** A DataRow from values (null for NULL). */
export function encodeDataRow(values: ReadonlyArray<Buffer | null>): Buffer {
  const row: RowValues = { count: values.length, starts: new Int32Array(values.length), lengths: new Int32Array(values.length) };
  const joined = Buffer.concat(values.map((v) => v ?? Buffer.alloc(0)));
  let offset = 0;
  values.forEach((value, i) => {
    row.starts[i] = offset;
    row.lengths[i] = value === null ? -1 : value.length;
    offset += value?.length ?? 0;
  });
  return encodeMaskedDataRow(joined, row, values.map(() => true));
}

/**
 * Where value `column` of the DataRow in bytes[bodyStart, end) lies, without decoding the
 * others: its offset and length (-1 for NULL); undefined when the row has no such column or
 * its lengths overrun the message.
 */
export function locateValue(bytes: Buffer, bodyStart: number, end: number, column: number): { start: number; length: number } | undefined {
  if (end - bodyStart < 2 || column >= bytes.readInt16BE(bodyStart)) return undefined;
  let offset = bodyStart + 2;
  for (let i = 0; ; i++) {
    if (offset + 4 > end) return undefined;
    const length = bytes.readInt32BE(offset);
    offset += 4;
    if (length < -1 || (length > 0 && offset + length > end)) return undefined;
    if (i === column) return { start: offset, length };
    if (length > 0) offset += length;
  }
}

/**
 * Writes at `offset` of `target` the DataRow in bytes[bodyStart, end) with the values where
 * `keep[i]` is false replaced by NULL, in one pass over the source, checking it as
 * `decodeDataRow` does; returns the offset after it. Never longer than the source row, so
 * `target` needs room for that.
 */
export function writeMaskedRowFrom(target: Buffer, offset: number, bytes: Buffer, bodyStart: number, end: number, keep: ArrayLike<boolean>): number {
  if (end - bodyStart < 2) throw new ProtocolError("DataRow too short for its column count");
  const count = bytes.readInt16BE(bodyStart);
  if (count < 0) throw new ProtocolError("DataRow has a negative column count");
  target[offset] = BackendCode.DataRow;
  target.writeInt16BE(count, offset + 5);
  let from = bodyStart + 2;
  let at = offset + 7;
  for (let i = 0; i < count; i++) {
    if (from + 4 > end) throw new ProtocolError("DataRow too short for its values");
    const length = bytes.readInt32BE(from);
    from += 4;
    if (length < -1 || (length > 0 && from + length > end)) throw new ProtocolError("DataRow value overruns the message");
    if (keep[i] && length >= 0) {
      target.writeInt32BE(length, at);
      at += 4;
      if (length > 0) at += bytes.copy(target, at, from, from + length);
    } else {
      target.writeInt32BE(-1, at);
      at += 4;
    }
    if (length > 0) from += length;
  }
  if (from !== end) throw new ProtocolError("DataRow has bytes after its last value");
  target.writeInt32BE(at - offset - 1, offset + 1);
  return at;
}
