import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { ColumnType } from "../../protocols/mysql/column-types";
import { encodePacket, maxPacketPayload, nextSequenceId, PacketReader, packetsForPayload, type Packet } from "../../protocols/mysql/packets";
import { ProtocolError } from "../../protocols/mysql/protocol-error";
import { newRowValues } from "../../protocols/mysql/row-values";
import { decodeTextRow, encodeTextRow, maskTextRow } from "../../protocols/mysql/text-row";
import { decodeBinaryRow, encodeBinaryRow, maskBinaryRow } from "../../protocols/mysql/binary-row";
import { samplePayloads } from "../helpers/mysql-samples";
import { seededRandom } from "../helpers/seeded-random";

/** Every packet the reader has whole after the chunks were pushed in order. */
function readAll(chunks: readonly Buffer[], maxPayload?: number): Packet[] {
  const reader = new PacketReader(maxPayload);
  const packets: Packet[] = [];
  for (const chunk of chunks) {
    reader.push(chunk);
    for (let packet = reader.next(); packet; packet = reader.next()) packets.push(packet);
  }
  assert.equal(reader.buffered, 0, "nothing left over");
  return packets;
}

/** A payload of `length` bytes whose content says where each byte was (a shifted copy would show). */
function patterned(length: number): Buffer {
  const out = Buffer.allocUnsafe(length);
  for (let i = 0; i < length; i++) out[i] = (i * 31 + (i >>> 8)) & 0xff;
  return out;
}

function chunked(bytes: Buffer, size: number): Buffer[] {
  const chunks: Buffer[] = [];
  for (let at = 0; at < bytes.length; at += size) chunks.push(bytes.subarray(at, at + size));
  return chunks;
}

describe("MySQL framing: the packet reader over split buffers", () => {
  test("every message kind, split at every byte boundary, comes back whole with its sequence id", () => {
    for (const { kind, payload } of samplePayloads()) {
      const framed = encodePacket(payload, 3);
      for (let cut = 0; cut <= framed.length; cut++) {
        const packets = readAll([framed.subarray(0, cut), framed.subarray(cut)]);
        assert.equal(packets.length, 1, `${kind} cut at ${cut}`);
        assert.deepEqual(packets[0]!.payload, payload, `${kind} cut at ${cut}`);
        assert.equal(packets[0]!.sequenceId, 3);
        assert.equal(packets[0]!.lastSequenceId, 3);
      }
    }
  });

  test("all message kinds back to back, in three pieces cut anywhere and byte by byte", () => {
    const samples = samplePayloads();
    const stream = Buffer.concat(samples.map(({ payload }, i) => encodePacket(payload, i)));
    const random = seededRandom(21);
    for (let round = 0; round < 300; round++) {
      const [a, b] = [Math.floor(random() * (stream.length + 1)), Math.floor(random() * (stream.length + 1))].sort((x, y) => x - y) as [number, number];
      const packets = readAll([stream.subarray(0, a), stream.subarray(a, b), stream.subarray(b)]);
      assert.deepEqual(
        packets.map((p) => p.payload),
        samples.map((s) => s.payload),
        `cuts at ${a} and ${b}`,
      );
    }
    const bytewise = readAll(chunked(stream, 1));
    assert.deepEqual(
      bytewise.map((p) => p.payload),
      samples.map((s) => s.payload),
    );
    assert.deepEqual(
      bytewise.map((p) => p.sequenceId),
      samples.map((_, i) => i),
    );
  });

  test("a payload held in one chunk is a view of it, not a copy", () => {
    const framed = encodePacket(Buffer.from("abc"), 0);
    const packet = readAll([framed])[0]!;
    assert.equal(packet.payload.buffer, framed.buffer);
    assert.equal(packet.payload.byteOffset, framed.byteOffset + 4);
  });
});

