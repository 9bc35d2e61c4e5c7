import { BackendCode } from "./codes";
import { BodyReader, MessageWriter } from "./wire";

/** One result column as the server describes it. */
export interface ColumnDescription {
  name: string;
  /** OID of the table the column comes from; 0 when it is not a plain table column. */
  tableOid: number;
  /** The column's attribute number in that table; 0 when not a table column. */
  attributeNumber: number;
  typeOid: number;
  typeSize: number;
  typeModifier: number;
  /** 0 text, 1 binary (always 0 in the answer to Describe of a statement). */
  format: number;
}

export function decodeRowDescription(body: Buffer): ColumnDescription[] {
  const reader = new BodyReader(body);
  const count = reader.int16();
  const columns: ColumnDescription[] = [];
  for (let i = 0; i < count; i++) {
    columns.push({
      name: reader.cstring(),
      // OIDs are unsigned 32-bit values.
      tableOid: reader.int32() >>> 0,
      attributeNumber: reader.int16(),
      typeOid: reader.int32() >>> 0,
      typeSize: reader.int16(),
      typeModifier: reader.int32(),
      format: reader.int16(),
    });
  }
  return columns;
}

export function encodeRowDescription(columns: readonly ColumnDescription[]): Buffer {
  const writer = new MessageWriter().int16(columns.length);
  for (const c of columns)
    writer
      .cstring(c.name)
      .int32(c.tableOid | 0)
      .int16(c.attributeNumber)
      .int32(c.typeOid | 0)
      .int16(c.typeSize)
      .int32(c.typeModifier)
      .int16(c.format);
  return writer.finish(BackendCode.RowDescription);
}
