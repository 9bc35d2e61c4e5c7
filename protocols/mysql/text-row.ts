import { LengthEncodedPrefix, lengthEncodedIntegerSize, readLengthEncodedInteger, writeLengthEncodedInteger } from "./length-encoded";
import { ProtocolError } from "./protocol-error";
import { ensureCapacity, type RowValues, type ValueActions } from "./row-values";

/**
 * ProtocolText::ResultsetRow: each value a length-encoded string, or 0xfb for NULL. Values are
 * located, not decoded: the proxy reads the few it decides on and copies the rest.
 */
export function decodeTextRow(payload: Buffer, columnCount: number, into: RowValues): RowValues {
  ensureCapacity(into, columnCount);
  let offset = 0;
  for (let i = 0; i < columnCount; i++) {
    if (offset >= payload.length) throw new ProtocolError("text row too short for its values");
    if (payload[offset] === LengthEncodedPrefix.Null) {
      into.starts[i] = offset + 1;
      into.lengths[i] = -1;
      offset++;
      continue;
    }
    const { value: length, next } = readLengthEncodedInteger(payload, offset, payload.length);
    if (typeof length === "bigint" || next + length > payload.length) throw new ProtocolError("text row value overruns the packet");
    into.starts[i] = next;
    into.lengths[i] = length;
    offset = next + length;
  }
  if (offset !== payload.length) throw new ProtocolError("text row has bytes after its last value");
  into.count = columnCount;
  return into;
}

/** A text row from values (null for NULL). */
export function encodeTextRow(values: ReadonlyArray<Buffer | null>): Buffer {
  let size = 0;
  for (const value of values) size += value === null ? 1 : lengthEncodedIntegerSize(value.length) + value.length;
  const out = Buffer.allocUnsafe(size);
  let at = 0;
  for (const value of values) {
    if (value === null) out[at++] = LengthEncodedPrefix.Null;
    else {
      at = writeLengthEncodedInteger(out, at, value.length);
      at += value.copy(out, at);
    }
  }
  return out;
}

/**
 * The text row `payload` with the values where `keep[i]` is false set to NULL and those where
 * it is -1 left out, in one pass that checks the row as decodeTextRow does. Runs of kept values
 * are copied at once. Never longer than the source.
 */
export function maskTextRow(payload: Buffer, columnCount: number, keep: ValueActions): Buffer {
  const out = Buffer.allocUnsafe(payload.length);
  let at = 0;
  let from = 0;
  /** Where the run of kept values not copied yet starts. */
  let kept = 0;
  for (let i = 0; i < columnCount; i++) {
    if (from >= payload.length) throw new ProtocolError("text row too short for its values");
    let next: number;
    if (payload[from] === LengthEncodedPrefix.Null) next = from + 1;
    else {
      const read = readLengthEncodedInteger(payload, from, payload.length);
      if (typeof read.value === "bigint" || read.next + read.value > payload.length) throw new ProtocolError("text row value overruns the packet");
      next = read.next + read.value;
    }
    const action = keep[i];
    if (action === -1 || !action) {
      if (from > kept) at += payload.copy(out, at, kept, from);
      if (action !== -1) out[at++] = LengthEncodedPrefix.Null;
      kept = next;
    }
    from = next;
  }
  if (from !== payload.length) throw new ProtocolError("text row has bytes after its last value");
  if (from > kept) at += payload.copy(out, at, kept, from);
  return out.subarray(0, at);
}
