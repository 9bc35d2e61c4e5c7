import { Capability, hasCapability } from "./capabilities";
import { ProtocolError } from "./protocol-error";
import { PayloadReader, PayloadWriter } from "./wire";

/** The server's first packet: Protocol::HandshakeV10 (MySQL) / Initial handshake packet (MariaDB). */
export interface Handshake {
  protocolVersion: number;
  /** MariaDB prefixes its version with "5.5.5-" for old replication clients. */
  serverVersion: string;
  connectionId: number;
  /** The whole scramble (parts 1 and 2, without the NUL that ends part 2): 20 bytes for the usual plugins. */
  authPluginData: Buffer;
  /** The 32 standard capability bits. */
  capabilities: number;
  /** MariaDB's extended capabilities; 0 from MySQL (which sets CLIENT_MYSQL, alias LongPassword). */
  mariaDbCapabilities: number;
  characterSet: number;
  statusFlags: number;
  /** Empty when the server lacks CLIENT_PLUGIN_AUTH. */
  authPluginName: string;
}

const handshakeV10 = 10;

export function decodeHandshake(payload: Buffer): Handshake {
  const reader = new PayloadReader(payload);
  const protocolVersion = reader.int1();
  if (protocolVersion !== handshakeV10) throw new ProtocolError(`handshake protocol version ${protocolVersion} is not 10`);
  const serverVersion = reader.nulTerminatedString();
  const connectionId = reader.int4();
  const part1 = reader.bytes(8);
  reader.skip(1);
  let capabilities = reader.int2();
  // A 4.1-era server may stop here; nothing this proxy talks to does, but the format allows it.
  if (reader.atEnd) {
    return {
      protocolVersion,
      serverVersion,
      connectionId,
      authPluginData: Buffer.from(part1),
      capabilities,
      mariaDbCapabilities: 0,
      characterSet: 0,
      statusFlags: 0,
      authPluginName: "",
    };
  }
  const characterSet = reader.int1();
  const statusFlags = reader.int2();
  capabilities = (capabilities | (reader.int2() << 16)) >>> 0;
  const authPluginDataLength = reader.int1();
  reader.skip(6);
  const mariaDbCapabilities = hasCapability(capabilities, Capability.LongPassword) ? (reader.skip(4), 0) : reader.int4();
  let authPluginData = Buffer.from(part1);
  if (hasCapability(capabilities, Capability.SecureConnection)) {
    // Part 2 is max(13, length - 8) bytes, the last of them a NUL that is not part of the scramble.
    const part2Length = Math.max(13, authPluginDataLength - 8);
    const part2 = reader.bytes(part2Length);
    authPluginData = Buffer.concat([part1, part2[part2Length - 1] === 0 ? part2.subarray(0, part2Length - 1) : part2]);
  }
  let authPluginName = "";
  if (hasCapability(capabilities, Capability.PluginAuth)) {
    // Some MySQL 5.5 servers leave out the final NUL: the name then runs to the end.
    const rest = reader.rest();
    const nul = rest.indexOf(0);
    authPluginName = rest.toString("utf8", 0, nul === -1 ? rest.length : nul);
  }
  return { protocolVersion, serverVersion, connectionId, authPluginData, capabilities, mariaDbCapabilities, characterSet, statusFlags, authPluginName };
}

export function encodeHandshake(handshake: Handshake): Buffer {
  const { authPluginData: data, capabilities } = handshake;
  if (data.length < 8) throw new ProtocolError("the scramble needs at least 8 bytes");
  const writer = new PayloadWriter()
    .int1(handshakeV10)
    .nulTerminatedString(handshake.serverVersion)
    .int4(handshake.connectionId)
    .bytes(data.subarray(0, 8))
    .int1(0)
    .int2(capabilities & 0xffff)
    .int1(handshake.characterSet)
    .int2(handshake.statusFlags)
    .int2(capabilities >>> 16)
    // The length counts the NUL that ends part 2.
    .int1(hasCapability(capabilities, Capability.PluginAuth) ? data.length + 1 : 0)
    .zeros(6);
  if (hasCapability(capabilities, Capability.LongPassword)) writer.zeros(4);
  else writer.int4(handshake.mariaDbCapabilities);
  if (hasCapability(capabilities, Capability.SecureConnection)) {
    const part2 = data.subarray(8);
    // At least 12 bytes of part 2 and its NUL, as servers send and clients read.
    writer.bytes(part2).zeros(Math.max(13 - part2.length, 1));
  }
  if (hasCapability(capabilities, Capability.PluginAuth)) writer.nulTerminatedString(handshake.authPluginName);
  return writer.finish();
}
