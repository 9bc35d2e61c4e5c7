import { bom, ChunkedRedactor, emptyBuffer } from "./chunked-redactor";
import { DocumentError, documentLimits, type RowDecision } from "./types";

const enum Byte {
  LF = 0x0a, // \n
  CR = 0x0d, // \r
  Quote = 0x22, // "
  Comma = 0x2c, // ,
}


/** Rows found in one buffer: field byte ranges, flat, with per-row offsets. */
interface ScannedRows {
  count: number;
  /** Index into `bounds` (in fields) of each row's first field. */
  first: number[];
  /** Line number on which each row starts. */
  lines: number[];
  /** Start and end (exclusive) of every field, raw: a quoted field keeps its quotes. */
  bounds: Int32Array;
}

interface Header {
  names: string[];
  /** Columns holding the user id, in mapping order. */
  userColumns: number[];
  terminator: Buffer;
}

/**
 * CSV redaction over bytes (RFC 4180 with LF or CRLF rows). Rows are scanned for field byte
 * ranges; only the user-id columns are decoded. A kept field is copied byte for byte (quotes
 * and all), an emptied one is written as nothing, a dropped row vanishes. The header row is
 * written as it came (BOM included); its names are matched exactly, after removing a BOM.
 *
 * A row the chunk does not complete is carried into the next chunk. Errors name the line the
 * row starts on: a quote inside an unquoted field, text after a closing quote, an unterminated
 * quote, a bare CR outside quotes, a row with more or fewer fields than the header, a row over
 * the size limit.
 */
export class CsvRedactor extends ChunkedRedactor {
  private line = 1;
  private header?: Header;
  /** Per decision: which columns its rows keep, and how many kept rows used it since the last count. */
  private readonly masks = new Map<RowDecision, Mask>();
  private rows: ScannedRows = { count: 0, first: [], lines: [], bounds: new Int32Array(8192) };

  protected finish(): void {
    if (!this.header) throw new DocumentError("CSV_NO_HEADER", "the document has no header row", { line: 1 });
  }

  protected flushCounts(): void {
    for (const mask of this.masks.values()) {
      this.header?.names.forEach((name, column) => {
        const entry = this.counts.field(name);
        if (mask.keep[column] === 1) entry.kept += mask.rows;
        else entry.emptied += mask.rows;
      });
      mask.rows = 0;
    }
  }

  protected async process(buf: Buffer, start: number, final: boolean): Promise<Buffer> {
    const rows = this.scan(buf, start, final);
    let out = emptyBuffer;
    let firstData = 0;
    if (!this.header && rows.count > 0) {
      this.header = this.readHeader(buf, rows);
      firstData = 1;
      const headerStart = rows.bounds[rows.first[0] * 2];
      const headerEnd = rows.bounds[(rows.first[0] + this.header.names.length - 1) * 2 + 1];
      out = Buffer.concat([this.hadBom ? bom : emptyBuffer, buf.subarray(headerStart, headerEnd), this.header.terminator]);
    }
    if (!this.header) return out;
    const body = await this.redactRows(buf, rows, firstData, this.header);
    return out.length > 0 ? Buffer.concat([out, body]) : body;
  }

  private readHeader(buf: Buffer, rows: ScannedRows): Header {
    const count = (rows.count > 1 ? rows.first[1] : this.fieldsScanned) - rows.first[0];
    const names: string[] = [];
    for (let f = 0; f < count; f++) names.push(decodeField(buf, rows.bounds[(rows.first[0] + f) * 2], rows.bounds[(rows.first[0] + f) * 2 + 1]));
    const lastEnd = rows.bounds[(rows.first[0] + count - 1) * 2 + 1];
    const terminator = buf[lastEnd] === Byte.CR ? Buffer.from("\r\n") : Buffer.from("\n");
    const userColumns = this.plan.resourceFields.flatMap((field) => names.flatMap((name, column) => (name === field ? [column] : [])));
    return { names, userColumns, terminator };
  }

  /** Fields scanned into `bounds` by the last scan (the end of the last row's fields). */
  private fieldsScanned = 0;

