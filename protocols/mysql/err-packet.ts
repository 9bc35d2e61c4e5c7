import { ProtocolError } from "./protocol-error";
import { PayloadReader, PayloadWriter } from "./wire";

export const errHeader = 0xff;

/** MariaDB's progress reports travel as ERR packets with this code (MARIADB_CLIENT_PROGRESS). */
export const progressReportCode = 0xffff;

/** Protocol::ERR_Packet. */
export interface ErrPacket {
  code: number;
  /**
   * Five characters after the '#' marker. Absent when the server sent none: errors before
   * the capabilities are agreed (a refused host) come without it.
   */
  sqlState?: string;
  message: string;
}

export function isErrPacket(payload: Buffer): boolean {
  return payload.length >= 3 && payload[0] === errHeader;
}

export function isProgressReport(payload: Buffer): boolean {
  return isErrPacket(payload) && payload.readUInt16LE(1) === progressReportCode;
}

export function decodeErrPacket(payload: Buffer): ErrPacket {
  const reader = new PayloadReader(payload);
  if (reader.int1() !== errHeader) throw new ProtocolError("an ERR packet starts with 0xff");
  const code = reader.int2();
  if (code === progressReportCode) throw new ProtocolError("a progress report is not an error (decodeProgressReport)");
  const error: ErrPacket = { code, message: "" };
  if (reader.remaining >= 6 && reader.peek() === 0x23) {
    reader.skip(1);
    error.sqlState = reader.bytes(5).toString("latin1");
  }
  error.message = reader.rest().toString("utf8");
  return error;
}

export function encodeErrPacket(error: ErrPacket): Buffer {
  if (error.code === progressReportCode) throw new ProtocolError("code 0xffff is reserved for progress reports");
  const writer = new PayloadWriter().int1(errHeader).int2(error.code);
  if (error.sqlState !== undefined) {
    // Five bytes, as decoded (latin1): a server's odd SQLSTATE passes through unchanged.
    if (!/^[\x00-\xff]{5}$/.test(error.sqlState)) throw new ProtocolError(`SQLSTATE '${error.sqlState}' is not five single-byte characters`);
    writer.int1(0x23).bytes(Buffer.from(error.sqlState, "latin1"));
  }
  return writer.bytes(Buffer.from(error.message, "utf8")).finish();
}

/** MariaDB's progress report (sql/sql_class.cc, thd_progress_report; libmariadb's cli_report_progress). */
export interface ProgressReport {
  stage: number;
  maxStage: number;
  /** Thousandths of a percent done. */
  progress: number;
  info: string;
}

export function decodeProgressReport(payload: Buffer): ProgressReport {
  const reader = new PayloadReader(payload);
  if (reader.int1() !== errHeader || reader.int2() !== progressReportCode) throw new ProtocolError("a progress report starts with 0xff 0xffff");
  // The number of strings that follow; libmariadb skips it.
  reader.skip(1);
  const report = { stage: reader.int1(), maxStage: reader.int1(), progress: reader.int3(), info: reader.lengthEncodedString() };
  return report;
}

export function encodeProgressReport(report: ProgressReport): Buffer {
  return new PayloadWriter()
    .int1(errHeader)
    .int2(progressReportCode)
    .int1(1)
    .int1(report.stage)
    .int1(report.maxStage)
    .int3(report.progress)
    .lengthEncodedString(report.info)
    .finish();
}
