import { bom, ChunkedRedactor, emptyBuffer } from "./chunked-redactor";
import { UserIdFields } from "./user-id-fields";
import { decodeField, emptyCounts, emptyRows, faultError, scanRows, writeRows, type ScannedRows } from "./csv-rows";
import { CsvVerdicts } from "./csv-verdicts";
import { DocumentError, type CsvHandover, type CsvHeader, type CsvVerdict } from "./types";

/**
 * CSV redaction over bytes (RFC 4180 with LF or CRLF rows), on the calling thread. Rows are
 * scanned for field byte ranges (csv-rows); only the user-id columns are decoded. A kept field
 * is copied byte for byte (quotes and all), an emptied one is written as nothing, a dropped row
 * vanishes. The header row is written as it came (BOM included); its names are matched exactly,
 * after removing a BOM.
 *
 * A row the chunk does not complete is carried into the next chunk. A refused row fails the
 * document naming the line it starts on; the rows before it are counted first, and the bytes
 * in are those before it, so the stats of a failure do not depend on how the input was cut.
 */
export class CsvRedactor extends ChunkedRedactor {
  private line = 1;
  private header?: CsvHeader;
  private verdicts?: CsvVerdicts;
  private readonly rows: ScannedRows = emptyRows();
  private userIdFields?: UserIdFields;

  /** Whether the header row has been read (what a redactor taking over needs). */
  get headerRead(): boolean {
    return this.header !== undefined;
  }

  /** What another redactor needs to go on with this document after the rows this one has redacted. */
  handOver(): CsvHandover {
    if (!this.header || !this.verdicts) throw new Error("the CSV header has not been read yet");
    const handover: CsvHandover = {
      header: this.header,
      verdicts: this.verdicts,
      tally: this.counts,
      line: this.line,
      carry: this.carry,
      offset: this.counts.bytesIn - this.carry.length,
    };
    this.carry = emptyBuffer;
    return handover;
  }

  protected finish(): void {
    if (!this.header) throw new DocumentError("CSV_NO_HEADER", "the document has no header row", { line: 1 });
  }

  protected flushCounts(): void {
    this.verdicts?.flush(this.counts);
  }

  protected async process(buf: Buffer, start: number, final: boolean): Promise<Buffer> {
    const rows = scanRows(buf, start, final, this.line, this.header?.names.length, this.rows);
    this.counts.emptyLines += rows.emptyLines;
    let out: Buffer = emptyBuffer;
    let firstData = 0;
    if (!this.header && rows.count > 0) {
      const header = this.readHeader(buf, rows);
      const refused = this.headerRefusal(header);
      if (refused) {
        // Counted as a refused row: the header is the first, nothing before it is counted.
        this.counts.bytesIn -= buf.length - start;
        throw refused;
      }
      this.header = header;
      this.verdicts = new CsvVerdicts(this.plan, this.header);
      firstData = 1;
      out = Buffer.concat([this.hadBom ? bom : emptyBuffer, buf.subarray(rows.bounds[0], rows.bounds[rows.columns * 2 - 1]), this.header.terminator]);
    }
    if (this.header && rows.count > firstData) {
      const body = await this.redactRows(buf, rows, firstData, this.header);
      out = out.length > 0 ? Buffer.concat([out, body]) : body;
    }
    this.line = rows.line;
    this.carry = rows.end < buf.length ? Buffer.from(buf.subarray(rows.end)) : emptyBuffer;
    if (rows.fault) {
      // The document ends before the refused row: what came before it is counted, its output is not kept.
      this.counts.bytesOut += out.length;
      this.counts.bytesIn -= buf.length - rows.fault.rowStart;
      throw faultError(rows.fault, 0);
    }
    return out;
  }

  private readHeader(buf: Buffer, rows: ScannedRows): CsvHeader {
    const names: string[] = [];
    for (let f = 0; f < rows.columns; f++) names.push(decodeField(buf, rows.bounds[f * 2], rows.bounds[f * 2 + 1]));
    const terminator = buf[rows.bounds[rows.columns * 2 - 1]] === 0x0d ? Buffer.from("\r\n") : Buffer.from("\n");
    const userColumns = this.plan.resourceFields.flatMap((field) => names.flatMap((name, column) => (name === field ? [column] : [])));
    return { names, userColumns, terminator };
  }

  /** Why a header row cannot be redacted under: it names no user-id field, or one of them twice. */
  private headerRefusal(header: CsvHeader): DocumentError | undefined {
    if (header.userColumns.length === 0)
      return new DocumentError(
        "CSV_NO_USER_COLUMN",
        `the header row names none of the mapping group's user-id fields (${this.plan.resourceFields.join(", ") || "none mapped"}): no row could be kept, and a first line that is a row, not a header, would be written out as it came`,
        { line: 1 },
      );
    const twice = this.plan.resourceFields.find((field) => header.names.filter((name) => name === field).length > 1);
    if (twice !== undefined)
      return new DocumentError(
        "CSV_DUPLICATE_USER_COLUMN",
        `the header row names the user-id field '${twice}' more than once: which of its columns names the row's user is ambiguous`,
        { line: 1 },
      );
    return undefined;
  }

  private async redactRows(buf: Buffer, rows: ScannedRows, firstRow: number, header: CsvHeader): Promise<Buffer> {
    this.userIdFields ??= new UserIdFields(header.userColumns);
    const userIds = this.userIdFields.idsOf(buf, rows, firstRow);
    await this.decisions.prepare(userIds.filter((id): id is string => id !== undefined));
    const verdicts = this.verdicts!;
    const rowVerdicts = userIds.map((id): CsvVerdict | undefined => (id === undefined ? undefined : verdicts.of(this.decisions.of(id))));
    const counts = emptyCounts();
    const out = writeRows(buf, rows, firstRow, rowVerdicts, header.terminator, counts);
    verdicts.merge(counts, this.counts);
    return out;
  }
}
