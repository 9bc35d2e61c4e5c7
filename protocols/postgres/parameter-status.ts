import { BackendCode } from "./codes";
import { BodyReader, MessageWriter } from "./wire";

export function decodeParameterStatus(body: Buffer): { name: string; value: string } {
  const reader = new BodyReader(body);
  return { name: reader.cstring(), value: reader.cstring() };
}

export function encodeParameterStatus(name: string, value: string): Buffer {
  return new MessageWriter().cstring(name).cstring(value).finish(BackendCode.ParameterStatus);
}
