import { ProtocolError } from "./protocol-error";
import { PayloadWriter } from "./wire";

/** The header of Protocol::LOCAL INFILE Request: the server asks the client for a file's contents. */
export const localInfileHeader = 0xfb;

/** Whether the first packet answering a COM_QUERY asks for a local file (LOAD DATA LOCAL INFILE). */
export function isLocalInfileRequest(payload: Buffer): boolean {
  return payload.length > 0 && payload[0] === localInfileHeader;
}

/** The file name the server asks for, as bytes (the client's file system decides its encoding). */
export function decodeLocalInfileRequest(payload: Buffer): Buffer {
  if (!isLocalInfileRequest(payload)) throw new ProtocolError("a LOCAL INFILE request starts with 0xfb");
  return payload.subarray(1);
}

export function encodeLocalInfileRequest(fileName: Buffer | string): Buffer {
  return new PayloadWriter().int1(localInfileHeader).bytes(Buffer.from(fileName)).finish();
}
