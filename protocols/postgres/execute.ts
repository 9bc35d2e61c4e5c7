import { FrontendCode } from "./codes";
import { BodyReader, cstringEnd, MessageWriter, ProtocolError } from "./wire";

export interface Execute {
  portal: string;
  /** Most rows to return; 0 for all. */
  maxRows: number;
}

export function decodeExecute(body: Buffer): Execute {
  const reader = new BodyReader(body);
  return { portal: reader.cstring(), maxRows: reader.int32() };
}

/**
 * The Execute whose body is bytes[bodyStart, end): where its portal's name ends, and its row
 * limit. The name, bytes[bodyStart, portalEnd), is compared as sent, never decoded.
 */
export function locateExecute(bytes: Buffer, bodyStart: number, end: number): { portalEnd: number; maxRows: number } {
  const portalEnd = cstringEnd(bytes, bodyStart, end);
  if (portalEnd + 5 > end) throw new ProtocolError("message too short for its int32");
  return { portalEnd, maxRows: bytes.readInt32BE(portalEnd + 1) };
}

export function encodeExecute(message: Execute): Buffer {
  return new MessageWriter().cstring(message.portal).int32(message.maxRows).finish(FrontendCode.Execute);
}

/** Execute with the portal's name as the bytes the client sent. */
export function encodeExecuteBytes(portal: Buffer, maxRows: number): Buffer {
  return new MessageWriter().bytes(portal).byte(0).int32(maxRows).finish(FrontendCode.Execute);
}
