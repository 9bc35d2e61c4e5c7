import { StartupCode } from "./codes";
import { MessageWriter } from "./wire";

/** CancelRequest: asks the server to cancel the query running for (processId, secretKey). Decoded by `decodeStartup`. */
export function encodeCancelRequest(processId: number, secretKey: number): Buffer {
  return new MessageWriter().int32(StartupCode.CancelRequest).int32(processId).int32(secretKey).finish();
}
