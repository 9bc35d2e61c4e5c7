import { FrontendCode, type TargetKind } from "./codes";
import { BodyReader, cstringEnd, MessageWriter, ProtocolError } from "./wire";

export interface Describe {
  kind: TargetKind;
  name: string;
}

export function decodeDescribe(body: Buffer): Describe {
  const reader = new BodyReader(body);
  return { kind: reader.byte() as TargetKind, name: reader.cstring() };
}

/**
 * The Describe whose body is bytes[bodyStart, end): its kind and where its name ends. The name,
 * bytes[bodyStart + 1, nameEnd), is compared as sent, never decoded (two names must not read alike).
 */
export function locateDescribe(bytes: Buffer, bodyStart: number, end: number): { kind: TargetKind; nameEnd: number } {
  if (bodyStart >= end) throw new ProtocolError("message too short for its byte");
  return { kind: bytes[bodyStart] as TargetKind, nameEnd: cstringEnd(bytes, bodyStart + 1, end) };
}

export function encodeDescribe(message: Describe): Buffer {
  return new MessageWriter().byte(message.kind).cstring(message.name).finish(FrontendCode.Describe);
}

/** Describe with the name as the bytes the client sent (names are not re-encoded). */
export function encodeDescribeBytes(kind: TargetKind, name: Buffer): Buffer {
  // Written directly: the proxy sends one before every Execute.
  const out = Buffer.allocUnsafe(1 + 4 + 1 + name.length + 1);
  out[0] = FrontendCode.Describe;
  out.writeInt32BE(out.length - 1, 1);
  out[5] = kind;
  name.copy(out, 6);
  out[out.length - 1] = 0;
  return out;
}
