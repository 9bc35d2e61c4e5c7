import { isErrPacket } from "./err-packet";
import { isLocalInfileRequest } from "./local-infile";
import { isOkPacket } from "./ok-packet";

/**
 * What the first packet answering a command is: OK, ERR, a LOCAL INFILE request, or the column
 * count that starts a resultset. Anything else starting with 0x00 (shorter than an OK) is
 * malformed, and `decodeColumnCount` rejects it.
 */
export type ResponseKind = "ok" | "err" | "local-infile" | "resultset";

export function responseKind(payload: Buffer): ResponseKind {
  if (isOkPacket(payload)) return "ok";
  if (isErrPacket(payload)) return "err";
  if (isLocalInfileRequest(payload)) return "local-infile";
  return "resultset";
}
