import { BackendCode } from "./codes";
import { BodyReader, MessageWriter } from "./wire";

/** Field codes of ErrorResponse and NoticeResponse, by their one-letter code. */
export const enum ErrorField {
  Severity = 0x53, // 'S' (localized)
  SeverityNonLocalized = 0x56, // 'V'
  Code = 0x43, // 'C' (SQLSTATE)
  Message = 0x4d, // 'M'
  Detail = 0x44, // 'D'
  Hint = 0x48, // 'H'
  Position = 0x50, // 'P'
  InternalPosition = 0x70, // 'p'
  InternalQuery = 0x71, // 'q'
  Where = 0x57, // 'W'
  Schema = 0x73, // 's'
  Table = 0x74, // 't'
  Column = 0x63, // 'c'
  DataType = 0x64, // 'd'
  Constraint = 0x6e, // 'n'
  File = 0x46, // 'F'
  Line = 0x4c, // 'L'
  Routine = 0x52, // 'R'
}

/** The fields of an ErrorResponse or NoticeResponse, in the order received. */
export type ErrorFields = Map<number, string>;

export function decodeErrorFields(body: Buffer): ErrorFields {
  const reader = new BodyReader(body);
  const fields: ErrorFields = new Map();
  for (;;) {
    const code = reader.byte();
    if (code === 0) return fields;
    fields.set(code, reader.cstring());
  }
}

function encodeFields(fields: ErrorFields, code: number): Buffer {
  const writer = new MessageWriter();
  for (const [field, value] of fields) writer.byte(field).cstring(value);
  return writer.byte(0).finish(code);
}

export function encodeErrorResponse(fields: ErrorFields): Buffer {
  return encodeFields(fields, BackendCode.ErrorResponse);
}

export function encodeNoticeResponse(fields: ErrorFields): Buffer {
  return encodeFields(fields, BackendCode.NoticeResponse);
}

/** An ErrorResponse built from its essentials. */
export function errorFields(severity: "ERROR" | "FATAL", sqlState: string, message: string): ErrorFields {
  return new Map<number, string>([
    [ErrorField.Severity, severity],
    [ErrorField.SeverityNonLocalized, severity],
    [ErrorField.Code, sqlState],
    [ErrorField.Message, message],
  ]);
}
