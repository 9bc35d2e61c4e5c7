import { ProtocolError } from "./protocol-error";

/**
 * Length-encoded integers (MySQL's int<lenenc>): one byte below 0xfb, else a prefix byte and
 * 2 (0xfc), 3 (0xfd) or 8 (0xfe) little-endian bytes. 0xfb is NULL in a text row and 0xff
 * starts an ERR packet; neither is an integer.
 */
export const LengthEncodedPrefix = {
  Null: 0xfb,
  TwoBytes: 0xfc,
  ThreeBytes: 0xfd,
  EightBytes: 0xfe,
} as const;

export interface LengthEncodedRead {
  /** A number when it fits a double exactly (always for lengths a Buffer can hold), else a bigint. */
  value: number | bigint;
  /** The offset after the integer. */
  next: number;
}

/** Reads the length-encoded integer at `offset`, not past `end`. */
export function readLengthEncodedInteger(bytes: Buffer, offset: number, end: number): LengthEncodedRead {
  if (offset >= end) throw new ProtocolError("packet too short for its length-encoded integer");
  const first = bytes[offset]!;
  if (first < 0xfb) return { value: first, next: offset + 1 };
  const width = first === 0xfc ? 2 : first === 0xfd ? 3 : first === 0xfe ? 8 : 0;
  if (width === 0) throw new ProtocolError(`0x${first.toString(16)} does not start a length-encoded integer`);
  if (offset + 1 + width > end) throw new ProtocolError("packet too short for its length-encoded integer");
  if (width < 8) return { value: bytes.readUIntLE(offset + 1, width), next: offset + 1 + width };
  const value = bytes.readBigUInt64LE(offset + 1);
  return { value: value <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(value) : value, next: offset + 9 };
}

/** Bytes the length-encoded form of `value` takes. */
export function lengthEncodedIntegerSize(value: number | bigint): number {
  if (value < 0 || (typeof value === "number" && !Number.isInteger(value))) throw new ProtocolError(`${value} is not a length-encodable integer`);
  if (value < 0xfb) return 1;
  if (value <= 0xffff) return 3;
  if (value <= 0xffffff) return 4;
  if (BigInt(value) > 0xffffffffffffffffn) throw new ProtocolError(`${value} does not fit 8 bytes`);
  return 9;
}

/** Writes `value` length-encoded at `offset`; returns the offset after it. */
export function writeLengthEncodedInteger(target: Buffer, offset: number, value: number | bigint): number {
  const size = lengthEncodedIntegerSize(value);
  if (size === 1) {
    target[offset] = Number(value);
  } else if (size === 3) {
    target[offset] = LengthEncodedPrefix.TwoBytes;
    target.writeUInt16LE(Number(value), offset + 1);
  } else if (size === 4) {
    target[offset] = LengthEncodedPrefix.ThreeBytes;
    target.writeUIntLE(Number(value), offset + 1, 3);
  } else {
    target[offset] = LengthEncodedPrefix.EightBytes;
    target.writeBigUInt64LE(BigInt(value), offset + 1);
  }
  return offset + size;
}

/** A length-encoded string (the length, then the bytes) as one buffer. */
export function encodeLengthEncodedBytes(value: Buffer): Buffer {
  const out = Buffer.allocUnsafe(lengthEncodedIntegerSize(value.length) + value.length);
  value.copy(out, writeLengthEncodedInteger(out, 0, value.length));
  return out;
}
