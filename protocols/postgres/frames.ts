import { ProtocolError } from "./wire";

/** One typed message inside a buffer: its code and where its body lies (no copy). */
export interface Frame {
  code: number;
  /** Offset of the code byte; the whole message is bytes[start, end). */
  start: number;
  bodyStart: number;
  end: number;
}

export interface SplitResult {
  frames: Frame[];
  /** Bytes taken by whole messages; the rest is a partial message to carry over. */
  consumed: number;
}

/**
 * Splits a buffer into whole typed messages (code, int32 length including itself, body).
 * A length below 4 or above `maxLength` is a protocol error: the stream cannot be resynchronised.
 */
export function splitFrames(bytes: Buffer, maxLength: number): SplitResult {
  const frames: Frame[] = [];
  let offset = 0;
  while (bytes.length - offset >= 5) {
    const length = bytes.readInt32BE(offset + 1);
    if (length < 4) throw new ProtocolError(`message length ${length} is invalid`);
    if (length > maxLength) throw new ProtocolError(`message of ${length} bytes exceeds the limit of ${maxLength}`);
    const end = offset + 1 + length;
    if (end > bytes.length) break;
    frames.push({ code: bytes[offset]!, start: offset, bodyStart: offset + 5, end });
    offset = end;
  }
  return { frames, consumed: offset };
}

/** The length of an untyped startup packet at the head of `bytes`, once its 4 length bytes are there. */
export function startupPacketLength(bytes: Buffer, maxLength: number): number | undefined {
  if (bytes.length < 4) return undefined;
  const length = bytes.readInt32BE(0);
  if (length < 8 || length > maxLength) throw new ProtocolError(`startup packet length ${length} is invalid`);
  return length;
}
