import { regularRows } from "./csv-structure";
import { DocumentError, documentLimits, type CsvCounts, type CsvRowFault, type CsvVerdict } from "./types";

const enum Byte {
  LF = 0x0a, // \n
  CR = 0x0d, // \r
  Quote = 0x22, // "
  Comma = 0x2c, // ,
}

/** Rows found in one buffer, each with the same number of fields. */
export interface ScannedRows {
  count: number;
  /** Fields per row (the header's count). */
  columns: number;
  /** Start and end (exclusive) of every field, row after row, raw: a quoted field keeps its quotes. */
  bounds: Int32Array;
  /** Where the complete rows end: the unfinished rest, or the refused row, starts here. */
  end: number;
  /** The line `end` is on. */
  line: number;
  emptyLines: number;
  /** The first row refused; the rows before it are scanned. */
  fault?: CsvRowFault;
}

export function emptyRows(): ScannedRows {
  return { count: 0, columns: 0, bounds: new Int32Array(8192), end: 0, line: 0, emptyLines: 0 };
}

/** Input handed to the WebAssembly scanner per call: its memory holds about nine times this. */
export const wasmSliceBytes = 2 << 20;

/**
 * Finds the complete rows of `buf` from `start` (a row start, on line `line`) into `rows`
 * (whose buffers it reuses). `columns` is the header's field count; undefined when the first
 * row is the header, which sets it. Stops at the first row it refuses: a quote inside an
 * unquoted field, text after a closing quote, a bare CR outside quotes, an unterminated quote
 * (when `final`), a row with more or fewer fields than the header, a row over the size limit.
 * Which one does not depend on where the input was cut: a fault found past the size limit is
 * reported as the row being too large, as it would be when the row came in pieces. Empty lines
 * are skipped and counted. Without `final` a row the buffer does not complete is left for the
 * next buffer (from `end`).
 *
 * The WebAssembly scanner (csv-structure) finds the regular rows first; this JS scanner goes on
 * from the first row it leaves (an irregular or refused row, the unfinished end) and is the one
 * that refuses: the rules above are written here only.
 */
export function scanRows(buf: Buffer, start: number, final: boolean, line: number, columns: number | undefined, rows: ScannedRows): ScannedRows {
  rows.count = 0;
  rows.emptyLines = 0;
  rows.fault = undefined;
  let fields = 0;
  let p = start;
  while (p < buf.length) {
    const length = Math.min(buf.length - p, wasmSliceBytes);
    const regular = regularRows(buf, p, length, columns, documentLimits.maxRecordBytes);
    if (!regular) break;
    reserveFields(rows, fields + regular.fields);
    rows.bounds.set(regular.bounds, fields * 2);
    fields += regular.fields;
    rows.count += regular.rows;
    rows.emptyLines += regular.emptyLines;
    line += regular.lineFeeds;
    if (regular.columns > 0) columns = regular.columns;
    const from = p;
    p = regular.end;
    if (regular.stopped || p === from || from + length === buf.length) break;
  }
  return scanRest(buf, p, final, line, columns, rows, fields);
}

/** The JS scanner alone: what scanRows does without WebAssembly SIMD, and the tests' reference for it. */
export function scanRowsInJs(buf: Buffer, start: number, final: boolean, line: number, columns: number | undefined, rows: ScannedRows): ScannedRows {
  rows.count = 0;
  rows.emptyLines = 0;
  rows.fault = undefined;
  return scanRest(buf, start, final, line, columns, rows, 0);
}

