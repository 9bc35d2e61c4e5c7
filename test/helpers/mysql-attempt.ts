import type mysql from "mysql2/promise";

/** What a client got for one statement: its rows, or its error; `text` holds every value and message. */
export interface Outcome {
  rows: unknown[][];
  error?: { errno: number; sqlState: string; message: string };
  text: string;
}

/** Runs `sql` as a text query or (`prepared`) a prepared statement, and says what came back, rows or error, without throwing. */
export async function attempt(connection: mysql.Connection, sql: string, prepared = false): Promise<Outcome> {
  try {
    const [rows] = prepared ? await connection.execute({ sql, rowsAsArray: true }) : await connection.query({ sql, rowsAsArray: true });
    const list = Array.isArray(rows) ? (rows as unknown[][]) : [];
    return { rows: list, text: JSON.stringify(rows, (_, v) => (Buffer.isBuffer(v) ? v.toString("latin1") : v)) };
  } catch (error) {
    const e = error as { errno: number; sqlState: string; message: string };
    return { rows: [], error: { errno: e.errno, sqlState: e.sqlState, message: e.message }, text: `${e.errno} ${e.sqlState} ${e.message}` };
  }
}
