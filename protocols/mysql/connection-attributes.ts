import { PayloadReader, PayloadWriter } from "./wire";

/**
 * Connection attributes (CLIENT_CONNECT_ATTRS): a length-encoded total, then length-encoded
 * key and value strings. Shared by HandshakeResponse41 and COM_CHANGE_USER.
 */
export function readConnectionAttributes(reader: PayloadReader): Map<string, string> {
  const block = new PayloadReader(reader.lengthEncodedBytes());
  const attributes = new Map<string, string>();
  while (!block.atEnd) attributes.set(block.lengthEncodedString(), block.lengthEncodedString());
  return attributes;
}

export function writeConnectionAttributes(writer: PayloadWriter, attributes: ReadonlyMap<string, string>): void {
  const block = new PayloadWriter();
  for (const [key, value] of attributes) block.lengthEncodedString(key).lengthEncodedString(value);
  writer.lengthEncodedBytes(block.finish());
}
