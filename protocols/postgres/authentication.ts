import { BackendCode } from "./codes";
import { BodyReader, MessageWriter, ProtocolError } from "./wire";

/** The int32 that follows 'R': which authentication step the server asks for. */
export const enum AuthenticationCode {
  Ok = 0,
  CleartextPassword = 3,
  MD5Password = 5,
  SASL = 10,
  SASLContinue = 11,
  SASLFinal = 12,
}

export type AuthenticationRequest =
  | { kind: "ok" }
  | { kind: "cleartext" }
  | { kind: "md5"; salt: Buffer }
  | { kind: "sasl"; mechanisms: string[] }
  | { kind: "sasl-continue"; data: Buffer }
  | { kind: "sasl-final"; data: Buffer }
  /** Kerberos, GSS, SSPI and anything newer: not something the proxy can answer. */
  | { kind: "other"; code: number };

export function decodeAuthentication(body: Buffer): AuthenticationRequest {
  const reader = new BodyReader(body);
  const code = reader.int32();
  switch (code) {
    case AuthenticationCode.Ok:
      return { kind: "ok" };
    case AuthenticationCode.CleartextPassword:
      return { kind: "cleartext" };
    case AuthenticationCode.MD5Password:
      return { kind: "md5", salt: Buffer.from(reader.slice(4)) };
    case AuthenticationCode.SASL: {
      const mechanisms: string[] = [];
      for (let name = reader.cstring(); name !== ""; name = reader.cstring()) mechanisms.push(name);
      return { kind: "sasl", mechanisms };
    }
    case AuthenticationCode.SASLContinue:
      return { kind: "sasl-continue", data: Buffer.from(reader.slice(reader.remaining)) };
    case AuthenticationCode.SASLFinal:
      return { kind: "sasl-final", data: Buffer.from(reader.slice(reader.remaining)) };
    default:
      if (code < 0) throw new ProtocolError(`authentication code ${code} is not valid`);
      return { kind: "other", code };
  }
}

export function encodeAuthenticationOk(): Buffer {
  return new MessageWriter().int32(AuthenticationCode.Ok).finish(BackendCode.Authentication);
}

export function encodeAuthenticationCleartextPassword(): Buffer {
  return new MessageWriter().int32(AuthenticationCode.CleartextPassword).finish(BackendCode.Authentication);
}
