import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { decodeAuthMoreData } from "../../protocols/mysql/auth-more-data";
import { decodeAuthSwitchRequest, encodeAuthSwitchRequest } from "../../protocols/mysql/auth-switch";
import { decodeBareCommand } from "../../protocols/mysql/bare-commands";
import { decodeBinaryRow, maskBinaryRow } from "../../protocols/mysql/binary-row";
import { Capability } from "../../protocols/mysql/capabilities";
import { decodeChangeUser, encodeChangeUser } from "../../protocols/mysql/change-user";
import { decodeColumnCount, encodeColumnCount } from "../../protocols/mysql/column-count";
import { decodeColumnDefinition, encodeColumnDefinition } from "../../protocols/mysql/column-definition";
import { ColumnType } from "../../protocols/mysql/column-types";
import { Command } from "../../protocols/mysql/commands";
import { decodeEofPacket, encodeEofPacket } from "../../protocols/mysql/eof-packet";
import { decodeErrPacket, decodeProgressReport, encodeErrPacket, encodeProgressReport } from "../../protocols/mysql/err-packet";
import { decodeHandshake, encodeHandshake } from "../../protocols/mysql/handshake";
import { decodeHandshakeResponse, encodeHandshakeResponse } from "../../protocols/mysql/handshake-response";
import { decodeLocalInfileRequest } from "../../protocols/mysql/local-infile";
import { decodeOkPacket, encodeOkPacket } from "../../protocols/mysql/ok-packet";
import { PacketReader } from "../../protocols/mysql/packets";
import { ProtocolError } from "../../protocols/mysql/protocol-error";
import { decodeQuery, encodeQuery } from "../../protocols/mysql/query";
import { responseKind } from "../../protocols/mysql/response-kind";
import { decodeResultsetEnd } from "../../protocols/mysql/resultset-end";
import { newRowValues } from "../../protocols/mysql/row-values";
import { decodeSchemaChange, decodeSessionState, decodeSystemVariable } from "../../protocols/mysql/session-state";
import { decodeSetOption } from "../../protocols/mysql/set-option";
import { decodeSslRequest } from "../../protocols/mysql/ssl-request";
import { decodeStatementIdCommand, decodeStmtFetch, decodeStmtSendLongData } from "../../protocols/mysql/statement-commands";
import { decodeStmtExecute, encodeStmtExecute } from "../../protocols/mysql/stmt-execute";
import { decodeStmtPrepareOk, encodeStmtPrepareOk } from "../../protocols/mysql/stmt-prepare-ok";
import { decodeTextCommand } from "../../protocols/mysql/text-commands";
import { decodeTextRow, maskTextRow } from "../../protocols/mysql/text-row";
import { sampleBinaryTypes, sampleCapabilities, samplePayloads } from "../helpers/mysql-samples";
import { seededRandom } from "../helpers/seeded-random";

/**
 * Bounded seeded fuzz: random and mutated payloads through every decoder. A decoder either
 * returns or throws ProtocolError (a proxy closes the connection on it and treats anything else
 * as a bug), and what it returns re-encodes to bytes that decode to the same value. A failure
 * names its seed and iteration, so it can be replayed.
 */

const withAttributes = (sampleCapabilities | Capability.QueryAttributes) >>> 0;
const plain = (Capability.Protocol41 | Capability.SecureConnection) >>> 0;
const rows = newRowValues();

interface Decoder {
  name: string;
  decode(payload: Buffer): unknown;
  /** Encodes what `decode` returned, for the re-decode check. */
  encode?(value: never): Buffer;
}

const decoders: Decoder[] = [
  { name: "handshake", decode: decodeHandshake, encode: encodeHandshake },
  { name: "handshake-response", decode: decodeHandshakeResponse, encode: encodeHandshakeResponse },
  { name: "ssl-request", decode: decodeSslRequest },
  { name: "auth-switch-request", decode: decodeAuthSwitchRequest, encode: encodeAuthSwitchRequest },
  { name: "auth-more-data", decode: decodeAuthMoreData },
  { name: "ok", decode: (p) => decodeOkPacket(p, sampleCapabilities), encode: (v) => encodeOkPacket(v, sampleCapabilities) },
  { name: "ok without session tracking", decode: (p) => decodeOkPacket(p, plain), encode: (v) => encodeOkPacket(v, plain) },
  { name: "eof", decode: (p) => decodeEofPacket(p, plain), encode: (v) => encodeEofPacket(v, plain) },
  { name: "resultset-end", decode: (p) => decodeResultsetEnd(p, sampleCapabilities) },
  { name: "err", decode: decodeErrPacket, encode: encodeErrPacket },
  { name: "progress", decode: decodeProgressReport, encode: encodeProgressReport },
  {
    name: "session-state",
    decode: (p) => decodeSessionState(p).map((entry) => [decodeSystemVariable, decodeSchemaChange].map((f) => tolerate(() => f(entry.data)))),
  },
  { name: "local-infile", decode: decodeLocalInfileRequest },
  { name: "response-kind", decode: responseKind },
  { name: "column-count", decode: (p) => decodeColumnCount(p, sampleCapabilities), encode: (v) => encodeColumnCount(v, sampleCapabilities) },
  { name: "column-definition", decode: decodeColumnDefinition, encode: encodeColumnDefinition },
  {
    name: "column-definition extended",
    decode: (p) => decodeColumnDefinition(p, { mariaDbExtendedMetadata: true }),
    encode: (v) => encodeColumnDefinition(v, { mariaDbExtendedMetadata: true }),
  },
  { name: "text-row", decode: (p) => decodeTextRow(p, 3, rows) },
  { name: "text-row masked", decode: (p) => maskTextRow(p, 3, [true, false, -1]) },
  { name: "binary-row", decode: (p) => decodeBinaryRow(p, sampleBinaryTypes, rows) },
  { name: "binary-row masked", decode: (p) => maskBinaryRow(p, sampleBinaryTypes, [1, 0, -1, 1, 0, 1, -1, 1, 0, 1]) },
  { name: "query", decode: (p) => decodeQuery(p, sampleCapabilities), encode: (v) => encodeQuery(v, sampleCapabilities) },
  { name: "query with attributes", decode: (p) => decodeQuery(p, withAttributes), encode: (v) => encodeQuery(v, withAttributes) },
  { name: "init-db", decode: (p) => decodeTextCommand(p, Command.InitDb) },
  { name: "stmt-prepare", decode: (p) => decodeTextCommand(p, Command.StmtPrepare) },
  { name: "stmt-prepare-ok", decode: (p) => decodeStmtPrepareOk(p, sampleCapabilities), encode: (v) => encodeStmtPrepareOk(v, sampleCapabilities) },
  {
    name: "stmt-execute",
    decode: (p) => decodeStmtExecute(p, { parameterCount: 3, capabilities: sampleCapabilities }),
    encode: (v) => encodeStmtExecute(v, sampleCapabilities),
  },
  {
    name: "stmt-execute with attributes",
    decode: (p) => decodeStmtExecute(p, { parameterCount: 1, capabilities: withAttributes, previousTypes: [{ type: ColumnType.Long, unsigned: false }] }),
  },
  { name: "stmt-fetch", decode: decodeStmtFetch },
  { name: "stmt-close", decode: (p) => decodeStatementIdCommand(p, Command.StmtClose) },
  { name: "stmt-send-long-data", decode: decodeStmtSendLongData },
  { name: "set-option", decode: decodeSetOption },
  { name: "change-user", decode: (p) => decodeChangeUser(p, sampleCapabilities), encode: (v) => encodeChangeUser(v, sampleCapabilities) },
  { name: "ping", decode: (p) => decodeBareCommand(p, Command.Ping) },
];

