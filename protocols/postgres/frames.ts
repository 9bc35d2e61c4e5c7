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
 * The whole typed messages (code, int32 length including itself, body) at the start of a
 * buffer, found by `split` into arrays that are reused from one buffer to the next: no object
 * per message (a chunk of a large result holds hundreds of rows). Message i is
 * bytes[start(i), end(i)), its body starts 5 bytes in.
 */
export class FrameList {
  count = 0;
  private codes = new Uint8Array(64);
  private starts = new Int32Array(64);
  private ends = new Int32Array(64);

  /**
   * Finds the whole messages of bytes[0, limit); returns the bytes they take (the rest is a
   * partial message to carry over). A length below 4 or above `maxLength` is a protocol error:
   * the stream cannot be resynchronised.
   */
  split(bytes: Buffer, maxLength: number, limit = bytes.length): number {
    let count = 0;
    let offset = 0;
    while (limit - offset >= 5) {
      const length = bytes.readInt32BE(offset + 1);
      if (length < 4) throw new ProtocolError(`message length ${length} is invalid`);
      if (length > maxLength) throw new ProtocolError(`message of ${length} bytes exceeds the limit of ${maxLength}`);
      const end = offset + 1 + length;
      if (end > limit) break;
      if (count === this.codes.length) this.grow();
      this.codes[count] = bytes[offset]!;
      this.starts[count] = offset;
      this.ends[count] = end;
      count++;
      offset = end;
    }
    this.count = count;
    return offset;
  }

  code(i: number): number {
    return this.codes[i]!;
  }

  start(i: number): number {
    return this.starts[i]!;
  }

  end(i: number): number {
    return this.ends[i]!;
  }

  /** Message i written into `into` (an object reused by the caller). */
  read(i: number, into: Frame): Frame {
    into.code = this.codes[i]!;
    into.start = this.starts[i]!;
    into.bodyStart = into.start + 5;
    into.end = this.ends[i]!;
    return into;
  }

  private grow(): void {
    const size = this.codes.length * 2;
    const codes = new Uint8Array(size);
    const starts = new Int32Array(size);
    const ends = new Int32Array(size);
    codes.set(this.codes);
    starts.set(this.starts);
    ends.set(this.ends);
    this.codes = codes;
    this.starts = starts;
    this.ends = ends;
  }
}

/** The whole typed messages of a buffer as objects (see FrameList; for callers that keep them). */
export function splitFrames(bytes: Buffer, maxLength: number): SplitResult {
  const list = new FrameList();
  const consumed = list.split(bytes, maxLength);
  const frames: Frame[] = [];
  for (let i = 0; i < list.count; i++) frames.push(list.read(i, { code: 0, start: 0, bodyStart: 0, end: 0 }));
  return { frames, consumed };
}

/** The length of an untyped startup packet at the head of `bytes`, once its 4 length bytes are there. */
export function startupPacketLength(bytes: Buffer, maxLength: number): number | undefined {
  if (bytes.length < 4) return undefined;
  const length = bytes.readInt32BE(0);
  if (length < 8 || length > maxLength) throw new ProtocolError(`startup packet length ${length} is invalid`);
  return length;
}
