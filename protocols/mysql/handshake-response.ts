import { Capability, hasCapability } from "./capabilities";
import { readConnectionAttributes, writeConnectionAttributes } from "./connection-attributes";
import { ProtocolError } from "./protocol-error";
import { PayloadReader, PayloadWriter } from "./wire";

/** Protocol::HandshakeResponse41: the client's answer to the handshake (after TLS, if it asked). */
export interface HandshakeResponse {
  capabilities: number;
  maxPacketSize: number;
  characterSet: number;
  /** MariaDB's extended capabilities; 0 when the client sets CLIENT_MYSQL. */
  mariaDbCapabilities: number;
  username: string;
  /** What the client's auth plugin computed from the scramble (empty for an empty password). */
  authResponse: Buffer;
  /** Present with CLIENT_CONNECT_WITH_DB. */
  database?: string;
  /** Present with CLIENT_PLUGIN_AUTH. */
  authPluginName?: string;
  /** Present with CLIENT_CONNECT_ATTRS. */
  attributes?: Map<string, string>;
  /** MySQL 8's zstd level, present with CLIENT_ZSTD_COMPRESSION_ALGORITHM. */
  zstdCompressionLevel?: number;
}

export function decodeHandshakeResponse(payload: Buffer): HandshakeResponse {
  const reader = new PayloadReader(payload);
  const capabilities = reader.int4();
  if (!hasCapability(capabilities, Capability.Protocol41)) throw new ProtocolError("a HandshakeResponse320 (no CLIENT_PROTOCOL_41) is not supported");
  const maxPacketSize = reader.int4();
  const characterSet = reader.int1();
  reader.skip(19);
  const extended = reader.int4();
  const username = reader.nulTerminatedString();
  let authResponse: Buffer;
  if (hasCapability(capabilities, Capability.PluginAuthLenencClientData)) authResponse = reader.lengthEncodedBytes();
  else if (hasCapability(capabilities, Capability.SecureConnection)) authResponse = reader.bytes(reader.int1());
  else authResponse = reader.nulTerminatedBytes();
  const response: HandshakeResponse = {
    capabilities,
    maxPacketSize,
    characterSet,
    mariaDbCapabilities: hasCapability(capabilities, Capability.LongPassword) ? 0 : extended,
    username,
    authResponse: Buffer.from(authResponse),
  };
  // Optional fields a client may leave out at the end even with their flag set (old libmysql did).
  if (hasCapability(capabilities, Capability.ConnectWithDb) && !reader.atEnd) response.database = reader.nulTerminatedString();
  if (hasCapability(capabilities, Capability.PluginAuth) && !reader.atEnd) response.authPluginName = reader.nulTerminatedString();
  if (hasCapability(capabilities, Capability.ConnectAttrs) && !reader.atEnd) response.attributes = readConnectionAttributes(reader);
  if (hasCapability(capabilities, Capability.ZstdCompressionAlgorithm) && !reader.atEnd) response.zstdCompressionLevel = reader.int1();
  return response;
}

export function encodeHandshakeResponse(response: HandshakeResponse): Buffer {
  const { capabilities } = response;
  const writer = new PayloadWriter()
    .int4(capabilities)
    .int4(response.maxPacketSize)
    .int1(response.characterSet)
    .zeros(19)
    .int4(hasCapability(capabilities, Capability.LongPassword) ? 0 : response.mariaDbCapabilities)
    .nulTerminatedString(response.username);
  if (hasCapability(capabilities, Capability.PluginAuthLenencClientData)) writer.lengthEncodedBytes(response.authResponse);
  else if (hasCapability(capabilities, Capability.SecureConnection)) {
    if (response.authResponse.length > 0xff) throw new ProtocolError("an auth response over 255 bytes needs CLIENT_PLUGIN_AUTH_LENENC_CLIENT_DATA");
    writer.int1(response.authResponse.length).bytes(response.authResponse);
  } else writer.nulTerminatedString(response.authResponse);
  // The optional fields are positional: each whose flag is set is written up to the last one
  // present (an absent one before it as its empty default), none after it, as a client that left them out.
  const optional = [
    { flag: Capability.ConnectWithDb, present: response.database !== undefined, write: () => writer.nulTerminatedString(response.database ?? "") },
    { flag: Capability.PluginAuth, present: response.authPluginName !== undefined, write: () => writer.nulTerminatedString(response.authPluginName ?? "") },
    {
      flag: Capability.ConnectAttrs,
      present: response.attributes !== undefined,
      write: () => writeConnectionAttributes(writer, response.attributes ?? new Map()),
    },
    {
      flag: Capability.ZstdCompressionAlgorithm,
      present: response.zstdCompressionLevel !== undefined,
      write: () => writer.int1(response.zstdCompressionLevel ?? 3),
    },
  ].filter((field) => hasCapability(capabilities, field.flag));
  const last = optional.map((field) => field.present).lastIndexOf(true);
  for (const field of optional.slice(0, last + 1)) field.write();
  return writer.finish();
}
