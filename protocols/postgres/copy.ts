import { FrontendCode } from "./codes";
import { MessageWriter } from "./wire";

/** The client's side of COPY FROM STDIN: data, then CopyDone to finish or CopyFail to abort. */
export function encodeCopyData(data: Buffer | string): Buffer {
  return new MessageWriter().bytes(Buffer.from(data)).finish(FrontendCode.CopyData);
}

export function encodeCopyDone(): Buffer {
  return new MessageWriter().finish(FrontendCode.CopyDone);
}

export function encodeCopyFail(reason: string): Buffer {
  return new MessageWriter().cstring(reason).finish(FrontendCode.CopyFail);
}
