import { Capability, hasCapability } from "./capabilities";
import { ProtocolError } from "./protocol-error";
import { ServerStatus } from "./status-flags";
import { PayloadReader, PayloadWriter } from "./wire";

/**
 * The OK packet's header: 0x00, or 0xfe where it ends a resultset in place of the EOF packet
 * (CLIENT_DEPRECATE_EOF).
 */
export const OkHeader = {
  Ok: 0x00,
  EndOfResultset: 0xfe,
} as const;

/** Protocol::OK_Packet. */
export interface OkPacket {
  header: number;
  affectedRows: number | bigint;
  lastInsertId: number | bigint;
  statusFlags: number;
  warnings: number;
  /** Human-readable status ("Rows matched: 1  Changed: 1  Warnings: 0"); often empty. */
  info: string;
  /** The raw session-state-change block (see session-state.ts), present when the status says so under CLIENT_SESSION_TRACK. */
  sessionStateChanges?: Buffer;
}

export function isOkPacket(payload: Buffer): boolean {
  return payload.length >= 7 && payload[0] === OkHeader.Ok;
}

export function decodeOkPacket(payload: Buffer, capabilities: number): OkPacket {
  const reader = new PayloadReader(payload);
  const header = reader.int1();
  if (header !== OkHeader.Ok && header !== OkHeader.EndOfResultset) throw new ProtocolError(`0x${header.toString(16)} does not start an OK packet`);
  const affectedRows = reader.lengthEncoded();
  const lastInsertId = reader.lengthEncoded();
  let statusFlags = 0;
  let warnings = 0;
  if (hasCapability(capabilities, Capability.Protocol41)) {
    statusFlags = reader.int2();
    warnings = reader.int2();
  } else if (hasCapability(capabilities, Capability.Transactions)) {
    statusFlags = reader.int2();
  }
  const ok: OkPacket = { header, affectedRows, lastInsertId, statusFlags, warnings, info: "" };
  if (hasCapability(capabilities, Capability.SessionTrack)) {
    // The server leaves the info out altogether when it is empty and no state changed.
    if (!reader.atEnd) ok.info = reader.lengthEncodedString();
    if (statusFlags & ServerStatus.SessionStateChanged) ok.sessionStateChanges = Buffer.from(reader.lengthEncodedBytes());
  } else {
    ok.info = reader.rest().toString("utf8");
  }
  reader.expectEnd("OK packet");
  return ok;
}

export function encodeOkPacket(ok: OkPacket, capabilities: number): Buffer {
  const writer = new PayloadWriter().int1(ok.header).lengthEncoded(ok.affectedRows).lengthEncoded(ok.lastInsertId);
  if (hasCapability(capabilities, Capability.Protocol41)) writer.int2(ok.statusFlags).int2(ok.warnings);
  else if (hasCapability(capabilities, Capability.Transactions)) writer.int2(ok.statusFlags);
  if (hasCapability(capabilities, Capability.SessionTrack)) {
    const stateChanged = (ok.statusFlags & ServerStatus.SessionStateChanged) !== 0;
    if (stateChanged !== (ok.sessionStateChanges !== undefined))
      throw new ProtocolError("session-state changes go with the SESSION_STATE_CHANGED status flag, and only with it");
    if (ok.info !== "" || stateChanged) writer.lengthEncodedString(ok.info);
    if (ok.sessionStateChanges) writer.lengthEncodedBytes(ok.sessionStateChanges);
  } else {
    writer.bytes(Buffer.from(ok.info, "utf8"));
  }
  return writer.finish();
}
