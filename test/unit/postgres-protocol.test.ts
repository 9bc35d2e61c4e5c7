import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { decodeBackendKeyData, encodeBackendKeyData } from "../../protocols/postgres/backend-key-data";
import { decodeBind, encodeBind } from "../../protocols/postgres/bind";
import { encodeCancelRequest } from "../../protocols/postgres/cancel-request";
import { encodeCopyData, encodeCopyDone, encodeCopyFail } from "../../protocols/postgres/copy";
import { decodeCommandComplete, encodeCommandComplete, selectCount, withReturnedRows } from "../../protocols/postgres/command-complete";
import {
  decodeDataRow,
  encodeDataRow,
  encodeMaskedDataRow,
  locateValue,
  newRowValues,
  valueLengthAt,
  writeMaskedRowFrom,
} from "../../protocols/postgres/data-row";
import { decodeDescribe, encodeDescribe, locateDescribe } from "../../protocols/postgres/describe";
import { decodeErrorFields, encodeErrorResponse, ErrorField, errorFields } from "../../protocols/postgres/error-response";
import { decodeExecute, encodeExecute, locateExecute } from "../../protocols/postgres/execute";
import { splitFrames, startupPacketLength } from "../../protocols/postgres/frames";
import { decodeNegotiateProtocolVersion, encodeNegotiateProtocolVersion } from "../../protocols/postgres/negotiate-protocol-version";
import { decodeParameterStatus, encodeParameterStatus } from "../../protocols/postgres/parameter-status";
import { decodeParse, encodeParse } from "../../protocols/postgres/parse";
import { decodeQuery, encodeQuery } from "../../protocols/postgres/query";
import { decodeReadyForQuery, encodeReadyForQuery } from "../../protocols/postgres/ready-for-query";
import { decodeRowDescription, encodeRowDescription, type ColumnDescription } from "../../protocols/postgres/row-description";
import { decodeStartup, encodeSSLRequest, encodeStartup } from "../../protocols/postgres/startup";
import { ProtocolError } from "../../protocols/postgres/wire";
import { ByteQueue } from "../../proxies/postgres/byte-queue";
import { catalogFrom, catalogQuery, resolveColumns } from "../../proxies/postgres/column-catalog";
import { ForwardBuffer } from "../../proxies/postgres/forward-buffer";
import { OutputBuffer } from "../../proxies/postgres/output-buffer";
import { maskFor, planResult } from "../../proxies/postgres/result-plan";
import { loadSqlParser } from "../../proxies/postgres/analysis/sql-parser";
import { analyzeQuery, type ResultShape } from "../../proxies/postgres/analysis/statement-analysis";
import { sanitizeError, sanitizeNotice } from "../../proxies/postgres/sanitize";
import type { MappingView, RowVerdict } from "../../exports/row-decider";
import { userIdFromValue } from "../../proxies/postgres/user-id";
import { ByteStringMemo } from "../../proxies/postgres/byte-string-memo";
import { UserIdMemo } from "../../proxies/postgres/user-id-memo";

const hex = (text: string) => Buffer.from(text.replace(/\s+/g, ""), "hex");
const bodyOf = (message: Buffer) => message.subarray(5);

