import { BackendCode, type TransactionStatus } from "./codes";
import { MessageWriter, ProtocolError } from "./wire";

export function decodeReadyForQuery(body: Buffer): TransactionStatus {
  if (body.length !== 1) throw new ProtocolError("ReadyForQuery must carry one status byte");
  return body[0] as TransactionStatus;
}

export function encodeReadyForQuery(status: TransactionStatus): Buffer {
  return new MessageWriter().byte(status).finish(BackendCode.ReadyForQuery);
}
