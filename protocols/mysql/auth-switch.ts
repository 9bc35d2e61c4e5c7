import { ProtocolError } from "./protocol-error";
import { PayloadReader, PayloadWriter } from "./wire";

/** The header byte of an AuthSwitchRequest: the server asks the client to use another plugin. */
export const authSwitchRequestHeader = 0xfe;

/**
 * Protocol::AuthSwitchRequest. A bare 0xfe (Protocol::OldAuthSwitchRequest) asks for the
 * pre-4.1 password hash; that is `plugin` "mysql_old_password" with no data.
 */
export interface AuthSwitchRequest {
  pluginName: string;
  /** The new scramble. Servers end it with a NUL for mysql_native_password; kept as sent. */
  pluginData: Buffer;
}

export function decodeAuthSwitchRequest(payload: Buffer): AuthSwitchRequest {
  const reader = new PayloadReader(payload);
  if (reader.int1() !== authSwitchRequestHeader) throw new ProtocolError("an AuthSwitchRequest starts with 0xfe");
  if (reader.atEnd) return { pluginName: "mysql_old_password", pluginData: Buffer.alloc(0) };
  const pluginName = reader.nulTerminatedString();
  return { pluginName, pluginData: Buffer.from(reader.rest()) };
}

export function encodeAuthSwitchRequest(request: AuthSwitchRequest): Buffer {
  return new PayloadWriter().int1(authSwitchRequestHeader).nulTerminatedString(request.pluginName).bytes(request.pluginData).finish();
}

/** The scramble of an auth switch without the NUL servers append to it. */
export function scrambleOf(pluginData: Buffer): Buffer {
  return pluginData.length > 0 && pluginData[pluginData.length - 1] === 0 ? pluginData.subarray(0, pluginData.length - 1) : pluginData;
}

/** Protocol::AuthSwitchResponse (and every later client auth packet): the plugin's bytes, nothing else. */
export function decodeAuthSwitchResponse(payload: Buffer): Buffer {
  return payload;
}

export function encodeAuthSwitchResponse(data: Buffer): Buffer {
  return data;
}