/** scanRows' JS scanner, from `start` (a row start) after `rows.count` rows of `fields` fields. */
function scanRest(buf: Buffer, start: number, final: boolean, line: number, columns: number | undefined, rows: ScannedRows, fields: number): ScannedRows {
  const n = buf.length;
  let p = start;
  let end = start;
  let endLine = line;
  const refuse = (rowStart: number, rowLine: number, at: number, code: string, detail: string) => {
    rows.fault = at + 1 - rowStart > documentLimits.maxRecordBytes ? tooLarge(rowStart, rowLine) : { code, detail, line: rowLine, rowStart };
  };
  scan: while (p < n) {
    const rowStart = p;
    const rowLine = line;
    const rowFields = fields;
    if (buf[p] === Byte.LF || (buf[p] === Byte.CR && (p + 1 === n || buf[p + 1] === Byte.LF))) {
      if (p + 1 === n && buf[p] === Byte.CR && !final) break;
      rows.emptyLines++;
      line++;
      p += buf[p] === Byte.CR && p + 1 < n ? 2 : 1;
      end = p;
      endLine = line;
      continue;
    }
    for (;;) {
      const fieldStart = p;
      if (buf[p] === Byte.Quote) {
        // The closing quote: the first quote not doubled. Short fields are read here, long ones searched natively.
        let q = p + 1;
        for (;;) {
          const limit = Math.min(n, q + 64);
          while (q < limit && buf[q] !== Byte.Quote) if (buf[q++] === Byte.LF) line++;
          if (q === limit && q < n) {
            const quote = buf.indexOf(Byte.Quote, q);
            const stop = quote === -1 ? n : quote;
            for (let lf = buf.indexOf(Byte.LF, q); lf !== -1 && lf < stop; lf = buf.indexOf(Byte.LF, lf + 1)) line++;
            q = stop;
          }
          if (q === n || (q + 1 === n && !final)) {
            if (final) refuse(rowStart, rowLine, n - 1, "CSV_UNTERMINATED_QUOTE", "has a quoted field that is never closed");
            break scan;
          }
          if (buf[q + 1] !== Byte.Quote) break;
          q += 2;
        }
        p = q + 1;
        const next = buf[p];
        if (p < n && next !== Byte.Comma && next !== Byte.LF && !(next === Byte.CR && (p + 1 === n || buf[p + 1] === Byte.LF))) {
          refuse(rowStart, rowLine, p, "CSV_INVALID_QUOTE", `has text after a closing quote (field ${fields - rowFields + 1})`);
          break scan;
        }
      } else {
        while (p < n && ordinary[buf[p]] === 1) p++;
        if (p < n && buf[p] === Byte.Quote) {
          refuse(
            rowStart,
            rowLine,
            p,
            "CSV_INVALID_QUOTE",
            `has a quote inside an unquoted field (field ${fields - rowFields + 1}); quote the whole field and double the quote`,
          );
          break scan;
        }
        // RFC 4180 has no bare CR outside quotes: reading one as data would merge rows that other readers split.
        if (p + 1 < n && buf[p] === Byte.CR && buf[p + 1] !== Byte.LF) {
          refuse(
            rowStart,
            rowLine,
            p,
            "CSV_BARE_CR",
            `has a carriage return not followed by a line feed (field ${fields - rowFields + 1}); rows must end with LF or CRLF, and a CR inside a field must be quoted`,
          );
          break scan;
        }
      }
      const fieldEnd = p;
      // The row's end: the document's, or a CR (then LF, or the document's end) or a LF.
      if (p === n || (buf[p] === Byte.CR && p + 1 === n)) {
        if (!final) break scan;
        fields = addField(rows, fields, fieldStart, fieldEnd);
        p = n;
        break;
      }
      fields = addField(rows, fields, fieldStart, fieldEnd);
      if (buf[p] === Byte.Comma) {
        p++;
        if (p < n) continue;
        if (!final) break scan;
        fields = addField(rows, fields, p, p);
        break;
      }
      p += buf[p] === Byte.CR ? 2 : 1;
      line++;
      break;
    }
    if (p - rowStart > documentLimits.maxRecordBytes) {
      rows.fault = tooLarge(rowStart, rowLine);
      break;
    }
    const count = fields - rowFields;
    columns ??= count;
    if (count !== columns) {
      rows.fault = { code: "CSV_RAGGED_ROW", detail: `has ${count} fields; the header has ${columns}`, line: rowLine, rowStart };
      break;
    }
    rows.count++;
    end = p;
    endLine = line;
  }
  if (!rows.fault && n - end > documentLimits.maxRecordBytes) rows.fault = tooLarge(end, endLine);
  rows.columns = columns ?? 0;
  rows.end = rows.fault ? rows.fault.rowStart : end;
  rows.line = rows.fault ? rows.fault.line : endLine;
  return rows;
}

/** Where an output of up to `length` bytes is written: a Buffer of at least that length at the start of an ArrayBuffer of its own. */
export type OutputSpace = (length: number) => Buffer;

