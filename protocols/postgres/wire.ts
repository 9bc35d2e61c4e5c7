/** A malformed or oversized message: the connection it came on cannot be trusted any more. */
export class ProtocolError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "ProtocolError";
  }
}

/** A cursor over a message body; every read checks bounds, so a short body fails cleanly. */
export class BodyReader {
  private offset: number;

  constructor(
    private readonly bytes: Buffer,
    start = 0,
    private readonly end = bytes.length,
  ) {
    this.offset = start;
  }

  get position(): number {
    return this.offset;
  }

  get remaining(): number {
    return this.end - this.offset;
  }

  private need(count: number, what: string): void {
    if (count < 0 || this.offset + count > this.end) throw new ProtocolError(`message too short for its ${what}`);
  }

  int16(): number {
    this.need(2, "int16");
    const value = this.bytes.readInt16BE(this.offset);
    this.offset += 2;
    return value;
  }

  int32(): number {
    this.need(4, "int32");
    const value = this.bytes.readInt32BE(this.offset);
    this.offset += 4;
    return value;
  }

  byte(): number {
    this.need(1, "byte");
    return this.bytes[this.offset++]!;
  }

  /** A NUL-terminated string. */
  cstring(): string {
    const nul = this.bytes.indexOf(0, this.offset);
    if (nul === -1 || nul >= this.end) throw new ProtocolError("unterminated string in message");
    const value = this.bytes.toString("utf8", this.offset, nul);
    this.offset = nul + 1;
    return value;
  }

  /** The next `count` bytes, without copying. */
  slice(count: number): Buffer {
    this.need(count, "bytes");
    const value = this.bytes.subarray(this.offset, this.offset + count);
    this.offset += count;
    return value;
  }
}

/** Where the NUL-terminated string at `start` ends (the offset of its NUL, before `end`): a name located, not decoded. */
export function cstringEnd(bytes: Buffer, start: number, end: number): number {
  const nul = bytes.indexOf(0, start);
  if (nul === -1 || nul >= end) throw new ProtocolError("unterminated string in message");
  return nul;
}

/** Whether a[aStart, aEnd) and b[bStart, bEnd) hold the same bytes (names and descriptions are short: a loop beats a native call). */
export function equalBytes(a: Buffer, aStart: number, aEnd: number, b: Buffer, bStart: number, bEnd: number): boolean {
  if (aEnd - aStart !== bEnd - bStart) return false;
  for (let i = aStart, j = bStart; i < aEnd; i++, j++) if (a[i] !== b[j]) return false;
  return true;
}

/** Builds one message: a code byte (none for startup packets), the length, the body. */
export class MessageWriter {
  private readonly parts: Buffer[] = [];
  private size = 0;

  private push(part: Buffer): this {
    this.parts.push(part);
    this.size += part.length;
    return this;
  }

  int16(value: number): this {
    const part = Buffer.allocUnsafe(2);
    part.writeInt16BE(value);
    return this.push(part);
  }

  int32(value: number): this {
    const part = Buffer.allocUnsafe(4);
    part.writeInt32BE(value);
    return this.push(part);
  }

  byte(value: number): this {
    return this.push(Buffer.from([value]));
  }

  cstring(value: string): this {
    return this.push(Buffer.from(`${value}\0`, "utf8"));
  }

  bytes(value: Buffer): this {
    return this.push(value);
  }

  /** The finished message; `code` undefined for the untyped startup packets. */
  finish(code?: number): Buffer {
    const header = code === undefined ? 4 : 5;
    const out = Buffer.allocUnsafe(header + this.size);
    if (code !== undefined) out[0] = code;
    out.writeInt32BE(this.size + 4, header - 4);
    let offset = header;
    for (const part of this.parts) {
      part.copy(out, offset);
      offset += part.length;
    }
    return out;
  }
}
