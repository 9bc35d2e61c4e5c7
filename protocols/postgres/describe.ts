import { FrontendCode, type TargetKind } from "./codes";
import { BodyReader, MessageWriter } from "./wire";

export interface Describe {
  kind: TargetKind;
  name: string;
}

export function decodeDescribe(body: Buffer): Describe {
  const reader = new BodyReader(body);
  return { kind: reader.byte() as TargetKind, name: reader.cstring() };
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
