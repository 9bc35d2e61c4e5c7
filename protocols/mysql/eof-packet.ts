import { Capability, hasCapability } from "./capabilities";
import { ProtocolError } from "./protocol-error";
import { PayloadReader, PayloadWriter } from "./wire";

export const eofHeader = 0xfe;

/** Protocol::EOF_Packet: ends column definitions and rows unless CLIENT_DEPRECATE_EOF was agreed. */
export interface EofPacket {
  warnings: number;
  statusFlags: number;
}

/**
 * Whether a payload is an EOF packet: 0xfe and shorter than 9 bytes (a text row whose first
 * value's length starts with 0xfe, an 8-byte length, is longer).
 */
export function isEofPacket(payload: Buffer): boolean {
  return payload.length > 0 && payload.length < 9 && payload[0] === eofHeader;
}

export function decodeEofPacket(payload: Buffer, capabilities: number): EofPacket {
  if (!isEofPacket(payload)) throw new ProtocolError("not an EOF packet");
  const reader = new PayloadReader(payload, 1);
  if (!hasCapability(capabilities, Capability.Protocol41)) return { warnings: 0, statusFlags: 0 };
  const eof = { warnings: reader.int2(), statusFlags: reader.int2() };
  reader.expectEnd("EOF packet");
  return eof;
}

export function encodeEofPacket(eof: EofPacket, capabilities: number): Buffer {
  const writer = new PayloadWriter().int1(eofHeader);
  if (hasCapability(capabilities, Capability.Protocol41)) writer.int2(eof.warnings).int2(eof.statusFlags);
  return writer.finish();
}