/** A new ArrayBuffer for each output. */
export const newOutput: OutputSpace = (length) => Buffer.allocUnsafeSlow(length);

/**
 * Writes the rows from `first` that their verdicts keep (`verdicts[r - first]`; undefined: the
 * row names no user), each kept field byte for byte and every other one empty, and counts them.
 * The output starts an ArrayBuffer of its own (`space`'s), so a worker can hand it over without a copy.
 */
export function writeRows(
  buf: Buffer,
  rows: ScannedRows,
  first: number,
  verdicts: ReadonlyArray<CsvVerdict | undefined>,
  terminator: Buffer,
  counts: CsvCounts,
  space: OutputSpace = newOutput,
): Buffer {
  const { bounds, columns } = rows;
  const out = space(rows.end + (rows.count + 1) * terminator.length);
  let at = 0;
  counts.rowsIn += rows.count - first;
  for (let r = first; r < rows.count; r++) {
    const verdict = verdicts[r - first];
    if (verdict === undefined) {
      counts.noUserId++;
      continue;
    }
    counts.rowsByVerdict[verdict.id] = (counts.rowsByVerdict[verdict.id] ?? 0) + 1;
    if (!verdict.allowed) continue;
    const { keep } = verdict;
    const row = r * columns;
    for (let c = 0; c < columns; c++) {
      if (c > 0) out[at++] = Byte.Comma;
      if (keep[c] === 0) continue;
      // A run of kept fields is one copy: in the input they are separated by single commas too.
      let last = c;
      while (last + 1 < columns && keep[last + 1] === 1) last++;
      at = copyBytes(buf, bounds[(row + c) * 2], bounds[(row + last) * 2 + 1], out, at);
      c = last;
    }
    at = copyBytes(terminator, 0, terminator.length, out, at);
  }
  return out.subarray(0, at);
}

/** The document's failure at a refused row; `lineOffset` turns the scan's line into the document's. */
export function faultError(fault: CsvRowFault, lineOffset: number): DocumentError {
  const line = fault.line + lineOffset;
  return new DocumentError(fault.code, `the row on line ${line} ${fault.detail}`, { line });
}

export function emptyCounts(): CsvCounts {
  return { rowsIn: 0, noUserId: 0, rowsByVerdict: [] };
}

/** A field's text: a quoted field without its quotes and with doubled quotes made single. */
export function decodeField(buf: Buffer, start: number, end: number): string {
  if (end - start >= 2 && buf[start] === Byte.Quote) return buf.toString("utf8", start + 1, end - 1).replaceAll('""', '"');
  return buf.toString("utf8", start, end);
}

function addField(rows: ScannedRows, fields: number, start: number, end: number): number {
  if (rows.bounds.length < (fields + 1) * 2) reserveFields(rows, fields + 1);
  rows.bounds[fields * 2] = start;
  rows.bounds[fields * 2 + 1] = end;
  return fields + 1;
}

/** Makes room for `fields` fields' bounds, keeping those there. */
function reserveFields(rows: ScannedRows, fields: number): void {
  if (rows.bounds.length >= fields * 2) return;
  let length = rows.bounds.length * 2;
  while (length < fields * 2) length *= 2;
  const grown = new Int32Array(length);
  grown.set(rows.bounds);
  rows.bounds = grown;
}

/** Bytes that continue an unquoted field: all but comma, LF, CR and quote. */
const ordinary = new Uint8Array(256).fill(1);
ordinary[Byte.Comma] = 0;
ordinary[Byte.LF] = 0;
ordinary[Byte.Quote] = 0;
ordinary[Byte.CR] = 0;

/** Copies bytes and returns the end in `target`; short spans by hand (Buffer.copy's setup costs more than they do). */
function copyBytes(source: Buffer, start: number, end: number, target: Buffer, at: number): number {
  if (end - start > 64) return at + source.copy(target, at, start, end);
  for (let i = start; i < end; i++) target[at++] = source[i];
  return at;
}

function tooLarge(rowStart: number, line: number): CsvRowFault {
  return { code: "RECORD_TOO_LARGE", detail: `is longer than ${documentLimits.maxRecordBytes} bytes`, line, rowStart };
}