describe("PostgreSQL codecs: byte fixtures", () => {
  test("Query 'Q': code, length including itself, NUL-terminated text", () => {
    assert.deepEqual(encodeQuery("SELECT 1"), hex("51 0000000d 53454c4543542031 00"));
    assert.equal(decodeQuery(bodyOf(hex("51 0000000d 53454c4543542031 00"))), "SELECT 1");
  });

  test("startup packet: protocol 3.0, parameters, final NUL; SSLRequest, GSSENCRequest and CancelRequest codes", () => {
    const startup = encodeStartup(new Map([["user", "u"]]));
    assert.deepEqual(startup, hex("00000010 00030000 7573657200 7500 00"));
    assert.deepEqual(decodeStartup(startup), { kind: "startup", major: 3, minor: 0, parameters: new Map([["user", "u"]]) });
    assert.deepEqual(encodeSSLRequest(), hex("00000008 04d2162f"));
    assert.deepEqual(decodeStartup(hex("00000008 04d2162f")), { kind: "ssl" });
    assert.deepEqual(decodeStartup(hex("00000008 04d21630")), { kind: "gssenc" });
    assert.deepEqual(encodeCancelRequest(7, -2), hex("00000010 04d2162e 00000007 fffffffe"));
    assert.deepEqual(decodeStartup(encodeCancelRequest(7, -2)), { kind: "cancel", processId: 7, secretKey: -2 });
    assert.deepEqual(decodeStartup(hex("00000009 00040000 00")), { kind: "startup", major: 4, minor: 0, parameters: new Map() });
    assert.throws(() => decodeStartup(hex("0000000d 00030000 7573657200")), ProtocolError);
  });

  test("DataRow 'D': values located without copying, NULL as -1, masked re-encoding", () => {
    const row = hex("44 00000017 0003 00000002 6869 ffffffff 00000003 616263");
    const values = decodeDataRow(row, 5, row.length, newRowValues(1));
    assert.equal(values.count, 3);
    assert.deepEqual([...values.lengths.subarray(0, 3)], [2, -1, 3]);
    assert.equal(row.toString("utf8", values.starts[0], values.starts[0]! + 2), "hi");
    assert.deepEqual(encodeDataRow([Buffer.from("hi"), null, Buffer.from("abc")]), row);
    assert.deepEqual(encodeMaskedDataRow(row, [false, true, true]), hex("44 00000015 0003 ffffffff ffffffff 00000003 616263"));
    const target = Buffer.alloc(row.length);
    const written = writeMaskedRowFrom(target, 0, row, 5, row.length, [false, true, true]);
    assert.deepEqual(target.subarray(0, written), hex("44 00000015 0003 ffffffff ffffffff 00000003 616263"), "in one pass from the source, the same bytes");
    assert.throws(() => writeMaskedRowFrom(Buffer.alloc(64), 0, hex("44 0000000b 0001 00000009 61"), 5, 12, [true]), ProtocolError);
    // Runs of kept values (NULLs and empty values among them) copied at once: the same bytes as the row re-encoded.
    const sample = [Buffer.from("u1"), null, Buffer.alloc(0), Buffer.from("secret"), Buffer.from("x".repeat(300)), null];
    for (let mask = 0; mask < 1 << sample.length; mask++) {
      const keep = sample.map((_, i) => (mask & (1 << i)) !== 0);
      const source = Buffer.concat([hex("ffff"), encodeDataRow(sample), hex("ff")]);
      const into = Buffer.alloc(source.length + 8, 0xaa);
      const after = writeMaskedRowFrom(into, 8, source, 7, source.length - 1, keep);
      assert.deepEqual(into.subarray(8, after), encodeDataRow(sample.map((value, i) => (keep[i] ? value : null))), `mask ${mask}`);
    }
    assert.throws(() => decodeDataRow(hex("44 0000000b 0001 00000009 61"), 5, 12, newRowValues()), ProtocolError, "a value longer than its message");
    assert.throws(() => decodeDataRow(hex("44 0000000c 0001 00000001 6161"), 5, 13, newRowValues()), ProtocolError, "bytes after the last value");
    assert.throws(() => decodeDataRow(hex("44 0000000a 0001 fffffffe"), 5, 11, newRowValues()), ProtocolError, "a length below -1");
    assert.deepEqual(locateValue(row, 5, row.length, 2), { start: row.length - 3, length: 3 }, "one value found without decoding the row");
    assert.deepEqual(locateValue(row, 5, row.length, 1), { start: 17, length: -1 });
    assert.equal(locateValue(row, 5, row.length, 3), undefined, "no such column");
    assert.equal(locateValue(hex("44 0000000b 0002 00000009 61"), 5, 12, 1), undefined, "lengths that overrun the message");
    // The form without an object per call: the offset of the value's length, -1 where locateValue finds none.
    assert.equal(valueLengthAt(row, 5, row.length, 2), row.length - 7);
    assert.equal(valueLengthAt(row, 5, row.length, 1), 13);
    assert.equal(valueLengthAt(row, 5, row.length, 3), -1, "no such column");
    assert.equal(valueLengthAt(hex("44 0000000b 0002 00000009 61"), 5, 12, 0), -1, "a value that overruns the message");
  });

  test("RowDescription 'T': table OID and attribute number per column (unsigned OIDs)", () => {
    const columns: ColumnDescription[] = [
      { name: "id", tableOid: 16385, attributeNumber: 1, typeOid: 25, typeSize: -1, typeModifier: -1, format: 0 },
      { name: "?column?", tableOid: 0, attributeNumber: 0, typeOid: 23, typeSize: 4, typeModifier: -1, format: 1 },
      { name: "big", tableOid: 4_000_000_000, attributeNumber: 2, typeOid: 4_000_000_001, typeSize: 8, typeModifier: -1, format: 0 },
    ];
    const encoded = encodeRowDescription(columns);
    assert.deepEqual(encoded.subarray(0, 7), hex("54 0000004c 0003"));
    assert.deepEqual(decodeRowDescription(bodyOf(encoded)), columns);
  });

  test("CommandComplete 'C': the row count of SELECT and FETCH is rewritten, of writes kept", () => {
    assert.deepEqual(encodeCommandComplete("SELECT 3"), hex("43 0000000d 53454c4543542033 00"));
    assert.equal(decodeCommandComplete(bodyOf(encodeCommandComplete("SELECT 3"))), "SELECT 3");
    assert.equal(withReturnedRows("SELECT 10", 4), "SELECT 4");
    assert.equal(withReturnedRows("FETCH 10", 0), "FETCH 0");
    assert.equal(withReturnedRows("INSERT 0 5", 2), "INSERT 0 5");
    assert.equal(withReturnedRows("UPDATE 5", 2), "UPDATE 5");
    assert.equal(withReturnedRows("BEGIN", 2), "BEGIN");
    // The count of SELECT read from the bytes, inside a larger buffer.
    const select = Buffer.concat([hex("ffff"), encodeCommandComplete("SELECT 1024"), hex("ff")]);
    assert.equal(selectCount(select, 7, select.length - 1), 1024);
    for (const tag of ["SELECT", "SELECT ", "SELECT 1x", "FETCH 1", "SELECT 1234567890123456", "INSERT 0 1"]) {
      const message = encodeCommandComplete(tag);
      assert.equal(selectCount(message, 5, message.length), undefined, tag);
    }
  });

  test("ErrorResponse 'E' and the other small messages", () => {
    const error = encodeErrorResponse(errorFields("FATAL", "08P01", "bad"));
    assert.deepEqual(error, hex("45 0000001f 5346415441 4c00 5646415441 4c00 433038503031 00 4d62616400 00"));
    assert.deepEqual(decodeErrorFields(bodyOf(error)).get(ErrorField.Code), "08P01");
    assert.deepEqual(encodeReadyForQuery(0x49), hex("5a 00000005 49"));
    assert.equal(decodeReadyForQuery(hex("49")), 0x49);
    assert.throws(() => decodeReadyForQuery(hex("4949")), ProtocolError);
    assert.equal(decodeReadyForQuery(hex("5a0000000554"), 5, 6), 0x54);
    assert.deepEqual(encodeBackendKeyData({ processId: 1, secretKey: 2 }), hex("4b 0000000c 00000001 00000002"));
    assert.deepEqual(encodeDescribe({ kind: 0x50, name: "p" }), hex("44 00000007 50 7000"));
    assert.deepEqual(encodeExecute({ portal: "", maxRows: 2 }), hex("45 00000009 00 00000002"));
    assert.deepEqual(encodeCopyData("a\n"), hex("64 00000006 610a"));
    assert.deepEqual(encodeCopyDone(), hex("63 00000004"));
    assert.deepEqual(encodeCopyFail("no"), hex("66 00000007 6e6f00"));
  });
});

