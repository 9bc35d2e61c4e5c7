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
  return new MessageWriter().byte(kind).bytes(name).byte(0).finish(FrontendCode.Describe);
}
