/**
 * The NULL bitmaps of the binary protocol: bit (i + offset) of the bitmap marks value i NULL.
 * A binary resultset row shifts by 2 (its first two bits are reserved), COM_STMT_EXECUTE's
 * parameters by 0.
 */
export const NullBitmapOffset = {
  ResultsetRow: 2,
  ExecuteParameters: 0,
} as const;

export function nullBitmapLength(count: number, offset: number): number {
  return (count + 7 + offset) >> 3;
}

export function isNullAt(bytes: Buffer, bitmapStart: number, index: number, offset: number): boolean {
  const bit = index + offset;
  return (bytes[bitmapStart + (bit >> 3)]! & (1 << (bit & 7))) !== 0;
}

export function setNullAt(bytes: Buffer, bitmapStart: number, index: number, offset: number): void {
  const bit = index + offset;
  bytes[bitmapStart + (bit >> 3)]! |= 1 << (bit & 7);
}
