import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { PassThrough } from "node:stream";
import { parse as parseBackend, serialize } from "pg-protocol";
import type { BackendMessage } from "pg-protocol/dist/messages";
import { decodeBind, encodeBind } from "../../protocols/postgres/bind";
import { encodeBackendKeyData } from "../../protocols/postgres/backend-key-data";
import { encodeCommandComplete } from "../../protocols/postgres/command-complete";
import { encodeCopyData, encodeCopyDone, encodeCopyFail } from "../../protocols/postgres/copy";
import { encodeDataRow, encodeMaskedDataRow } from "../../protocols/postgres/data-row";
import { decodeDescribe, encodeDescribe } from "../../protocols/postgres/describe";
import { encodeErrorResponse, encodeNoticeResponse, errorFields, ErrorField } from "../../protocols/postgres/error-response";
import { decodeExecute, encodeExecute } from "../../protocols/postgres/execute";
import { FrameList } from "../../protocols/postgres/frames";
import { encodeParameterStatus } from "../../protocols/postgres/parameter-status";
import { decodeParse, encodeParse } from "../../protocols/postgres/parse";
import { decodePasswordMessage, encodePasswordMessage } from "../../protocols/postgres/password";
import { decodeQuery, encodeQuery } from "../../protocols/postgres/query";
import { encodeReadyForQuery } from "../../protocols/postgres/ready-for-query";
import { encodeRowDescription } from "../../protocols/postgres/row-description";
import { decodeStartup, encodeStartup, encodeSSLRequest } from "../../protocols/postgres/startup";
import { encodeFlush, encodeSync, encodeTerminate } from "../../protocols/postgres/sync";
import { encodeCancelRequest } from "../../protocols/postgres/cancel-request";
import { TransactionStatus } from "../../protocols/postgres/codes";

/**
 * pg-protocol (node-postgres's codec) as the reference for protocols/postgres/: its serializer
 * builds the frontend messages the proxy decodes, and its parser reads the backend messages the
 * proxy encodes. Two codecs written apart agreeing byte for byte keeps the hand-written one
 * (chosen for speed on the hot path) checked.
 */

/** The body of one whole frontend message (after its code and length). */
function bodyOf(message: Buffer): Buffer {
  const frames = new FrameList();
  assert.equal(frames.split(message, 1 << 20), message.length, "exactly one whole message");
  assert.equal(frames.count, 1);
  const frame = frames.read(0, { code: 0, start: 0, bodyStart: 0, end: 0 });
  return message.subarray(frame.bodyStart, frame.end);
}

/** What pg-protocol's parser reads from these bytes, fed in pieces of `piece` bytes (split buffers). */
async function referenceParse(bytes: Buffer, piece = bytes.length): Promise<BackendMessage[]> {
  const stream = new PassThrough();
  const messages: BackendMessage[] = [];
  const done = parseBackend(stream, (message) => messages.push(message));
  for (let at = 0; at < bytes.length; at += piece) stream.write(bytes.subarray(at, at + piece));
  stream.end();
  await done;
  return messages;
}

