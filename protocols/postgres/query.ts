import { FrontendCode } from "./codes";
import { BodyReader, MessageWriter } from "./wire";

export function decodeQuery(body: Buffer): string {
  return new BodyReader(body).cstring();
}

export function encodeQuery(sql: string): Buffer {
  return new MessageWriter().cstring(sql).finish(FrontendCode.Query);
}
