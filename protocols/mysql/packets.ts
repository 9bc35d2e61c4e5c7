import { ProtocolError } from "./protocol-error";

/**
 * MySQL packet framing: every payload travels in packets of a 3-byte little-endian length and a
 * 1-byte sequence id. A payload of 0xffffff bytes or more is split: each packet of exactly
 * 0xffffff bytes says "more follows", and the last is shorter (empty when the payload is a
 * multiple of 0xffffff). Sequence ids count up by one per packet, wrapping at 256.
 */
export const maxPacketPayload = 0xffffff;

export const packetHeaderLength = 4;

/** Packets a payload of `length` bytes takes (one more than the full ones: the short last). */
export function packetsForPayload(length: number): number {
  return Math.floor(length / maxPacketPayload) + 1;
}

/** The sequence id after a payload of `length` bytes sent from `sequenceId`. */
export function nextSequenceId(sequenceId: number, length: number): number {
  return (sequenceId + packetsForPayload(length)) & 0xff;
}

/** `payload` framed as packets, the first with sequence id `sequenceId`. */
export function encodePacket(payload: Buffer, sequenceId: number): Buffer {
  const packets = packetsForPayload(payload.length);
  const out = Buffer.allocUnsafe(payload.length + packets * packetHeaderLength);
  let at = 0;
  for (let i = 0; i < packets; i++) {
    const from = i * maxPacketPayload;
    const length = Math.min(maxPacketPayload, payload.length - from);
    out.writeUIntLE(length, at, 3);
    out[at + 3] = (sequenceId + i) & 0xff;
    at += packetHeaderLength;
    at += payload.copy(out, at, from, from + length);
  }
  return out;
}

/** One logical packet: a payload put back together from its packets. */
export interface Packet {
  /** Sequence id of the first packet. */
  sequenceId: number;
  /** Sequence id of the last packet (the same unless the payload was split): the reply follows it. */
  lastSequenceId: number;
  payload: Buffer;
}

/** Where the scan of the packet at the head of the buffered bytes stopped (so a large payload is not rescanned per chunk). */
interface Scan {
  /** Offset (from the head) of the next packet header to read. */
  at: number;
  payloadLength: number;
  packets: number;
  firstSequenceId: number;
  lastSequenceId: number;
}

/**
 * Puts logical packets back together from a byte stream in chunks of any size: `push` each
 * chunk as it arrives, then take packets with `next` until it answers undefined. A payload
 * held in one packet of one chunk is a view of that chunk (no copy); a split one is copied
 * once. A payload larger than `maxPayloadLength`, or packets of one payload whose sequence ids
 * do not follow each other, is a ProtocolError.
 */
export class PacketReader {
  private chunks: Buffer[] = [];
  /** Offset of the first unread byte in chunks[0]. */
  private head = 0;
  private total = 0;
  private scan: Scan | undefined;

  /** Changes when the connection's phase does (a proxy takes small packets before login, larger ones after). */
  constructor(public maxPayloadLength = 64 * 1024 * 1024) {}

  /** Bytes received and not yet taken as packets. */
  get buffered(): number {
    return this.total;
  }

  push(chunk: Buffer): void {
    if (chunk.length === 0) return;
    this.chunks.push(chunk);
    this.total += chunk.length;
  }

  next(): Packet | undefined {
    const scan = (this.scan ??= { at: 0, payloadLength: 0, packets: 0, firstSequenceId: 0, lastSequenceId: 0 });
    for (;;) {
      if (this.total - scan.at < packetHeaderLength) return undefined;
      const header = this.peek(scan.at, packetHeaderLength);
      const length = header.readUIntLE(0, 3);
      const sequenceId = header[3]!;
      if (scan.packets === 0) scan.firstSequenceId = sequenceId;
      else if (sequenceId !== ((scan.lastSequenceId + 1) & 0xff)) {
        throw new ProtocolError(`packet sequence id ${sequenceId} does not follow ${scan.lastSequenceId} within one payload`);
      }
      if (scan.payloadLength + length > this.maxPayloadLength) {
        throw new ProtocolError(`payload of more than ${this.maxPayloadLength} bytes exceeds the limit`);
      }
      if (this.total - scan.at - packetHeaderLength < length) return undefined;
      scan.packets++;
      scan.lastSequenceId = sequenceId;
      scan.payloadLength += length;
      scan.at += packetHeaderLength + length;
      if (length < maxPacketPayload) break;
    }
    const packet = this.take(scan);
    this.scan = undefined;
    return packet;
  }

  /** `count` bytes from `offset` past the head, copied only when they straddle chunks. */
  private peek(offset: number, count: number): Buffer {
    let index = 0;
    let at = this.head + offset;
    while (at >= this.chunks[index]!.length) at -= this.chunks[index++]!.length;
    const chunk = this.chunks[index]!;
    if (at + count <= chunk.length) return chunk.subarray(at, at + count);
    const out = Buffer.allocUnsafe(count);
    let written = 0;
    while (written < count) {
      const from = this.chunks[index++]!;
      written += from.copy(out, written, at, Math.min(from.length, at + count - written));
      at = 0;
    }
    return out;
  }

  /** Removes the scanned packets from the buffered bytes and returns their payload. */
  private take(scan: Scan): Packet {
    const first = this.chunks[0]!;
    let payload: Buffer;
    if (scan.packets === 1 && this.head + scan.at <= first.length) {
      payload = first.subarray(this.head + packetHeaderLength, this.head + scan.at);
    } else {
      payload = Buffer.allocUnsafe(scan.payloadLength);
      let written = 0;
      let offset = 0;
      while (offset < scan.at) {
        const length = this.peek(offset, 3).readUIntLE(0, 3);
        written += this.copyOut(payload, written, offset + packetHeaderLength, length);
        offset += packetHeaderLength + length;
      }
    }
    this.discard(scan.at);
    return { sequenceId: scan.firstSequenceId, lastSequenceId: scan.lastSequenceId, payload };
  }

  /** Copies `count` buffered bytes from `offset` past the head into `target` at `at`. */
  private copyOut(target: Buffer, at: number, offset: number, count: number): number {
    let index = 0;
    let from = this.head + offset;
    while (index < this.chunks.length && from >= this.chunks[index]!.length) from -= this.chunks[index++]!.length;
    let copied = 0;
    while (copied < count) {
      const chunk = this.chunks[index++]!;
      copied += chunk.copy(target, at + copied, from, Math.min(chunk.length, from + count - copied));
      from = 0;
    }
    return copied;
  }

  /** Every byte received and not taken as a packet, removed from the reader (a proxy hands them to TLS after an SSLRequest). */
  drain(): Buffer {
    const rest = Buffer.concat(this.chunks).subarray(this.head);
    this.chunks = [];
    this.head = 0;
    this.total = 0;
    this.scan = undefined;
    return rest;
  }

  private discard(count: number): void {
    this.total -= count;
    let left = this.head + count;
    let drop = 0;
    while (drop < this.chunks.length && left >= this.chunks[drop]!.length) left -= this.chunks[drop++]!.length;
    if (drop > 0) this.chunks = this.chunks.slice(drop);
    this.head = left;
  }
}
