import { lengthEncodedIntegerSize, readLengthEncodedInteger, writeLengthEncodedInteger } from "./length-encoded";
import { ProtocolError } from "./protocol-error";

/**
 * A cursor over one payload (a whole logical packet, without its 4-byte header). Integers are
 * little-endian, as everywhere in the MySQL protocol; every read checks bounds, so a short
 * payload fails with a ProtocolError rather than a RangeError.
 */
export class PayloadReader {
  private offset: number;

  constructor(
    private readonly source: Buffer,
    start = 0,
    private readonly end = source.length,
  ) {
    if (start < 0 || end > source.length || start > end) throw new ProtocolError("payload bounds are outside the buffer");
    this.offset = start;
  }

  get position(): number {
    return this.offset;
  }

  get remaining(): number {
    return this.end - this.offset;
  }

  /** The buffer read from and the end of the payload in it, for decoders that locate values by offset. */
  get buffer(): Buffer {
    return this.source;
  }

  get limit(): number {
    return this.end;
  }

  /** Continues at `offset` (after values located directly in `buffer`). */
  moveTo(offset: number): void {
    if (offset < this.offset || offset > this.end) throw new ProtocolError("cannot move outside the unread payload");
    this.offset = offset;
  }

  get atEnd(): boolean {
    return this.offset >= this.end;
  }

  private need(count: number, what: string): void {
    if (count < 0 || this.offset + count > this.end) throw new ProtocolError(`packet too short for its ${what}`);
  }

  int1(): number {
    this.need(1, "int<1>");
    return this.source[this.offset++]!;
  }

  /** The next byte without consuming it. */
  peek(): number {
    this.need(1, "int<1>");
    return this.source[this.offset]!;
  }

  int2(): number {
    this.need(2, "int<2>");
    const value = this.source.readUInt16LE(this.offset);
    this.offset += 2;
    return value;
  }

  int3(): number {
    this.need(3, "int<3>");
    const value = this.source.readUIntLE(this.offset, 3);
    this.offset += 3;
    return value;
  }

  int4(): number {
    this.need(4, "int<4>");
    const value = this.source.readUInt32LE(this.offset);
    this.offset += 4;
    return value;
  }

  int8(): bigint {
    this.need(8, "int<8>");
    const value = this.source.readBigUInt64LE(this.offset);
    this.offset += 8;
    return value;
  }

  /** A length-encoded integer; as a bigint only when it does not fit a double exactly. */
  lengthEncoded(): number | bigint {
    const read = readLengthEncodedInteger(this.source, this.offset, this.end);
    this.offset = read.next;
    return read.value;
  }

  /** A length-encoded integer that must fit a number (a count or a length). */
  lengthEncodedNumber(what: string): number {
    const value = this.lengthEncoded();
    if (typeof value === "bigint") throw new ProtocolError(`${what} ${value} is too large`);
    return value;
  }

  /** A length-encoded string's bytes, without copying. */
  lengthEncodedBytes(): Buffer {
    return this.bytes(this.lengthEncodedNumber("string length"));
  }

  lengthEncodedString(): string {
    return this.lengthEncodedBytes().toString("utf8");
  }

  /** A NUL-terminated string's bytes (without the NUL). */
  nulTerminatedBytes(): Buffer {
    const nul = this.source.indexOf(0, this.offset);
    if (nul === -1 || nul >= this.end) throw new ProtocolError("unterminated string in packet");
    const value = this.source.subarray(this.offset, nul);
    this.offset = nul + 1;
    return value;
  }

  nulTerminatedString(): string {
    return this.nulTerminatedBytes().toString("utf8");
  }

  /** The next `count` bytes, without copying. */
  bytes(count: number): Buffer {
    this.need(count, "bytes");
    const value = this.source.subarray(this.offset, this.offset + count);
    this.offset += count;
    return value;
  }

  skip(count: number): void {
    this.need(count, "filler");
    this.offset += count;
  }

  /** Everything up to the end of the payload (a string<EOF>), without copying. */
  rest(): Buffer {
    const value = this.source.subarray(this.offset, this.end);
    this.offset = this.end;
    return value;
  }

  /** Throws unless every byte was read: trailing bytes mean the packet was not what it seemed. */
  expectEnd(what: string): void {
    if (this.offset !== this.end) throw new ProtocolError(`${what} has ${this.end - this.offset} bytes after its last field`);
  }
}

/** Builds one payload (the 4-byte packet header is added by the framing, see packets.ts). */
export class PayloadWriter {
  private readonly parts: Buffer[] = [];
  private size = 0;

  get length(): number {
    return this.size;
  }

  private push(part: Buffer): this {
    this.parts.push(part);
    this.size += part.length;
    return this;
  }

  /** Throws unless `value` is an integer in [min, max]: a field that would silently wrap is a bug, not a packet. */
  private check(value: number, min: number, max: number, what: string): number {
    if (!Number.isInteger(value) || value < min || value > max) throw new ProtocolError(`${value} does not fit ${what}`);
    return value;
  }

  int1(value: number): this {
    return this.push(Buffer.from([this.check(value, 0, 0xff, "int<1>")]));
  }

  int2(value: number): this {
    const part = Buffer.allocUnsafe(2);
    part.writeUInt16LE(this.check(value, 0, 0xffff, "int<2>"));
    return this.push(part);
  }

  int3(value: number): this {
    const part = Buffer.allocUnsafe(3);
    part.writeUIntLE(this.check(value, 0, 0xffffff, "int<3>"), 0, 3);
    return this.push(part);
  }

  /** Negative values are taken as their 32 bits: capability flags built with `|` come out signed. */
  int4(value: number): this {
    const part = Buffer.allocUnsafe(4);
    part.writeUInt32LE(this.check(value, -0x80000000, 0xffffffff, "int<4>") >>> 0);
    return this.push(part);
  }

  int8(value: bigint): this {
    const part = Buffer.allocUnsafe(8);
    part.writeBigUInt64LE(BigInt.asUintN(64, value));
    return this.push(part);
  }

  lengthEncoded(value: number | bigint): this {
    const part = Buffer.allocUnsafe(lengthEncodedIntegerSize(value));
    writeLengthEncodedInteger(part, 0, value);
    return this.push(part);
  }

  lengthEncodedBytes(value: Buffer): this {
    return this.lengthEncoded(value.length).push(value);
  }

  lengthEncodedString(value: string): this {
    return this.lengthEncodedBytes(Buffer.from(value, "utf8"));
  }

  nulTerminatedString(value: string | Buffer): this {
    const bytes = typeof value === "string" ? Buffer.from(value, "utf8") : value;
    if (bytes.includes(0)) throw new ProtocolError("a NUL-terminated string cannot hold a NUL byte");
    return this.push(bytes).int1(0);
  }

  bytes(value: Buffer): this {
    return this.push(value);
  }

  zeros(count: number): this {
    return this.push(Buffer.alloc(count));
  }

  finish(): Buffer {
    return this.parts.length === 1 ? this.parts[0]! : Buffer.concat(this.parts, this.size);
  }
}
