/**
 * Where each value of a row lies in its payload (no copy): `starts[i]` is the offset of value
 * i's bytes (after any length prefix), `lengths[i]` their length, or -1 for NULL. Reused across
 * rows by passing the same object, as the PostgreSQL codec's RowValues.
 */
export interface RowValues {
  count: number;
  starts: Int32Array;
  lengths: Int32Array;
}

export function newRowValues(capacity = 64): RowValues {
  return { count: 0, starts: new Int32Array(capacity), lengths: new Int32Array(capacity) };
}

/** Makes room for `count` values. */
export function ensureCapacity(into: RowValues, count: number): void {
  if (into.starts.length < count) {
    into.starts = new Int32Array(count);
    into.lengths = new Int32Array(count);
  }
}

/**
 * What becomes of each value of a row: kept (true or 1), set to NULL (false or 0), or left
 * out of the row altogether (-1: a column the client never asked for).
 */
export type ValueActions = ArrayLike<boolean | number>;