/** Runs `action`; a ProtocolError is an answer, anything else fails the test. */
function tolerate<T>(action: () => T): T | ProtocolError {
  try {
    return action();
  } catch (error) {
    if (error instanceof ProtocolError) return error;
    throw error;
  }
}

function mutate(random: () => number, seeds: readonly Buffer[]): Buffer {
  const pick = (n: number) => Math.floor(random() * n);
  const choice = pick(6);
  if (choice === 0) return Buffer.from(Array.from({ length: pick(80) }, () => pick(256)));
  const base = Buffer.from(seeds[pick(seeds.length)]!);
  if (choice === 1) return base.subarray(0, pick(base.length + 1));
  if (choice === 2) return Buffer.concat([base, Buffer.from(Array.from({ length: 1 + pick(8) }, () => pick(256)))]);
  // Flip a few bytes, favouring the values that mean something to length-encoded integers and markers.
  const special = [0x00, 0x01, 0xfb, 0xfc, 0xfd, 0xfe, 0xff, 0x23];
  for (let flips = 1 + pick(4); flips > 0 && base.length > 0; flips--) base[pick(base.length)] = random() < 0.5 ? special[pick(special.length)]! : pick(256);
  return base;
}

describe("MySQL codec fuzz", () => {
  test("20,000 random and mutated payloads through every decoder: a value or a ProtocolError, and values re-encode", () => {
    const seed = 2021;
    const random = seededRandom(seed);
    const seeds = samplePayloads().map((s) => s.payload);
    // Some decodes must succeed, or the mutations never reach past the first byte.
    const decoded = new Map<string, number>();
    for (let iteration = 0; iteration < 20_000; iteration++) {
      const payload = mutate(random, seeds);
      for (const decoder of decoders) {
        let value: unknown;
        try {
          value = tolerate(() => decoder.decode(payload));
        } catch (error) {
          assert.fail(`seed ${seed} iteration ${iteration}: ${decoder.name} threw ${String(error)} on ${payload.toString("hex")}`);
        }
        if (value instanceof ProtocolError) continue;
        decoded.set(decoder.name, (decoded.get(decoder.name) ?? 0) + 1);
        if (!decoder.encode) continue;
        const encode = decoder.encode as (value: unknown) => Buffer;
        const again = tolerate(() => decoder.decode(encode(value)));
        assert.deepEqual(again, value, `seed ${seed} iteration ${iteration}: ${decoder.name} re-encoded differently from ${payload.toString("hex")}`);
      }
    }
    for (const decoder of decoders) assert.ok((decoded.get(decoder.name) ?? 0) > 0, `${decoder.name} decoded none of the inputs`);
  });

  test("random bytes in random chunks through the packet reader: packets or a ProtocolError, never a hang", () => {
    const random = seededRandom(7);
    for (let round = 0; round < 2000; round++) {
      const reader = new PacketReader(1 << 16);
      const stream = Buffer.from(Array.from({ length: Math.floor(random() * 400) }, () => (random() < 0.3 ? 0 : Math.floor(random() * 256))));
      let taken = 0;
      const outcome = tolerate(() => {
        for (let at = 0; at < stream.length; ) {
          const size = 1 + Math.floor(random() * 40);
          reader.push(stream.subarray(at, at + size));
          at += size;
          for (let packet = reader.next(); packet; packet = reader.next()) taken += 4 + packet.payload.length;
        }
        return taken;
      });
      if (!(outcome instanceof ProtocolError)) assert.equal(taken + reader.buffered, stream.length, `round ${round}: every byte a packet's or still buffered`);
    }
  });
});