describe("PostgreSQL codecs: encode then decode", () => {
  test("every message kind comes back as it went", () => {
    const bind = { portal: "p", statement: "s", parameterFormats: [1], parameters: [Buffer.from("x"), null], resultFormats: [0, 1] };
    assert.deepEqual(decodeBind(bodyOf(encodeBind(bind))), bind);
    const parse = { statement: "s", sql: "SELECT $1", parameterTypes: [25, 3_000_000_000] };
    assert.deepEqual(decodeParse(bodyOf(encodeParse(parse))), parse);
    assert.deepEqual(decodeDescribe(bodyOf(encodeDescribe({ kind: 0x53, name: "stmt" }))), { kind: 0x53, name: "stmt" });
    assert.deepEqual(decodeExecute(bodyOf(encodeExecute({ portal: "c", maxRows: 100 }))), { portal: "c", maxRows: 100 });
    // Names located as the bytes sent, inside a larger buffer, never decoded.
    const describe = hex("aa 44 00000008 50 ff00 bb");
    assert.deepEqual(locateDescribe(describe, 6, 9), { kind: 0x50, nameEnd: 8 });
    const execute = hex("45 0000000b ff00 00000002");
    assert.deepEqual(locateExecute(execute, 5, execute.length), { portalEnd: 6, maxRows: 2 });
    assert.throws(() => locateExecute(execute, 5, execute.length - 1), ProtocolError);
    assert.throws(() => locateDescribe(describe, 6, 8), ProtocolError, "the name's NUL lies past the message");
    assert.throws(() => locateDescribe(describe, 6, 6), ProtocolError);
    assert.deepEqual(decodeBackendKeyData(bodyOf(encodeBackendKeyData({ processId: 42, secretKey: -7 }))), { processId: 42, secretKey: -7 });
    assert.deepEqual(decodeParameterStatus(bodyOf(encodeParameterStatus("TimeZone", "UTC"))), { name: "TimeZone", value: "UTC" });
    assert.deepEqual(decodeNegotiateProtocolVersion(bodyOf(encodeNegotiateProtocolVersion(0, ["_pq_.x"]))), {
      newestMinor: 0,
      unrecognisedOptions: ["_pq_.x"],
    });
    const fields = new Map([
      [ErrorField.Severity, "ERROR"],
      [ErrorField.Code, "22P02"],
      [ErrorField.Message, "m"],
      [ErrorField.Detail, "d"],
    ]);
    assert.deepEqual(decodeErrorFields(bodyOf(encodeErrorResponse(fields))), fields);
  });

  test("truncated bodies fail with ProtocolError, never a RangeError", () => {
    const messages = [
      encodeBind({ portal: "p", statement: "s", parameterFormats: [0], parameters: [Buffer.from("abc")], resultFormats: [1] }),
      encodeParse({ statement: "", sql: "x", parameterTypes: [23] }),
      encodeRowDescription([{ name: "a", tableOid: 1, attributeNumber: 1, typeOid: 23, typeSize: 4, typeModifier: -1, format: 0 }]),
    ];
    const decoders = [decodeBind, decodeParse, decodeRowDescription];
    messages.forEach((message, index) => {
      const body = bodyOf(message);
      for (let cut = 0; cut < body.length; cut++) assert.throws(() => decoders[index]!(body.subarray(0, cut)), ProtocolError, `cut at ${cut}`);
    });
  });
});

