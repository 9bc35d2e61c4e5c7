import { BackendCode } from "./codes";
import { BodyReader, MessageWriter } from "./wire";

/** NegotiateProtocolVersion: the newest minor version the server speaks, and the protocol options it did not recognise. */
export function encodeNegotiateProtocolVersion(newestMinor: number, unrecognisedOptions: readonly string[]): Buffer {
  const writer = new MessageWriter().int32(newestMinor).int32(unrecognisedOptions.length);
  for (const option of unrecognisedOptions) writer.cstring(option);
  return writer.finish(BackendCode.NegotiateProtocolVersion);
}

export function decodeNegotiateProtocolVersion(body: Buffer): { newestMinor: number; unrecognisedOptions: string[] } {
  const reader = new BodyReader(body);
  const newestMinor = reader.int32();
  const count = reader.int32();
  const unrecognisedOptions: string[] = [];
  for (let i = 0; i < count; i++) unrecognisedOptions.push(reader.cstring());
  return { newestMinor, unrecognisedOptions };
}
