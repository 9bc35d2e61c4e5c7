import { FrontendCode } from "./codes";
import { MessageWriter } from "./wire";

export function encodeSync(): Buffer {
  return new MessageWriter().finish(FrontendCode.Sync);
}

export function encodeTerminate(): Buffer {
  return new MessageWriter().finish(FrontendCode.Terminate);
}

export function encodeFlush(): Buffer {
  return new MessageWriter().finish(FrontendCode.Flush);
}