describe("PostgreSQL codec against pg-protocol", () => {
  test("frontend messages serialized by pg-protocol decode to what was sent", () => {
    assert.equal(decodeQuery(bodyOf(serialize.query("SELECT 'é' AS x"))), "SELECT 'é' AS x");
    assert.deepEqual(decodeParse(bodyOf(serialize.parse({ name: "s1", text: "SELECT $1::int", types: [23, 25] }))), {
      statement: "s1",
      sql: "SELECT $1::int",
      parameterTypes: [23, 25],
    });
    assert.deepEqual(decodeBind(bodyOf(serialize.bind({ portal: "p", statement: "s1", values: ["abc", null, Buffer.from([1, 2])], binary: true }))), {
      portal: "p",
      statement: "s1",
      parameterFormats: [0, 0, 1],
      parameters: [Buffer.from("abc"), null, Buffer.from([1, 2])],
      resultFormats: [1],
    });
    assert.deepEqual(decodeExecute(bodyOf(serialize.execute({ portal: "p", rows: 7 }))), { portal: "p", maxRows: 7 });
    assert.deepEqual(decodeDescribe(bodyOf(serialize.describe({ type: "S", name: "s1" }))), { kind: 0x53, name: "s1" });
    assert.deepEqual(decodeDescribe(bodyOf(serialize.describe({ type: "P", name: "" }))), { kind: 0x50, name: "" });
    assert.equal(decodePasswordMessage(bodyOf(serialize.password("pw"))), "pw");
    const startup = serialize.startup({ user: "u", database: "app", application_name: "t" });
    const decoded = decodeStartup(startup);
    assert.equal(decoded.kind, "startup");
    assert.deepEqual(decoded.kind === "startup" ? Object.fromEntries(decoded.parameters) : undefined, {
      user: "u",
      database: "app",
      application_name: "t",
      client_encoding: "UTF8",
    });
  });

  test("frontend messages the proxy writes are the bytes pg-protocol writes", () => {
    assert.deepEqual(encodeQuery("SELECT 1"), serialize.query("SELECT 1"));
    assert.deepEqual(encodeParse({ statement: "s", sql: "SELECT $1", parameterTypes: [25] }), serialize.parse({ name: "s", text: "SELECT $1", types: [25] }));
    assert.deepEqual(
      encodeBind({ portal: "", statement: "s", parameterFormats: [0], parameters: [Buffer.from("x")], resultFormats: [0] }),
      serialize.bind({ statement: "s", values: ["x"] }),
    );
    assert.deepEqual(encodeExecute({ portal: "p", maxRows: 3 }), serialize.execute({ portal: "p", rows: 3 }));
    assert.deepEqual(encodeDescribe({ kind: 0x50, name: "p" }), serialize.describe({ type: "P", name: "p" }));
    assert.deepEqual(encodeSync(), serialize.sync());
    assert.deepEqual(encodeFlush(), serialize.flush());
    assert.deepEqual(encodeTerminate(), serialize.end());
    assert.deepEqual(encodePasswordMessage("pw"), serialize.password("pw"));
    assert.deepEqual(encodeSSLRequest(), serialize.requestSsl());
    assert.deepEqual(encodeCancelRequest(42, 7), serialize.cancel(42, 7));
    assert.deepEqual(encodeCopyData(Buffer.from("a\tb\n")), serialize.copyData(Buffer.from("a\tb\n")));
    assert.deepEqual(encodeCopyDone(), serialize.copyDone());
    assert.deepEqual(encodeCopyFail("stop"), serialize.copyFail("stop"));
    assert.deepEqual(decodeStartup(encodeStartup(new Map([["user", "u"]]))).kind, "startup");
  });

  test("backend messages the proxy writes read back in pg-protocol's parser, whole and split at every byte", async () => {
    const columns = [
      { name: "id", tableOid: 16384, attributeNumber: 1, typeOid: 25, typeSize: -1, typeModifier: -1, format: 0 },
      { name: "?column?", tableOid: 0, attributeNumber: 0, typeOid: 25, typeSize: -1, typeModifier: -1, format: 1 },
    ];
    const row = encodeDataRow([Buffer.from("adult"), Buffer.from("secret")]);
    const bytes = Buffer.concat([
      encodeParameterStatus("application_name", "psql"),
      encodeBackendKeyData({ processId: 11, secretKey: 22 }),
      encodeRowDescription(columns),
      row,
      encodeMaskedDataRow(row, [1, 0]),
      encodeMaskedDataRow(encodeDataRow([Buffer.from("adult"), Buffer.from("x"), Buffer.from("hidden")]), [1, 0, -1]),
      encodeCommandComplete("SELECT 3"),
      encodeNoticeResponse(
        new Map([
          [ErrorField.Severity, "NOTICE"],
          [ErrorField.Code, "00000"],
          [ErrorField.Message, "notice 00000"],
        ]),
      ),
      encodeErrorResponse(errorFields("ERROR", "25006", "INSERT is not allowed")),
      encodeReadyForQuery(TransactionStatus.Idle),
    ]);
    const expected = [
      { name: "parameterStatus", parameterName: "application_name", parameterValue: "psql" },
      { name: "backendKeyData", processID: 11, secretKey: 22 },
      {
        name: "rowDescription",
        fields: [
          ["id", 16384, 1, 25, -1, -1, "text"],
          ["?column?", 0, 0, 25, -1, -1, "binary"],
        ],
      },
      { name: "dataRow", fields: ["adult", "secret"] },
      { name: "dataRow", fields: ["adult", null] },
      { name: "dataRow", fields: ["adult", null], note: "the hidden column left out" },
      { name: "commandComplete", text: "SELECT 3" },
      { name: "notice", code: "00000" },
      { name: "error", code: "25006", message: "INSERT is not allowed" },
      { name: "readyForQuery", status: "I" },
    ];
    const summary = (m: BackendMessage & Record<string, unknown>) => {
      switch (m.name) {
        case "rowDescription":
          return {
            name: m.name,
            fields: (m.fields as Array<Record<string, unknown>>).map((f) => [
              f.name,
              f.tableID,
              f.columnID,
              f.dataTypeID,
              f.dataTypeSize,
              f.dataTypeModifier,
              f.format,
            ]),
          };
        case "dataRow":
          return { name: m.name, fields: m.fields };
        case "notice":
          return { name: m.name, code: m.code };
        case "error":
          return { name: m.name, code: m.code, message: m.message };
        case "readyForQuery":
          return { name: m.name, status: m.status };
        case "commandComplete":
          return { name: m.name, text: m.text };
        case "backendKeyData":
          return { name: m.name, processID: m.processID, secretKey: m.secretKey };
        default:
          return { name: m.name, parameterName: m.parameterName, parameterValue: m.parameterValue };
      }
    };
    const want = expected.map(({ note: _note, ...rest }) => rest);
    for (const piece of [bytes.length, 1, 3, 7]) {
      const read = (await referenceParse(bytes, piece)).map((m) => summary(m as BackendMessage & Record<string, unknown>));
      assert.deepEqual(read, want, `pieces of ${piece} bytes`);
    }
  });
});
