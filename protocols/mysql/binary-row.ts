import { binaryValueExtent } from "./binary-value-length";
import { encodeBinaryValue } from "./binary-value";
import { isNullAt, nullBitmapLength, NullBitmapOffset, setNullAt } from "./null-bitmap";
import { ProtocolError } from "./protocol-error";
import { ensureCapacity, type RowValues, type ValueActions } from "./row-values";

/** The first byte of ProtocolBinary::ResultsetRow (an OK header, which is why rows and the end are told apart by 0xfe). */
export const binaryRowHeader = 0x00;

const offset = NullBitmapOffset.ResultsetRow;

/** Reused by every row: locating a value allocates nothing. */
const extent = { start: 0, length: 0, next: 0 };

/**
 * Locates the values of a binary resultset row: header 0x00, the NULL bitmap (offset 2), then
 * each non-NULL value framed as its column's type says. `types` are the column definitions'
 * types, in order.
 */
export function decodeBinaryRow(payload: Buffer, types: ArrayLike<number>, into: RowValues): RowValues {
  const count = types.length;
  ensureCapacity(into, count);
  const bitmapLength = nullBitmapLength(count, offset);
  if (payload.length < 1 + bitmapLength || payload[0] !== binaryRowHeader) throw new ProtocolError("binary row too short for its header and NULL bitmap");
  let at = 1 + bitmapLength;
  for (let i = 0; i < count; i++) {
    if (isNullAt(payload, 1, i, offset)) {
      into.starts[i] = at;
      into.lengths[i] = -1;
      continue;
    }
    binaryValueExtent(types[i]!, payload, at, payload.length, extent);
    into.starts[i] = extent.start;
    into.lengths[i] = extent.length;
    at = extent.next;
  }
  if (at !== payload.length) throw new ProtocolError("binary row has bytes after its last value");
  into.count = count;
  return into;
}

/** A binary row from value contents (null for NULL), framed by their types. */
export function encodeBinaryRow(types: ArrayLike<number>, values: ReadonlyArray<Buffer | null>): Buffer {
  if (values.length !== types.length) throw new ProtocolError("a binary row needs one type per value");
  const bitmapLength = nullBitmapLength(values.length, offset);
  const head = Buffer.alloc(1 + bitmapLength);
  head[0] = binaryRowHeader;
  const parts: Buffer[] = [head];
  values.forEach((value, i) => {
    if (value === null) setNullAt(head, 1, i, offset);
    else parts.push(encodeBinaryValue(types[i]!, value));
  });
  return Buffer.concat(parts);
}

/**
 * The binary row `payload` with the values where `keep[i]` is false set to NULL (their bit set,
 * their bytes dropped) and those where it is -1 left out (the bitmap rebuilt for the columns
 * that stay), checking the row as decodeBinaryRow does. Kept values are copied as they are.
 */
export function maskBinaryRow(payload: Buffer, types: ArrayLike<number>, keep: ValueActions): Buffer {
  const count = types.length;
  const bitmapLength = nullBitmapLength(count, offset);
  if (payload.length < 1 + bitmapLength || payload[0] !== binaryRowHeader) throw new ProtocolError("binary row too short for its header and NULL bitmap");
  let outCount = 0;
  for (let i = 0; i < count; i++) if (keep[i] !== -1) outCount++;
  const outBitmapLength = nullBitmapLength(outCount, offset);
  const out = Buffer.alloc(payload.length - bitmapLength + outBitmapLength);
  out[0] = binaryRowHeader;
  let to = 1 + outBitmapLength;
  let from = 1 + bitmapLength;
  let column = 0;
  for (let i = 0; i < count; i++) {
    const action = keep[i];
    if (isNullAt(payload, 1, i, offset)) {
      if (action !== -1) setNullAt(out, 1, column++, offset);
      continue;
    }
    const { next } = binaryValueExtent(types[i]!, payload, from, payload.length, extent);
    if (action === -1) {
      // Left out: neither a bit nor bytes.
    } else if (!action) {
      setNullAt(out, 1, column++, offset);
    } else {
      to += payload.copy(out, to, from, next);
      column++;
    }
    from = next;
  }
  if (from !== payload.length) throw new ProtocolError("binary row has bytes after its last value");
  return out.subarray(0, to);
}
