import { Capability, hasCapability } from "./capabilities";
import { Command } from "./commands";
import { readConnectionAttributes, writeConnectionAttributes } from "./connection-attributes";
import { ProtocolError } from "./protocol-error";
import { PayloadReader, PayloadWriter } from "./wire";

/** COM_CHANGE_USER: re-authenticates the connection as another user (the answer is an auth exchange, as at connect). */
export interface ChangeUser {
  username: string;
  authResponse: Buffer;
  database: string;
  /** Present when the client sent it (after the database, with CLIENT_PROTOCOL_41). */
  characterSet?: number;
  authPluginName?: string;
  attributes?: Map<string, string>;
}

export function decodeChangeUser(payload: Buffer, capabilities: number): ChangeUser {
  const reader = new PayloadReader(payload);
  if (reader.int1() !== Command.ChangeUser) throw new ProtocolError("not a COM_CHANGE_USER");
  const username = reader.nulTerminatedString();
  const authResponse = Buffer.from(hasCapability(capabilities, Capability.SecureConnection) ? reader.bytes(reader.int1()) : reader.nulTerminatedBytes());
  const change: ChangeUser = { username, authResponse, database: reader.nulTerminatedString() };
  // The rest is optional: old clients stop after the database.
  if (!reader.atEnd) change.characterSet = reader.int2();
  if (hasCapability(capabilities, Capability.PluginAuth) && !reader.atEnd) change.authPluginName = reader.nulTerminatedString();
  if (hasCapability(capabilities, Capability.ConnectAttrs) && !reader.atEnd) change.attributes = readConnectionAttributes(reader);
  reader.expectEnd("COM_CHANGE_USER");
  return change;
}

export function encodeChangeUser(change: ChangeUser, capabilities: number): Buffer {
  const writer = new PayloadWriter().int1(Command.ChangeUser).nulTerminatedString(change.username);
  if (hasCapability(capabilities, Capability.SecureConnection)) {
    if (change.authResponse.length > 0xff) throw new ProtocolError("a COM_CHANGE_USER auth response is at most 255 bytes");
    writer.int1(change.authResponse.length).bytes(change.authResponse);
  } else writer.nulTerminatedString(change.authResponse);
  writer.nulTerminatedString(change.database);
  // The optional fields are positional: written up to the last one present (an absent one
  // before it as its default), none after it, as a client that left them out.
  const optional = [
    { needed: true, present: change.characterSet !== undefined, write: () => writer.int2(change.characterSet ?? 0) },
    {
      needed: hasCapability(capabilities, Capability.PluginAuth),
      present: change.authPluginName !== undefined,
      write: () => writer.nulTerminatedString(change.authPluginName ?? ""),
    },
    {
      needed: hasCapability(capabilities, Capability.ConnectAttrs),
      present: change.attributes !== undefined,
      write: () => writeConnectionAttributes(writer, change.attributes ?? new Map()),
    },
  ].filter((field) => field.needed);
  const last = optional.map((field) => field.present).lastIndexOf(true);
  for (const field of optional.slice(0, last + 1)) field.write();
  return writer.finish();
}
