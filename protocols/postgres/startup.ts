import { StartupCode } from "./codes";
import { BodyReader, MessageWriter, ProtocolError } from "./wire";

/** The first packet of a connection, by what it asks for. */
export type StartupPacket =
  | { kind: "startup"; major: number; minor: number; parameters: Map<string, string> }
  | { kind: "ssl" }
  | { kind: "gssenc" }
  | { kind: "cancel"; processId: number; secretKey: number };

/** Decodes a whole startup packet (length included). Unknown codes are kept as a protocol version. */
export function decodeStartup(packet: Buffer): StartupPacket {
  const reader = new BodyReader(packet, 4);
  const code = reader.int32();
  if (code === StartupCode.SSLRequest) return { kind: "ssl" };
  if (code === StartupCode.GSSENCRequest) return { kind: "gssenc" };
  if (code === StartupCode.CancelRequest) return { kind: "cancel", processId: reader.int32(), secretKey: reader.int32() };
  const parameters = new Map<string, string>();
  for (;;) {
    if (reader.remaining === 0) throw new ProtocolError("startup packet is not terminated");
    const name = reader.cstring();
    if (name === "") break;
    parameters.set(name, reader.cstring());
  }
  return { kind: "startup", major: code >>> 16, minor: code & 0xffff, parameters };
}

export function encodeStartup(parameters: ReadonlyMap<string, string>, major = 3, minor = 0): Buffer {
  const writer = new MessageWriter().int32((major << 16) | minor);
  for (const [name, value] of parameters) writer.cstring(name).cstring(value);
  return writer.byte(0).finish();
}

export function encodeSSLRequest(): Buffer {
  return new MessageWriter().int32(StartupCode.SSLRequest).finish();
}
