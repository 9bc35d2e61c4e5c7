import { BackendCode, type TransactionStatus } from "./codes";
import { MessageWriter, ProtocolError } from "./wire";

/** The status of the ReadyForQuery whose body is body[start, end) (the whole buffer by default). */
export function decodeReadyForQuery(body: Buffer, start = 0, end = body.length): TransactionStatus {
  if (end - start !== 1) throw new ProtocolError("ReadyForQuery must carry one status byte");
  return body[start] as TransactionStatus;
}

export function encodeReadyForQuery(status: TransactionStatus): Buffer {
  return new MessageWriter().byte(status).finish(BackendCode.ReadyForQuery);
}
