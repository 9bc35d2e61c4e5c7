import { FrontendCode } from "./codes";
import { BodyReader, MessageWriter, ProtocolError } from "./wire";

/** PasswordMessage: the password (cleartext or md5 digest) as a C string. */
export function decodePasswordMessage(body: Buffer): string {
  const reader = new BodyReader(body);
  const password = reader.cstring();
  if (reader.remaining !== 0) throw new ProtocolError("PasswordMessage has bytes after the password");
  return password;
}

export function encodePasswordMessage(password: string): Buffer {
  return new MessageWriter().cstring(password).finish(FrontendCode.Password);
}

/** SASLInitialResponse: mechanism, then the client's first message with its length. */
export function encodeSaslInitialResponse(mechanism: string, data: Buffer): Buffer {
  return new MessageWriter().cstring(mechanism).int32(data.length).bytes(data).finish(FrontendCode.Password);
}

/** SASLResponse: the mechanism's next message, raw. */
export function encodeSaslResponse(data: Buffer): Buffer {
  return new MessageWriter().bytes(data).finish(FrontendCode.Password);
}
