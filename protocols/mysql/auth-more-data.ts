import { ProtocolError } from "./protocol-error";
import { PayloadWriter } from "./wire";

/** The header byte of Protocol::AuthMoreData: more bytes of the current auth plugin's exchange. */
export const authMoreDataHeader = 0x01;

export function decodeAuthMoreData(payload: Buffer): Buffer {
  if (payload.length === 0 || payload[0] !== authMoreDataHeader) throw new ProtocolError("AuthMoreData starts with 0x01");
  return payload.subarray(1);
}

export function encodeAuthMoreData(data: Buffer): Buffer {
  return new PayloadWriter().int1(authMoreDataHeader).bytes(data).finish();
}