  private async redactRows(buf: Buffer, rows: ScannedRows, firstRow: number, header: Header): Promise<Buffer> {
    const columns = header.names.length;
    const userIds: Array<string | undefined> = [];
    for (let r = firstRow; r < rows.count; r++) {
      const fieldCount = (r + 1 < rows.count ? rows.first[r + 1] : this.fieldsScanned) - rows.first[r];
      if (fieldCount !== columns) throw new DocumentError("CSV_RAGGED_ROW", `the row on line ${rows.lines[r]} has ${fieldCount} fields; the header has ${columns}`, { line: rows.lines[r] });
      userIds.push(this.userIdOf(buf, rows.bounds, rows.first[r], header));
    }
    await this.decisions.prepare(userIds.filter((id): id is string => id !== undefined));
    const out = Buffer.allocUnsafe(buf.length + (rows.count + 1) * header.terminator.length);
    let at = 0;
    const { bounds } = rows;
    for (let r = firstRow; r < rows.count; r++) {
      this.counts.rowsIn++;
      const userId = userIds[r - firstRow];
      if (userId === undefined) {
        this.counts.drop("NO_USER_ID");
        continue;
      }
      const decision = this.decisions.of(userId);
      if (!decision.allowed) {
        this.counts.drop(decision.reason);
        continue;
      }
      this.counts.rowsKept++;
      const mask = this.maskFor(decision, header);
      mask.rows++;
      const first = rows.first[r];
      for (let c = 0; c < columns; c++) {
        if (c > 0) out[at++] = Byte.Comma;
        if (mask.keep[c] === 0) continue;
        // A run of kept fields is one copy: in the input they are separated by single commas too.
        let last = c;
        while (last + 1 < columns && mask.keep[last + 1] === 1) last++;
        at = copyBytes(buf, bounds[(first + c) * 2], bounds[(first + last) * 2 + 1], out, at);
        c = last;
      }
      at = copyBytes(header.terminator, 0, header.terminator.length, out, at);
    }
    return out.subarray(0, at);
  }

  private userIdOf(buf: Buffer, bounds: Int32Array, first: number, header: Header): string | undefined {
    for (const column of header.userColumns) {
      const start = bounds[(first + column) * 2];
      const end = bounds[(first + column) * 2 + 1];
      if (end > start) {
        const value = decodeField(buf, start, end);
        if (value !== "") return value;
      }
    }
    return undefined;
  }

  private maskFor(decision: RowDecision, header: Header): Mask {
    let mask = this.masks.get(decision);
    if (!mask) {
      const keep = new Uint8Array(header.names.length);
      header.names.forEach((name, column) => {
        const category = this.plan.categoryOf.get(name);
        keep[column] = category !== undefined && decision.categories.has(category) ? 1 : 0;
      });
      mask = { keep, rows: 0 };
      this.masks.set(decision, mask);
    }
    return mask;
  }

  private addField(rows: ScannedRows, fields: number, start: number, end: number): number {
    if (rows.bounds.length < (fields + 1) * 2) {
      const grown = new Int32Array(rows.bounds.length * 2);
      grown.set(rows.bounds);
      rows.bounds = grown;
    }
    rows.bounds[fields * 2] = start;
    rows.bounds[fields * 2 + 1] = end;
    return fields + 1;
  }

