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

/** Execute with the portal's name as the bytes the client sent. */
export function encodeExecuteBytes(portal: Buffer, maxRows: number): Buffer {
  return new MessageWriter().bytes(portal).byte(0).int32(maxRows).finish(FrontendCode.Execute);
}
