import { Capability, hasCapability } from "./capabilities";
import { decodeEofPacket, eofHeader } from "./eof-packet";
import { decodeOkPacket } from "./ok-packet";
import { maxPacketPayload } from "./packets";

/**
 * What ends a resultset's rows (or its column definitions, without CLIENT_DEPRECATE_EOF): an
 * EOF packet, or under CLIENT_DEPRECATE_EOF an OK packet with the 0xfe header. Either way the
 * status flags say whether more results follow (SERVER_MORE_RESULTS_EXISTS) or a cursor stays open.
 */
export interface ResultsetEnd {
  warnings: number;
  statusFlags: number;
  /** Set when the end was an OK packet (CLIENT_DEPRECATE_EOF). */
  info?: string;
  affectedRows?: number | bigint;
  lastInsertId?: number | bigint;
  sessionStateChanges?: Buffer;
}

/**
 * Whether a payload among rows ends them: 0xfe and, under CLIENT_DEPRECATE_EOF, shorter than a
 * whole packet (a row starting with an 8-byte length is at least 16 MiB), else shorter than 9 bytes.
 */
export function isResultsetEnd(payload: Buffer, capabilities: number): boolean {
  if (payload.length === 0 || payload[0] !== eofHeader) return false;
  return hasCapability(capabilities, Capability.DeprecateEof) ? payload.length < maxPacketPayload : payload.length < 9;
}

export function decodeResultsetEnd(payload: Buffer, capabilities: number): ResultsetEnd {
  if (hasCapability(capabilities, Capability.DeprecateEof)) {
    const ok = decodeOkPacket(payload, capabilities);
    const end: ResultsetEnd = {
      warnings: ok.warnings,
      statusFlags: ok.statusFlags,
      info: ok.info,
      affectedRows: ok.affectedRows,
      lastInsertId: ok.lastInsertId,
    };
    if (ok.sessionStateChanges) end.sessionStateChanges = ok.sessionStateChanges;
    return end;
  }
  return decodeEofPacket(payload, capabilities);
}
