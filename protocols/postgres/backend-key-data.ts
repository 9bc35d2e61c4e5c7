import { BackendCode } from "./codes";
import { BodyReader, MessageWriter } from "./wire";

export interface BackendKeyData {
  processId: number;
  secretKey: number;
}

export function decodeBackendKeyData(body: Buffer): BackendKeyData {
  const reader = new BodyReader(body);
  return { processId: reader.int32(), secretKey: reader.int32() };
}

export function encodeBackendKeyData(keys: BackendKeyData): Buffer {
  return new MessageWriter().int32(keys.processId).int32(keys.secretKey).finish(BackendCode.BackendKeyData);
}