describe("PostgreSQL framing: split buffers", () => {
  const stream = Buffer.concat([encodeQuery("SELECT 1"), encodeDataRow([Buffer.from("a".repeat(300)), null]), encodeReadyForQuery(0x49)]);

  test("whole messages are found at every split point; the rest waits for more bytes", () => {
    for (let cut = 0; cut <= stream.length; cut++) {
      const first = splitFrames(stream.subarray(0, cut), 1 << 20);
      const rest = Buffer.concat([stream.subarray(first.consumed, cut), stream.subarray(cut)]);
      const second = splitFrames(rest, 1 << 20);
      assert.equal(first.frames.length + second.frames.length, 3, `cut at ${cut}`);
      assert.equal(first.consumed + second.consumed, stream.length);
    }
  });

  test("a length below 4 or above the limit is a protocol error", () => {
    assert.throws(() => splitFrames(hex("51 00000003"), 100), ProtocolError);
    assert.throws(() => splitFrames(hex("51 7fffffff"), 1 << 20), /exceeds the limit/);
    assert.throws(() => startupPacketLength(hex("00000004"), 10_000), ProtocolError);
    assert.equal(startupPacketLength(hex("0000"), 10_000), undefined);
  });

  test("ByteQueue hands over whole messages, copying only those that straddle chunks, and an oversized announcement at once", () => {
    const queue = new ByteQueue(1, 1 << 20);
    for (let i = 0; i < stream.length - 1; i += 7) queue.push(stream.subarray(i, Math.min(i + 7, stream.length - 1)));
    const handled: number[] = [];
    for (let bytes = queue.take(); bytes; bytes = queue.take()) {
      const { frames, consumed } = splitFrames(bytes, 1 << 20);
      handled.push(...frames.map((f) => bytes[f.start]!));
      queue.unshift(bytes.subarray(consumed));
      if (frames.length === 0) break;
    }
    assert.deepEqual(handled, [0x51, 0x44], "the last message is one byte short");
    queue.push(stream.subarray(stream.length - 1));
    assert.equal(splitFrames(queue.take()!, 1 << 20).frames.length, 1);
    const one = new ByteQueue(1, 1 << 20);
    const chunk = Buffer.concat([encodeQuery("a"), encodeQuery("b")]);
    one.push(chunk);
    assert.equal(one.take(), chunk, "a chunk of whole messages is handed over as it is, not copied");
    const huge = new ByteQueue(1, 1024);
    huge.push(hex("44 7fffffff 00"));
    assert.ok(huge.take(), "not buffered until 2 GiB arrive");
  });

  test("ByteQueue.copyOut copies what still lies in a socket's reused read buffer, and nothing else", () => {
    const readBuffer = Buffer.allocUnsafeSlow(64);
    const queue = new ByteQueue(1, 1 << 20);
    const owned = Buffer.from(encodeQuery("a").subarray(0, 3));
    queue.push(owned);
    encodeQuery("a").copy(readBuffer, 0, 3);
    queue.push(readBuffer.subarray(0, encodeQuery("a").length - 3));
    queue.copyOut(readBuffer);
    readBuffer.fill(0);
    assert.deepEqual(queue.take(), encodeQuery("a"), "the queued bytes survive the next read into the buffer");
    const untouched = new ByteQueue(1, 1 << 20);
    const own = encodeQuery("b");
    untouched.push(own);
    untouched.copyOut(readBuffer);
    assert.equal(untouched.take(), own, "bytes of their own are not copied");
  });

  test("OutputBuffer copies runs of passed messages once, in order with masked rows and its own messages, before the source is read into again", () => {
    const row = encodeDataRow([Buffer.from("u1"), Buffer.from("secret")]);
    const source = Buffer.concat([encodeQuery("a"), encodeQuery("b"), row, encodeReadyForQuery(0x49)]);
    const frames = splitFrames(source, 1 << 20).frames;
    const out = new OutputBuffer(source.length);
    out.pushRange(source, frames[0]!.start, frames[0]!.end);
    out.pushRange(source, frames[1]!.start, frames[1]!.end);
    out.pushMaskedRow(source, frames[2]!.start, frames[2]!.end, [true, false]);
    out.push(encodeQuery("own"));
    out.pushRange(source, frames[3]!.start, frames[3]!.end);
    assert.equal(out.size, source.length - 6 + encodeQuery("own").length);
    const taken = out.take();
    source.fill(0);
    assert.deepEqual(
      taken,
      Buffer.concat([encodeQuery("a"), encodeQuery("b"), encodeDataRow([Buffer.from("u1"), null]), encodeQuery("own"), encodeReadyForQuery(0x49)]),
    );
    assert.equal(out.size, 0);
  });

  test("ForwardBuffer writes a chunk that passes whole as the chunk itself; the proxy's own messages join it", () => {
    const chunk = Buffer.concat([encodeQuery("a"), encodeQuery("b"), encodeQuery("c")]);
    const frames = splitFrames(chunk, 1 << 20).frames;
    const forward = new ForwardBuffer();
    for (const frame of frames) forward.forward(chunk, frame.start, frame.end);
    const whole = forward.take()!;
    assert.equal(whole.buffer, chunk.buffer, "not copied");
    assert.deepEqual(whole, chunk);
    assert.equal(forward.take(), undefined, "empty again after take");
    forward.forward(chunk, frames[0]!.start, frames[0]!.end);
    forward.push(encodeQuery("x"));
    forward.forward(chunk, frames[2]!.start, frames[2]!.end);
    assert.deepEqual(forward.take(), Buffer.concat([encodeQuery("a"), encodeQuery("x"), encodeQuery("c")]));
  });
});

