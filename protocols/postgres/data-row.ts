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

/**
 * A DataRow with the values of `row` where `keep[i]` is true and NULL elsewhere, encoded in one
 * allocation (the kept values are copied once).
 */
export function encodeMaskedDataRow(bytes: Buffer, row: RowValues, keep: ArrayLike<boolean>): Buffer {
  let size = 1 + 4 + 2;
  for (let i = 0; i < row.count; i++) size += 4 + (keep[i] && row.lengths[i]! > 0 ? row.lengths[i]! : 0);
  const out = Buffer.allocUnsafe(size);
  out[0] = BackendCode.DataRow;
  out.writeInt32BE(size - 1, 1);
  out.writeInt16BE(row.count, 5);
  let offset = 7;
  for (let i = 0; i < row.count; i++) {
    const length = keep[i] ? row.lengths[i]! : -1;
    out.writeInt32BE(length, offset);
    offset += 4;
    if (length > 0) {
      bytes.copy(out, offset, row.starts[i]!, row.starts[i]! + length);
      offset += length;
    }
  }
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