  /**
   * Finds the complete rows of `buf` from `pos`. Sets the carry to the incomplete rest (none
   * when `final`). Empty lines are skipped and counted.
   */
  private scan(buf: Buffer, pos: number, final: boolean): ScannedRows {
    const rows = this.rows;
    rows.count = 0;
    rows.first.length = 0;
    rows.lines.length = 0;
    let fields = 0;
    const n = buf.length;
    let p = pos;
    let line = this.line;
    let carryFrom = n;
    while (p < n) {
      const rowStart = p;
      const rowLine = line;
      const rowFields = fields;
      if (buf[p] === Byte.LF || (buf[p] === Byte.CR && (p + 1 === n || buf[p + 1] === Byte.LF))) {
        if (p + 1 === n && buf[p] === Byte.CR && !final) {
          carryFrom = rowStart;
          break;
        }
        this.counts.emptyLines++;
        line++;
        p += buf[p] === Byte.CR && p + 1 < n ? 2 : 1;
        continue;
      }
      let complete = true;
      for (;;) {
        const fieldStart = p;
        const quoted = buf[p] === Byte.Quote;
        if (quoted) {
          const after = quotedFieldEnd(buf, p, final);
          if (after === -1) {
            if (final) throw new DocumentError("CSV_UNTERMINATED_QUOTE", `the quoted field of the row on line ${rowLine} is never closed`, { line: rowLine });
            complete = false;
            break;
          }
          for (let lf = buf.indexOf(Byte.LF, p); lf !== -1 && lf < after; lf = buf.indexOf(Byte.LF, lf + 1)) line++;
          p = after;
          const next = buf[p];
          if (p < n && next !== Byte.Comma && next !== Byte.LF && !(next === Byte.CR && (p + 1 === n || buf[p + 1] === Byte.LF))) {
            throw new DocumentError("CSV_INVALID_QUOTE", `the row on line ${rowLine} has text after a closing quote (field ${fields - rowFields + 1})`, { line: rowLine });
          }
        } else {
          while (p < n && ordinary[buf[p]] === 1) p++;
          if (p < n && buf[p] === Byte.Quote) {
            throw new DocumentError("CSV_INVALID_QUOTE", `the row on line ${rowLine} has a quote inside an unquoted field (field ${fields - rowFields + 1}); quote the whole field and double the quote`, { line: rowLine });
          }
          // RFC 4180 has no bare CR outside quotes: reading one as data would merge rows that other readers split.
          if (p + 1 < n && buf[p] === Byte.CR && buf[p + 1] !== Byte.LF) {
            throw new DocumentError("CSV_BARE_CR", `the row on line ${rowLine} has a carriage return not followed by a line feed (field ${fields - rowFields + 1}); rows must end with LF or CRLF, and a CR inside a field must be quoted`, { line: rowLine });
          }
        }
        const fieldEnd = p;
        // The row's end: the document's, or a CR (then LF, or the document's end) or a LF.
        if (p === n || (buf[p] === Byte.CR && p + 1 === n)) {
          if (!final) {
            complete = false;
            break;
          }
          fields = this.addField(rows, fields, fieldStart, fieldEnd);
          p = n;
          break;
        }
        fields = this.addField(rows, fields, fieldStart, fieldEnd);
        if (buf[p] === Byte.Comma) {
          p++;
          if (p < n) continue;
          if (!final) {
            complete = false;
            break;
          }
          fields = this.addField(rows, fields, p, p);
          break;
        }
        p += buf[p] === Byte.CR ? 2 : 1;
        line++;
        break;
      }
      if (!complete) {
        carryFrom = rowStart;
        fields = rowFields;
        line = rowLine;
        break;
      }
      if (p - rowStart > documentLimits.maxRecordBytes) throw tooLong(rowLine);
      rows.first.push(rowFields);
      rows.lines.push(rowLine);
      rows.count++;
    }
    this.fieldsScanned = fields;
    if (carryFrom < n && n - carryFrom > documentLimits.maxRecordBytes) throw tooLong(line);
    this.carry = carryFrom < n ? Buffer.from(buf.subarray(carryFrom)) : emptyBuffer;
    this.line = line;
    return rows;
  }
}

/** End (exclusive) of the quoted field at `start`, or -1 when the buffer ends before it is known to. */
function quotedFieldEnd(buf: Buffer, start: number, final: boolean): number {
  let p = start + 1;
  for (;;) {
    const quote = buf.indexOf(Byte.Quote, p);
    if (quote === -1) return -1;
    if (quote + 1 < buf.length && buf[quote + 1] === Byte.Quote) {
      p = quote + 2;
      continue;
    }
    return quote + 1 === buf.length && !final ? -1 : quote + 1;
  }
}

/** Bytes that continue an unquoted field: all but comma, LF, CR and quote. */
const ordinary = new Uint8Array(256).fill(1);
ordinary[Byte.Comma] = 0;
ordinary[Byte.LF] = 0;
ordinary[Byte.Quote] = 0;
ordinary[Byte.CR] = 0;

interface Mask {
  keep: Uint8Array;
  rows: number;
}

/** Copies bytes and returns the end in `target`; short spans by hand (Buffer.copy's setup costs more than they do). */
function copyBytes(source: Buffer, start: number, end: number, target: Buffer, at: number): number {
  if (end - start > 64) return at + source.copy(target, at, start, end);
  for (let i = start; i < end; i++) target[at++] = source[i];
  return at;
}

function tooLong(line: number): DocumentError {
  return new DocumentError("RECORD_TOO_LARGE", `the row on line ${line} is longer than ${documentLimits.maxRecordBytes} bytes`, { line });
}

/** A field's text: a quoted field without its quotes and with doubled quotes made single. */
function decodeField(buf: Buffer, start: number, end: number): string {
  if (end - start >= 2 && buf[start] === Byte.Quote) return buf.toString("utf8", start + 1, end - 1).replaceAll('""', '"');
  return buf.toString("utf8", start, end);
}
