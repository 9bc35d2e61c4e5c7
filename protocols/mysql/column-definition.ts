import { ProtocolError } from "./protocol-error";
import { PayloadReader, PayloadWriter } from "./wire";

/** Protocol::ColumnDefinition41: one column of a resultset, or one parameter of a prepared statement. */
export interface ColumnDefinition {
  /** Always "def". */
  catalog: string;
  schema: string;
  /** The table's alias in the query; `orgTable` is the table itself (empty for an expression). */
  table: string;
  orgTable: string;
  /** The column's alias in the query; `orgName` is the column itself (empty for an expression). */
  name: string;
  orgName: string;
  /** Collation id of the values (63 is binary). */
  characterSet: number;
  /** Maximum length of a value, in bytes. */
  columnLength: number;
  /** A ColumnType. */
  type: number;
  /** ColumnFlag bits. */
  flags: number;
  decimals: number;
  /** MariaDB's extended metadata (MARIADB_CLIENT_EXTENDED_METADATA): data type name (e.g. "uuid") and format (e.g. "json"). */
  extendedTypeName?: string;
  extendedFormat?: string;
}

export interface ColumnDefinitionOptions {
  /** Whether MARIADB_CLIENT_EXTENDED_METADATA was agreed: a block of (kind, string) pairs before the fixed fields. */
  mariaDbExtendedMetadata?: boolean;
}

/** The length of the fixed-length fields, sent as a length-encoded integer before them. */
const fixedFieldsLength = 0x0c;

const ExtendedMetadataKind = { TypeName: 0, Format: 1 } as const;

export function decodeColumnDefinition(payload: Buffer, options: ColumnDefinitionOptions = {}): ColumnDefinition {
  const reader = new PayloadReader(payload);
  const catalog = reader.lengthEncodedString();
  const schema = reader.lengthEncodedString();
  const table = reader.lengthEncodedString();
  const orgTable = reader.lengthEncodedString();
  const name = reader.lengthEncodedString();
  const orgName = reader.lengthEncodedString();
  let extendedTypeName: string | undefined;
  let extendedFormat: string | undefined;
  if (options.mariaDbExtendedMetadata) {
    const block = new PayloadReader(reader.lengthEncodedBytes());
    while (!block.atEnd) {
      const kind = block.int1();
      const value = block.lengthEncodedString();
      if (kind === ExtendedMetadataKind.TypeName) extendedTypeName = value;
      else if (kind === ExtendedMetadataKind.Format) extendedFormat = value;
    }
  }
  const fixed = reader.lengthEncodedNumber("fixed-fields length");
  if (fixed !== fixedFieldsLength) throw new ProtocolError(`column definition's fixed fields are ${fixed} bytes, not 12`);
  const column: ColumnDefinition = {
    catalog,
    schema,
    table,
    orgTable,
    name,
    orgName,
    characterSet: reader.int2(),
    columnLength: reader.int4(),
    type: reader.int1(),
    flags: reader.int2(),
    decimals: reader.int1(),
  };
  reader.skip(2);
  // COM_FIELD_LIST's answer adds the column's default value; nothing here needs it.
  if (!reader.atEnd) reader.lengthEncodedBytes();
  reader.expectEnd("column definition");
  if (extendedTypeName !== undefined) column.extendedTypeName = extendedTypeName;
  if (extendedFormat !== undefined) column.extendedFormat = extendedFormat;
  return column;
}

export function encodeColumnDefinition(column: ColumnDefinition, options: ColumnDefinitionOptions = {}): Buffer {
  const writer = new PayloadWriter()
    .lengthEncodedString(column.catalog)
    .lengthEncodedString(column.schema)
    .lengthEncodedString(column.table)
    .lengthEncodedString(column.orgTable)
    .lengthEncodedString(column.name)
    .lengthEncodedString(column.orgName);
  if (options.mariaDbExtendedMetadata) {
    const block = new PayloadWriter();
    if (column.extendedTypeName !== undefined) block.int1(ExtendedMetadataKind.TypeName).lengthEncodedString(column.extendedTypeName);
    if (column.extendedFormat !== undefined) block.int1(ExtendedMetadataKind.Format).lengthEncodedString(column.extendedFormat);
    writer.lengthEncodedBytes(block.finish());
  }
  return writer
    .lengthEncoded(fixedFieldsLength)
    .int2(column.characterSet)
    .int4(column.columnLength)
    .int1(column.type)
    .int2(column.flags)
    .int1(column.decimals)
    .zeros(2)
    .finish();
}
