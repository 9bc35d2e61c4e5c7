/** Column definition flags (*_FLAG in include/mysql_com.h). */
export const ColumnFlag = {
  NotNull: 0x0001,
  PrimaryKey: 0x0002,
  UniqueKey: 0x0004,
  MultipleKey: 0x0008,
  Blob: 0x0010,
  Unsigned: 0x0020,
  Zerofill: 0x0040,
  Binary: 0x0080,
  Enum: 0x0100,
  AutoIncrement: 0x0200,
  Timestamp: 0x0400,
  Set: 0x0800,
  NoDefaultValue: 0x1000,
  OnUpdateNow: 0x2000,
  Num: 0x8000,
} as const;
