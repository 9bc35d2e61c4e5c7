import type { TextDecoding } from "./types";

/** Type OIDs whose binary form the proxy reads to find a row's user. */
const enum TypeOid {
  Int2 = 21,
  Int4 = 23,
  Int8 = 20,
  Text = 25,
  Varchar = 1043,
  Bpchar = 1042,
  Name = 19,
  Uuid = 2950,
}

/** Buffer's own UTF-8 decoding, each time. */
const utf8: TextDecoding = { text: (bytes, start, end) => bytes.toString("utf8", start, end) };

/**
 * The user id a value names, or undefined when it names none (NULL, empty, or a binary type the
 * proxy does not read: such a row has no user and is dropped). Text is read by `decoding`.
 */
export function userIdFromValue(
  bytes: Buffer,
  start: number,
  length: number,
  typeOid: number,
  format: number,
  decoding: TextDecoding = utf8,
): string | undefined {
  if (length <= 0) return undefined;
  if (format === 0) return decoding.text(bytes, start, start + length);
  switch (typeOid) {
    case TypeOid.Int2:
      return length === 2 ? String(bytes.readInt16BE(start)) : undefined;
    case TypeOid.Int4:
      return length === 4 ? String(bytes.readInt32BE(start)) : undefined;
    case TypeOid.Int8:
      return length === 8 ? bytes.readBigInt64BE(start).toString() : undefined;
    case TypeOid.Text:
    case TypeOid.Varchar:
    case TypeOid.Bpchar:
    case TypeOid.Name:
      return decoding.text(bytes, start, start + length);
    case TypeOid.Uuid: {
      if (length !== 16) return undefined;
      const hex = bytes.toString("hex", start, start + 16);
      return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
    }
    default:
      return undefined;
  }
}
