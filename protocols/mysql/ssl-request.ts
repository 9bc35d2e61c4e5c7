import { Capability, hasCapability } from "./capabilities";
import { ProtocolError } from "./protocol-error";
import { PayloadReader, PayloadWriter } from "./wire";

/**
 * Protocol::SSLRequest: the first 32 bytes a HandshakeResponse41 would have, sent alone with
 * CLIENT_SSL set; the TLS handshake follows and the real response comes over TLS.
 */
export interface SslRequest {
  capabilities: number;
  maxPacketSize: number;
  characterSet: number;
  /** MariaDB's extended capabilities (the last 4 filler bytes when CLIENT_MYSQL is clear). */
  mariaDbCapabilities: number;
}

export const sslRequestLength = 32;

/** Whether a client's first payload is an SSLRequest rather than a HandshakeResponse41. */
export function isSslRequest(payload: Buffer): boolean {
  return payload.length === sslRequestLength && hasCapability(payload.readUInt32LE(0), Capability.Ssl);
}

export function decodeSslRequest(payload: Buffer): SslRequest {
  if (!isSslRequest(payload)) throw new ProtocolError("not an SSLRequest: 32 bytes with CLIENT_SSL set");
  const reader = new PayloadReader(payload);
  const capabilities = reader.int4();
  const maxPacketSize = reader.int4();
  const characterSet = reader.int1();
  reader.skip(19);
  const extended = reader.int4();
  return { capabilities, maxPacketSize, characterSet, mariaDbCapabilities: hasCapability(capabilities, Capability.LongPassword) ? 0 : extended };
}

export function encodeSslRequest(request: SslRequest): Buffer {
  const writer = new PayloadWriter()
    .int4((request.capabilities | Capability.Ssl) >>> 0)
    .int4(request.maxPacketSize)
    .int1(request.characterSet)
    .zeros(19);
  return writer.int4(hasCapability(request.capabilities, Capability.LongPassword) ? 0 : request.mariaDbCapabilities).finish();
}