describe("PostgreSQL proxy: planning and sanitising", () => {
  const mapping: MappingView = {
    key: "1/users",
    fields: new Map([
      ["users.id", { recordField: "users.id", category: undefined, resourceOrder: 0 }],
      ["public.users.email", { recordField: "public.users.email", category: "contact", resourceOrder: -1 }],
      ["users.email", { recordField: "users.email", category: "other", resourceOrder: -1 }],
      ["users.alt_id", { recordField: "users.alt_id", category: "identity", resourceOrder: 1 }],
    ]),
  };
  const column = (tableOid: number, attributeNumber: number, typeOid = 25): ColumnDescription => ({
    name: "label-is-ignored",
    tableOid,
    attributeNumber,
    typeOid,
    typeSize: -1,
    typeModifier: -1,
    format: 0,
  });

  test("the catalog query carries names hex-encoded; the schema-qualified mapping wins; temporary and ambiguous relations map nothing", () => {
    const sql = catalogQuery(mapping);
    assert.ok(sql.includes(Buffer.from("users").toString("hex")) && !sql.includes("'users'"));
    const columns = resolveColumns(
      [
        { tableOid: 10, attributeNumber: 1, schema: "public", table: "users", column: "id" },
        { tableOid: 10, attributeNumber: 2, schema: "public", table: "users", column: "email" },
        { tableOid: 11, attributeNumber: 2, schema: "other", table: "users", column: "email" },
        { tableOid: 12, attributeNumber: 1, schema: "public", table: "accounts", column: "id" },
        { tableOid: 13, attributeNumber: 1, schema: "pg_temp_3", table: "users", column: "alt_id" },
        { tableOid: 14, attributeNumber: 1, schema: "public", table: "users", column: "alt_id" },
      ],
      mapping,
    );
    // users.email names two relations (public and other): neither maps by the short name; public.users.email still does.
    assert.deepEqual(
      [...columns],
      [
        ["10.1", "users.id"],
        ["10.2", "public.users.email"],
        ["14.1", "users.alt_id"],
      ],
    );
  });

  test("a value is decided only where the parse tree and the catalog agree; users in mapping order; a verdict's mask is computed once", async () => {
    await loadSqlParser();
    const catalog = catalogFrom(
      [
        { tableOid: 10, attributeNumber: 1, schema: "public", table: "users", column: "id" },
        { tableOid: 10, attributeNumber: 2, schema: "public", table: "users", column: "email" },
        { tableOid: 10, attributeNumber: 3, schema: "public", table: "users", column: "alt_id" },
      ],
      mapping,
    );
    const { statements } = analyzeQuery("SELECT alt_id, 1, email, id, x.y FROM users, x", catalog.schema, { allowWrites: false, strict: false });
    const shape = (statements[0] as { shape: ResultShape }).shape;
    const plan = planResult([column(10, 3), column(0, 0), column(10, 2), column(10, 1), column(99, 1)], shape, catalog, mapping);
    assert.deepEqual(plan.groups, [[3, 0]], "one instance: users.id (order 0) before users.alt_id (order 1)");
    assert.deepEqual(plan.categories, ["identity", undefined, "contact", undefined, undefined]);
    const verdict: RowVerdict = { allowed: true, reason: "ALLOWED", categories: new Set(["contact"]) };
    const mask = maskFor(plan, verdict);
    assert.deepEqual(mask, { keep: Int8Array.from([0, 0, 1, 0, 0]), whole: false, nulled: 4 });
    assert.equal(maskFor(plan, verdict), mask);
    // The server says the third column is users.id, the parse tree says email: not decided (NULL).
    const disagreeing = planResult([column(10, 3), column(0, 0), column(10, 1), column(10, 1), column(99, 1)], shape, catalog, mapping);
    assert.equal(disagreeing.categories[2], undefined);
    // Without a shape (a cursor opened by server-side code) nothing is attributed.
    assert.deepEqual(planResult([column(10, 2), column(10, 1)], undefined, catalog, mapping).groups, []);
  });

  test("user ids from text and binary values; unknown binary types name no one", () => {
    const int8 = Buffer.alloc(8);
    int8.writeBigInt64BE(9007199254740993n);
    assert.equal(userIdFromValue(int8, 0, 8, 20, 1), "9007199254740993", "int8 ids keep every digit");
    assert.equal(userIdFromValue(hex("0000002a"), 0, 4, 23, 1), "42");
    assert.equal(userIdFromValue(hex("00112233445566778899aabbccddeeff"), 0, 16, 2950, 1), "00112233-4455-6677-8899-aabbccddeeff");
    assert.equal(userIdFromValue(Buffer.from("abc"), 0, 3, 25, 1), "abc");
    assert.equal(userIdFromValue(Buffer.from("abc"), 0, 3, 1700, 1), undefined, "numeric in binary");
    assert.equal(userIdFromValue(Buffer.from("42"), 0, 2, 1700, 0), "42", "any type in text");
    assert.equal(userIdFromValue(Buffer.alloc(0), 0, -1, 25, 0), undefined);
    // The memo reads exactly what Buffer reads, for every id and whatever shared its slot before.
    const memo = new UserIdMemo();
    const ids = [...Array.from({ length: 20_000 }, (_, i) => `user-${i}`), "é", "x".repeat(65), "", "\u{1F600}"].map((id) => Buffer.from(id));
    ids.push(hex("ff fe"), hex("fe ff"));
    for (let round = 0; round < 2; round++) {
      for (const id of ids) {
        const inside = Buffer.concat([hex("00"), id, hex("00")]);
        assert.equal(memo.text(inside, 1, 1 + id.length), id.toString("utf8"));
        assert.equal(userIdFromValue(inside, 1, id.length, 25, 0, memo), id.length === 0 ? undefined : id.toString("utf8"));
      }
    }
    // Names (latin1): two byte strings UTF-8 would read as the same replacement character stay two names.
    const names = new ByteStringMemo(64, "latin1", 64);
    for (let round = 0; round < 2; round++) {
      for (const name of [hex("ff"), hex("fe"), Buffer.from("P_0"), Buffer.from("x".repeat(65)), Buffer.alloc(0)])
        assert.equal(names.text(name, 0, name.length), name.toString("latin1"));
    }
    assert.notEqual(names.text(hex("ff"), 0, 1), names.text(hex("fe"), 0, 1));
  });

  test("errors keep their code and lose values; notices keep only severity and code", () => {
    const cast = sanitizeError(
      new Map([
        [ErrorField.Severity, "ERROR"],
        [ErrorField.Code, "22P02"],
        [ErrorField.Message, 'invalid input syntax for type integer: "secret-1"'],
        [ErrorField.Position, "8"],
      ]),
    );
    assert.equal(cast.get(ErrorField.Code), "22P02");
    assert.equal(cast.get(ErrorField.Position), "8");
    assert.ok(!cast.get(ErrorField.Message)!.includes("secret"));
    const unique = sanitizeError(
      new Map([
        [ErrorField.Code, "23505"],
        [ErrorField.Message, 'duplicate key value violates unique constraint "users_pkey"'],
        [ErrorField.Detail, "Key (id)=(secret-1) already exists."],
        [ErrorField.Constraint, "users_pkey"],
      ]),
    );
    // Constraint names can be made of data (dynamic SQL): integrity errors cross with their code and a fixed text.
    assert.equal(unique.get(ErrorField.Message), "duplicate key value violates a unique constraint");
    assert.equal(unique.has(ErrorField.Detail), false);
    assert.equal(unique.has(ErrorField.Constraint), false);
    const check = sanitizeError(
      new Map([
        [ErrorField.Code, "23514"],
        [ErrorField.Message, 'new row for relation "t" violates check constraint "adult@example.com"'],
        [ErrorField.Constraint, "adult@example.com"],
        [ErrorField.Table, "users"],
      ]),
      (field, name) => field === ErrorField.Table && name === "users",
    );
    assert.deepEqual(
      [check.get(ErrorField.Message), check.get(ErrorField.Table), check.has(ErrorField.Constraint)],
      ["new row violates a check constraint", "users", false],
      "a known table name crosses, the constraint name never",
    );
    const inFunction = sanitizeError(
      new Map([
        [ErrorField.Code, "42601"],
        [ErrorField.Message, 'syntax error at or near "secret"'],
        [ErrorField.Where, "PL/pgSQL function inline_code_block line 1 at EXECUTE"],
      ]),
    );
    assert.ok(!inFunction.get(ErrorField.Message)!.includes("secret"), "raised inside server-side code");
    assert.equal(
      sanitizeError(
        new Map([
          [ErrorField.Code, "42P01"],
          [ErrorField.Message, 'relation "secret" does not exist'],
        ]),
      )
        .get(ErrorField.Message)!
        .includes("secret"),
      false,
    );
    assert.equal(
      sanitizeError(
        new Map([
          [ErrorField.Code, "42601"],
          [ErrorField.Message, 'syntax error at or near "SELEC"'],
          [ErrorField.Position, "1"],
        ]),
      ).get(ErrorField.Message),
      'syntax error at or near "SELEC"',
      "about the client's own query text",
    );
    assert.ok(
      !sanitizeError(
        new Map([
          [ErrorField.Code, "42601"],
          [ErrorField.Message, 'no operand in tsquery: "secret-1 &"'],
        ]),
      )
        .get(ErrorField.Message)!
        .includes("secret"),
      "raised while running, with no position",
    );
    const raised = sanitizeError(
      new Map([
        [ErrorField.Code, "XY123"],
        [ErrorField.Message, "m"],
        [ErrorField.Column, "secret-1"],
        [ErrorField.Where, "PL/pgSQL function"],
      ]),
    );
    assert.deepEqual(
      [raised.get(ErrorField.Code), raised.has(ErrorField.Column)],
      ["P0001", false],
      "a chosen SQLSTATE and object names from RAISE do not cross",
    );
    assert.equal(
      sanitizeError(
        new Map([
          [ErrorField.Code, "40001"],
          [ErrorField.Message, "could not serialize access"],
        ]),
      ).get(ErrorField.Message),
      "could not serialize access",
    );
    const notice = sanitizeNotice(
      new Map([
        [ErrorField.Severity, "NOTICE"],
        [ErrorField.Code, "00000"],
        [ErrorField.Message, "secret-1"],
        [ErrorField.Detail, "x"],
      ]),
    );
    assert.deepEqual([...notice.keys()], [ErrorField.Severity, ErrorField.Code, ErrorField.Message]);
    assert.ok(!notice.get(ErrorField.Message)!.includes("secret"));
  });
});
