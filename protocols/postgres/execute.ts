import { FrontendCode } from "./codes";
import { BodyReader, MessageWriter } from "./wire";

export interface Execute {
  portal: string;
  /** Most rows to return; 0 for all. */
  maxRows: number;
}

export function decodeExecute(body: Buffer): Execute {
  const reader = new BodyReader(body);
  return { portal: reader.cstring(), maxRows: reader.int32() };
}

export function encodeExecute(message: Execute): Buffer {
  return new MessageWriter().cstring(message.portal).int32(message.maxRows).finish(FrontendCode.Execute);
}
