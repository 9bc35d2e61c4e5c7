import { FrontendCode } from "./codes";
import { BodyReader, MessageWriter, ProtocolError } from "./wire";

export interface Bind {
  portal: string;
  statement: string;
  /** Format of each parameter (one code for all, or none for text). */
  parameterFormats: number[];
  /** Parameter values; null for SQL NULL. */
  parameters: Array<Buffer | null>;
  /** Format of each result column (one code for all, or none for text). */
  resultFormats: number[];
}

export function decodeBind(body: Buffer): Bind {
  const reader = new BodyReader(body);
  const portal = reader.cstring();
  const statement = reader.cstring();
  const parameterFormats: number[] = [];
  for (let i = 0, n = reader.int16(); i < n; i++) parameterFormats.push(reader.int16());
  const parameters: Array<Buffer | null> = [];
  for (let i = 0, n = reader.int16(); i < n; i++) {
    const length = reader.int32();
    parameters.push(length === -1 ? null : Buffer.from(reader.slice(length)));
  }
  const resultFormats: number[] = [];
  for (let i = 0, n = reader.int16(); i < n; i++) resultFormats.push(reader.int16());
  return { portal, statement, parameterFormats, parameters, resultFormats };
}

export function encodeBind(message: Bind): Buffer {
  const writer = new MessageWriter().cstring(message.portal).cstring(message.statement).int16(message.parameterFormats.length);
  for (const format of message.parameterFormats) writer.int16(format);
  writer.int16(message.parameters.length);
  for (const value of message.parameters) {
    if (value === null) writer.int32(-1);
    else writer.int32(value.length).bytes(value);
  }
  writer.int16(message.resultFormats.length);
  for (const format of message.resultFormats) writer.int16(format);
  return writer.finish(FrontendCode.Bind);
}

/** Where the portal and statement names of the Bind whose body is bytes[bodyStart, end) lie (no copy). */
export function locateBind(bytes: Buffer, bodyStart: number, end: number): { portalEnd: number; statementStart: number; statementEnd: number } {
  const portalEnd = bytes.indexOf(0, bodyStart);
  const statementEnd = portalEnd < 0 ? -1 : bytes.indexOf(0, portalEnd + 1);
  if (portalEnd < 0 || statementEnd < 0 || statementEnd >= end) throw new ProtocolError("Bind names are not terminated");
  return { portalEnd, statementStart: portalEnd + 1, statementEnd };
}
