import { binaryValueForm } from "./binary-value-length";
import { encodeLengthEncodedBytes } from "./length-encoded";
import { ProtocolError } from "./protocol-error";

/** A value's content (as binaryValueExtent locates it) framed for a binary row or COM_STMT_EXECUTE. */
export function encodeBinaryValue(type: number, content: Buffer): Buffer {
  const form = binaryValueForm(type);
  if (!form) throw new ProtocolError(`type 0x${type.toString(16)} has no binary protocol encoding`);
  if (form.form === "fixed") {
    if (content.length !== form.width) throw new ProtocolError(`a value of type 0x${type.toString(16)} is ${form.width} bytes, not ${content.length}`);
    return content;
  }
  if (form.form === "length-byte") {
    if (!form.allowed!.has(content.length)) throw new ProtocolError(`a value of type 0x${type.toString(16)} cannot be ${content.length} bytes`);
    return Buffer.concat([Buffer.from([content.length]), content]);
  }
  return encodeLengthEncodedBytes(content);
}
