import { FrontendCode } from "./codes";
import { BodyReader, MessageWriter } from "./wire";

export interface Parse {
  statement: string;
  sql: string;
  /** Parameter type OIDs (0: let the server infer). */
  parameterTypes: number[];
}

export function decodeParse(body: Buffer): Parse {
  const reader = new BodyReader(body);
  const statement = reader.cstring();
  const sql = reader.cstring();
  const count = reader.int16();
  const parameterTypes: number[] = [];
  for (let i = 0; i < count; i++) parameterTypes.push(reader.int32() >>> 0);
  return { statement, sql, parameterTypes };
}

export function encodeParse(message: Parse): Buffer {
  const writer = new MessageWriter().cstring(message.statement).cstring(message.sql).int16(message.parameterTypes.length);
  for (const type of message.parameterTypes) writer.int32(type | 0);
  return writer.finish(FrontendCode.Parse);
}
