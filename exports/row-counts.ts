/** Rows a connection (or several) saw, kept whole or with values emptied, dropped; and values emptied. Every SQL door counts these. */
export interface RowCounts {
  rowsIn: number;
  rowsKept: number;
  rowsDropped: number;
  valuesNulled: number;
  /** Statement texts analysed, and of those the ones parsed (not found in the analysis cache). */
  statements: number;
  statementsParsed: number;
}

export function emptyRowCounts(): RowCounts {
  return { rowsIn: 0, rowsKept: 0, rowsDropped: 0, valuesNulled: 0, statements: 0, statementsParsed: 0 };
}

/** Adds `more`'s row counts to `sum` (sessions', workers', ended connections'). */
export function addRowCounts(sum: RowCounts, more: RowCounts): RowCounts {
  sum.rowsIn += more.rowsIn;
  sum.rowsKept += more.rowsKept;
  sum.rowsDropped += more.rowsDropped;
  sum.valuesNulled += more.valuesNulled;
  sum.statements += more.statements;
  sum.statementsParsed += more.statementsParsed;
  return sum;
}