describe("MySQL framing: 16 MiB splits", () => {
  test("payloads around 0xffffff bytes: split packets, the empty last packet, sequence ids wrapping at 256", () => {
    const sizes = [maxPacketPayload - 1, maxPacketPayload, maxPacketPayload + 1, 2 * maxPacketPayload, 2 * maxPacketPayload + 5];
    for (const size of sizes) {
      const payload = patterned(size);
      const framed = encodePacket(payload, 254);
      const packets = packetsForPayload(size);
      assert.equal(framed.length, size + 4 * packets, `${size}: ${packets} headers`);
      // Each full packet says 0xffffff; the last says what is left (0 when the payload is a multiple).
      for (let i = 0, at = 0; i < packets; i++) {
        const length = framed.readUIntLE(at, 3);
        assert.equal(length, i < packets - 1 ? maxPacketPayload : size - (packets - 1) * maxPacketPayload, `${size}: packet ${i}`);
        assert.equal(framed[at + 3], (254 + i) & 0xff, `${size}: sequence id of packet ${i}`);
        at += 4 + length;
      }
      assert.equal(nextSequenceId(254, size), (254 + packets) & 0xff);
      for (const chunkSize of [65536, 1_000_003]) {
        const read = readAll(chunked(framed, chunkSize));
        assert.equal(read.length, 1, `${size} in chunks of ${chunkSize}`);
        assert.equal(read[0]!.sequenceId, 254);
        assert.equal(read[0]!.lastSequenceId, (254 + packets - 1) & 0xff);
        assert.ok(read[0]!.payload.equals(payload), `${size} in chunks of ${chunkSize}: the same bytes`);
      }
    }
    assert.equal(packetsForPayload(maxPacketPayload), 2, "exactly 0xffffff needs an empty packet after it");
  });

  test("a 20 MiB text row: reassembled, a value set to NULL, framed again in two packets", () => {
    const big = patterned(20 * 1024 * 1024);
    const row = encodeTextRow([Buffer.from("42"), big, Buffer.from("x")]);
    const read = readAll(chunked(encodePacket(row, 1), 1 << 20));
    const values = decodeTextRow(read[0]!.payload, 3, newRowValues());
    assert.equal(values.lengths[1], big.length);
    assert.ok(read[0]!.payload.subarray(values.starts[1], values.starts[1]! + big.length).equals(big));
    const masked = maskTextRow(read[0]!.payload, 3, [true, false, true]);
    assert.deepEqual(masked, encodeTextRow([Buffer.from("42"), null, Buffer.from("x")]));
    const unmasked = maskTextRow(read[0]!.payload, 3, [true, true, true]);
    assert.ok(unmasked.equals(row));
    assert.equal(readAll([encodePacket(unmasked, 9)])[0]!.lastSequenceId, 10);
  });

  test("a binary row with a 17 MiB BLOB, masked to NULL", () => {
    const types = [ColumnType.Long, ColumnType.LongBlob];
    const blob = patterned(17 * 1024 * 1024);
    const row = encodeBinaryRow(types, [Buffer.from([1, 0, 0, 0]), blob]);
    const payload = readAll(chunked(encodePacket(row, 0), 1 << 16))[0]!.payload;
    const values = decodeBinaryRow(payload, types, newRowValues());
    assert.equal(values.lengths[1], blob.length);
    assert.deepEqual(maskBinaryRow(payload, types, [true, false]), encodeBinaryRow(types, [Buffer.from([1, 0, 0, 0]), null]));
  });

  test("a payload over the limit, and sequence ids that skip within a payload, are protocol errors", () => {
    const reader = new PacketReader(1000);
    reader.push(Buffer.from([0xe9, 0x03, 0x00, 0x00]));
    assert.throws(() => reader.next(), ProtocolError, "1001 bytes announced before they arrive");
    const framed = encodePacket(patterned(maxPacketPayload + 10), 0);
    framed[4 + maxPacketPayload + 3] = 5;
    assert.throws(() => readAll([framed]), ProtocolError, "sequence 0 then 5");
    const limited = new PacketReader(maxPacketPayload + 5);
    limited.push(encodePacket(patterned(maxPacketPayload + 10), 0));
    assert.throws(() => limited.next(), ProtocolError, "the limit counts the whole payload, not one packet");
  });
});
