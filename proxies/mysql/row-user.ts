import { ColumnFlag } from "../../protocols/mysql/column-flags";
import { ColumnType } from "../../protocols/mysql/column-types";

/** String-like types whose binary value is the text itself (as in a text row). */
const textTypes = new Set<number>([
  ColumnType.VarChar,
  ColumnType.VarString,
  ColumnType.String,
  ColumnType.TinyBlob,
  ColumnType.MediumBlob,
  ColumnType.LongBlob,
  ColumnType.Blob,
  ColumnType.NewDecimal,
  ColumnType.Enum,
  ColumnType.Set,
]);

/**
 * The user id a value names, or undefined when it names none (NULL, empty, or a binary type the
 * proxy does not read: such a row has no user and is dropped). A text row's value is its text;
 * a binary row's integers are read as the decimal text a text row would carry.
 */
export function userIdOfValue(bytes: Buffer, start: number, length: number, type: number, flags: number, binary: boolean): string | undefined {
  if (length <= 0) return undefined;
  if (!binary || textTypes.has(type)) return bytes.toString("utf8", start, start + length);
  const unsigned = (flags & ColumnFlag.Unsigned) !== 0;
  switch (type) {
    case ColumnType.Tiny:
      return length === 1 ? String(unsigned ? bytes.readUInt8(start) : bytes.readInt8(start)) : undefined;
    case ColumnType.Short:
    case ColumnType.Year:
      return length === 2 ? String(unsigned ? bytes.readUInt16LE(start) : bytes.readInt16LE(start)) : undefined;
    case ColumnType.Long:
    case ColumnType.Int24:
      return length === 4 ? String(unsigned ? bytes.readUInt32LE(start) : bytes.readInt32LE(start)) : undefined;
    case ColumnType.LongLong:
      return length === 8 ? (unsigned ? bytes.readBigUInt64LE(start) : bytes.readBigInt64LE(start)).toString() : undefined;
    default:
      return undefined;
  }
}
