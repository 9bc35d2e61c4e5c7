import type { Frame } from "../../../protocols/postgres/frames";

/** The body of the message `frame` (a slice, no copy). */
export function bodyOf(bytes: Buffer, frame: Frame): Buffer {
  return bytes.subarray(frame.bodyStart, frame.end);
}
