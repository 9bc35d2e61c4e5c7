import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { decodeAuthMoreData, encodeAuthMoreData } from "../../protocols/mysql/auth-more-data";
import { decodeAuthSwitchRequest, encodeAuthSwitchRequest, scrambleOf } from "../../protocols/mysql/auth-switch";
import { decodeBareCommand, encodeBareCommand } from "../../protocols/mysql/bare-commands";
import { decodeBinaryRow, encodeBinaryRow, maskBinaryRow } from "../../protocols/mysql/binary-row";
import { binaryValueExtent } from "../../protocols/mysql/binary-value-length";
import { Capability, hasCapability, MariaDbCapability } from "../../protocols/mysql/capabilities";
import { decodeChangeUser, encodeChangeUser } from "../../protocols/mysql/change-user";
import { decodeColumnCount, encodeColumnCount } from "../../protocols/mysql/column-count";
import { decodeColumnDefinition, encodeColumnDefinition, type ColumnDefinition } from "../../protocols/mysql/column-definition";
import { ColumnType } from "../../protocols/mysql/column-types";
import { Command, commandName, commandOf, isReplicationOrAdministrationCommand } from "../../protocols/mysql/commands";
import { decodeEofPacket, encodeEofPacket, isEofPacket } from "../../protocols/mysql/eof-packet";
import { decodeErrPacket, decodeProgressReport, encodeErrPacket, encodeProgressReport, isProgressReport } from "../../protocols/mysql/err-packet";
import { decodeHandshake, encodeHandshake, type Handshake } from "../../protocols/mysql/handshake";
import { decodeHandshakeResponse, encodeHandshakeResponse, type HandshakeResponse } from "../../protocols/mysql/handshake-response";
import { decodeLocalInfileRequest, encodeLocalInfileRequest, isLocalInfileRequest } from "../../protocols/mysql/local-infile";
import { encodeLengthEncodedBytes, lengthEncodedIntegerSize, readLengthEncodedInteger, writeLengthEncodedInteger } from "../../protocols/mysql/length-encoded";
import { decodeOkPacket, encodeOkPacket, OkHeader } from "../../protocols/mysql/ok-packet";
import { encodePacket } from "../../protocols/mysql/packets";
import { ProtocolError } from "../../protocols/mysql/protocol-error";
import { decodeQuery, encodeQuery } from "../../protocols/mysql/query";
import { responseKind } from "../../protocols/mysql/response-kind";
import { decodeResultsetEnd, isResultsetEnd } from "../../protocols/mysql/resultset-end";
import { newRowValues } from "../../protocols/mysql/row-values";
import {
  decodeSchemaChange,
  decodeSessionState,
  decodeSystemVariable,
  encodeSchemaChange,
  encodeSessionState,
  SessionStateType,
} from "../../protocols/mysql/session-state";
import { decodeSetOption, encodeSetOption, SetOption } from "../../protocols/mysql/set-option";
import { decodeSslRequest, encodeSslRequest, isSslRequest } from "../../protocols/mysql/ssl-request";
import {
  decodeStatementIdCommand,
  decodeStmtFetch,
  decodeStmtSendLongData,
  encodeStatementIdCommand,
  encodeStmtFetch,
  encodeStmtSendLongData,
} from "../../protocols/mysql/statement-commands";
import { ServerStatus } from "../../protocols/mysql/status-flags";
import { CursorFlag, decodeStmtExecute, encodeStmtExecute, type StmtExecute } from "../../protocols/mysql/stmt-execute";
import { decodeStmtPrepareOk, encodeStmtPrepareOk } from "../../protocols/mysql/stmt-prepare-ok";
import { decodeTextCommand, encodeTextCommand } from "../../protocols/mysql/text-commands";
import { decodeTextRow, encodeTextRow, maskTextRow } from "../../protocols/mysql/text-row";

/**
 * Byte fixtures for protocols/mysql/. Where a fixture says "MySQL docs" it is the example the
 * MySQL client/server protocol documentation prints for that packet (dev.mysql.com/doc/dev/
 * mysql-server/latest/page_protocol_*.html), header included; the others are built field by field
 * from the layouts there and in MariaDB's protocol pages, with the arithmetic in comments.
 */

const hex = (text: string) => Buffer.from(text.replace(/\s+/g, ""), "hex");
/** The payload of a single packet written with its 4-byte header (as the docs print them). */
function payloadOf(packet: Buffer): Buffer {
  assert.equal(packet.readUIntLE(0, 3), packet.length - 4, "the fixture's length header matches its payload");
  return packet.subarray(4);
}
const ascii = (text: string) => Buffer.from(text, "latin1");

/** What a MySQL 8 client agrees to, for decoders that depend on capabilities. */
const protocol41 = Capability.Protocol41 | Capability.SecureConnection | Capability.PluginAuth | Capability.Transactions;

describe("MySQL codec: integers and strings", () => {
  test("length-encoded integers: 1, 3, 4 and 9 bytes at the 0xfb, 2^16 and 2^24 boundaries", () => {
    const cases: Array<[number | bigint, string]> = [
      [0, "00"],
      [250, "fa"],
      [251, "fc fb00"],
      [0xffff, "fc ffff"],
      [0x10000, "fd 000001"],
      [0xffffff, "fd ffffff"],
      [0x1000000, "fe 0000000100000000"],
      [Number.MAX_SAFE_INTEGER, "fe ffffffffffff1f00"],
      [0xffffffffffffffffn, "fe ffffffffffffffff"],
    ];
    for (const [value, bytes] of cases) {
      const out = Buffer.alloc(lengthEncodedIntegerSize(value));
      assert.equal(writeLengthEncodedInteger(out, 0, value), out.length);
      assert.deepEqual(out, hex(bytes), `${value}`);
      assert.deepEqual(readLengthEncodedInteger(out, 0, out.length), { value, next: out.length });
    }
    assert.throws(() => readLengthEncodedInteger(hex("fb"), 0, 1), ProtocolError, "0xfb is NULL, not an integer");
    assert.throws(() => readLengthEncodedInteger(hex("ff"), 0, 1), ProtocolError, "0xff starts an ERR packet");
    assert.throws(() => readLengthEncodedInteger(hex("fd 0000"), 0, 3), ProtocolError, "cut short");
    assert.throws(() => readLengthEncodedInteger(hex("fc 00 00"), 0, 2), ProtocolError, "the end bound is respected, not the buffer's");
    assert.throws(() => lengthEncodedIntegerSize(-1), ProtocolError);
    assert.deepEqual(encodeLengthEncodedBytes(Buffer.from("abc")), hex("03 616263"));
    assert.equal(encodeLengthEncodedBytes(Buffer.alloc(300)).subarray(0, 3).toString("hex"), "fc2c01");
  });
});

describe("MySQL codec: connection phase", () => {
  test("HandshakeV10 from a MySQL 5.5 server without CLIENT_PLUGIN_AUTH (MySQL docs)", () => {
    const packet = hex(`36 00 00 00 0a 35 2e 35 2e 32 2d 6d 32 00 0b 00
      00 00 64 76 48 40 49 2d 43 4a 00 ff f7 08 02 00
      00 00 00 00 00 00 00 00 00 00 00 00 00 2a 34 64
      7c 63 5a 77 6b 34 5e 5d 3a 00`);
    const handshake = decodeHandshake(payloadOf(packet));
    assert.deepEqual(handshake, {
      protocolVersion: 10,
      serverVersion: "5.5.2-m2",
      connectionId: 11,
      authPluginData: ascii("dvH@I-CJ*4d|cZwk4^]:"),
      capabilities: 0xf7ff,
      mariaDbCapabilities: 0,
      characterSet: 8,
      statusFlags: ServerStatus.Autocommit,
      authPluginName: "",
    });
    assert.deepEqual(encodeHandshake(handshake), payloadOf(packet), "re-encoded byte for byte");
  });

  test("HandshakeV10 from MariaDB: CLIENT_MYSQL clear, extended capabilities in the filler, plugin name", () => {
    const scramble = ascii("0123456789abcdefghij");
    const capabilities = (0xf7fe | Capability.PluginAuth | Capability.SessionTrack | Capability.DeprecateEof) >>> 0;
    const payload = hex(`0a ${ascii("5.5.5-10.11.6-MariaDB").toString("hex")} 00 07000000 ${scramble.subarray(0, 8).toString("hex")} 00
      fef7 2d 0200 8801 15 000000000000 0d000000 ${scramble.subarray(8).toString("hex")} 00
      ${ascii("mysql_native_password").toString("hex")} 00`);
    const handshake: Handshake = {
      protocolVersion: 10,
      serverVersion: "5.5.5-10.11.6-MariaDB",
      connectionId: 7,
      authPluginData: scramble,
      capabilities,
      mariaDbCapabilities: MariaDbCapability.Progress | MariaDbCapability.StmtBulkOperations | MariaDbCapability.ExtendedMetadata,
      characterSet: 45,
      statusFlags: ServerStatus.Autocommit,
      authPluginName: "mysql_native_password",
    };
    assert.equal(capabilities >>> 16, 0x0188, "upper capability bytes 88 01");
    assert.deepEqual(encodeHandshake(handshake), payload);
    assert.deepEqual(decodeHandshake(payload), handshake);
    assert.equal(hasCapability(capabilities, Capability.LongPassword), false);
    // The same with CLIENT_MYSQL set: the 4 bytes are filler and the extended capabilities are not read.
    const mysql = { ...handshake, capabilities: (capabilities | Capability.LongPassword) >>> 0, mariaDbCapabilities: 0 };
    assert.deepEqual(decodeHandshake(encodeHandshake(mysql)), mysql);
    assert.deepEqual(encodeHandshake(mysql).subarray(1 + 22 + 4 + 9 + 2 + 1 + 2 + 2 + 1 + 6, 1 + 22 + 4 + 9 + 2 + 1 + 2 + 2 + 1 + 10), hex("00000000"));
    // A MySQL 5.5 server that leaves out the plugin name's NUL: the name runs to the end.
    const withoutNul = encodeHandshake(handshake).subarray(0, -1);
    assert.equal(decodeHandshake(withoutNul).authPluginName, "mysql_native_password");
    assert.throws(() => decodeHandshake(hex("09 00")), ProtocolError, "protocol 9 is not supported");
  });

  test("HandshakeResponse41 (MySQL docs): user, 20-byte native password response, database, plugin", () => {
    const packet = hex(`54 00 00 01 8d a6 0f 00 00 00 00 01 08 00 00 00
      00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00
      00 00 00 00 70 61 6d 00 14 ab 09 ee f6 bc b1 32
      3e 61 14 38 65 c0 99 1d 95 7d 75 d4 47 74 65 73
      74 00 6d 79 73 71 6c 5f 6e 61 74 69 76 65 5f 70
      61 73 73 77 6f 72 64 00`);
    assert.equal(packet[3], 1, "sequence id 1: the answer to the handshake's 0");
    const response = decodeHandshakeResponse(payloadOf(packet));
    assert.deepEqual(response, {
      capabilities: 0x000fa68d,
      maxPacketSize: 16 * 1024 * 1024,
      characterSet: 8,
      mariaDbCapabilities: 0,
      username: "pam",
      authResponse: hex("ab09eef6bcb1323e61143865c0991d957d75d447"),
      database: "test",
      authPluginName: "mysql_native_password",
    });
    assert.deepEqual(encodeHandshakeResponse(response), payloadOf(packet));
  });

  test("HandshakeResponse41 with lenenc auth data, attributes and MariaDB extended capabilities; SSLRequest", () => {
    const response: HandshakeResponse = {
      capabilities: (protocol41 | Capability.PluginAuthLenencClientData | Capability.ConnectAttrs | Capability.DeprecateEof) >>> 0,
      maxPacketSize: 0,
      characterSet: 224,
      mariaDbCapabilities: MariaDbCapability.ExtendedMetadata,
      username: "alice",
      authResponse: Buffer.alloc(300, 7),
      authPluginName: "client_ed25519",
      attributes: new Map([["_client_name", "t"]]),
    };
    const payload = encodeHandshakeResponse(response);
    // 32 fixed bytes, "alice\0", fc 2c01 + 300 bytes, plugin name, attributes: 0f 0c "_client_name" 01 "t".
    assert.deepEqual(payload.subarray(28, 32), hex("08000000"), "MariaDB's capabilities in the last 4 filler bytes");
    assert.deepEqual(payload.subarray(38, 41), hex("fc2c01"));
    assert.deepEqual(payload.subarray(payload.length - 16), hex(`0f 0c ${ascii("_client_name").toString("hex")} 01 74`));
    assert.deepEqual(decodeHandshakeResponse(payload), response);
    assert.throws(() => decodeHandshakeResponse(payload.subarray(0, 40)), ProtocolError);
    assert.throws(() => encodeHandshakeResponse({ ...response, capabilities: protocol41 }), ProtocolError, "over 255 bytes needs lenenc");

    const ssl = encodeSslRequest({ capabilities: protocol41, maxPacketSize: 0x1000000, characterSet: 45, mariaDbCapabilities: 0 });
    assert.deepEqual(ssl, hex(`00 aa 08 00 00 00 00 01 2d ${"00".repeat(23)}`), "CLIENT_SSL added, 23 zero bytes");
    assert.equal(isSslRequest(ssl), true);
    assert.equal(isSslRequest(payload), false, "a whole response is longer than 32 bytes");
    assert.deepEqual(decodeSslRequest(ssl), {
      capabilities: (protocol41 | Capability.Ssl) >>> 0,
      maxPacketSize: 0x1000000,
      characterSet: 45,
      mariaDbCapabilities: 0,
    });
  });

  test("AuthSwitchRequest, AuthMoreData and the caching_sha2 status bytes", () => {
    // 0xfe, "mysql_native_password\0", 20 bytes of scramble and the NUL servers append.
    const scramble = ascii("ABCDEFGHIJKLMNOPQRST");
    const request = hex(`fe ${ascii("mysql_native_password").toString("hex")} 00 ${scramble.toString("hex")} 00`);
    const decoded = decodeAuthSwitchRequest(request);
    assert.equal(decoded.pluginName, "mysql_native_password");
    assert.deepEqual(scrambleOf(decoded.pluginData), scramble);
    assert.deepEqual(encodeAuthSwitchRequest(decoded), request);
    assert.deepEqual(decodeAuthSwitchRequest(hex("fe")), { pluginName: "mysql_old_password", pluginData: Buffer.alloc(0) }, "OldAuthSwitchRequest");
    assert.throws(() => decodeAuthSwitchRequest(hex("fe 6d79")), ProtocolError, "an unterminated plugin name");
    assert.deepEqual(decodeAuthMoreData(hex("01 03")), hex("03"), "fast auth success");
    assert.deepEqual(encodeAuthMoreData(hex("04")), hex("01 04"), "perform full authentication");
    assert.throws(() => decodeAuthMoreData(hex("02 03")), ProtocolError);
  });
});

describe("MySQL codec: responses", () => {
  test("OK (MySQL docs): 0 rows, autocommit; with affected rows, insert id and info", () => {
    const ok = decodeOkPacket(payloadOf(hex("07 00 00 02 00 00 00 02 00 00 00")), protocol41);
    assert.deepEqual(ok, { header: 0, affectedRows: 0, lastInsertId: 0, statusFlags: ServerStatus.Autocommit, warnings: 0, info: "" });
    assert.equal(responseKind(hex("00 00 00 02 00 00 00")), "ok");
    // 300 affected rows (fc 2c01), insert id 5, in a transaction, 1 warning, info as string<EOF>.
    const payload = hex(`00 fc2c01 05 0100 0100 ${ascii("Rows matched: 300").toString("hex")}`);
    const full = { header: 0, affectedRows: 300, lastInsertId: 5, statusFlags: ServerStatus.InTransaction, warnings: 1, info: "Rows matched: 300" };
    assert.deepEqual(decodeOkPacket(payload, protocol41), full);
    assert.deepEqual(encodeOkPacket(full, protocol41), payload);
    // Under CLIENT_SESSION_TRACK the info is length-encoded.
    const tracked = protocol41 | Capability.SessionTrack;
    assert.deepEqual(encodeOkPacket(full, tracked), hex(`00 fc2c01 05 0100 0100 11 ${ascii("Rows matched: 300").toString("hex")}`));
    assert.deepEqual(decodeOkPacket(encodeOkPacket(full, tracked), tracked), full);
    assert.deepEqual(decodeOkPacket(hex("00 00 00 0200 0000"), tracked).info, "", "no info at all when empty");
    assert.throws(() => decodeOkPacket(hex("00 00 00 0200"), protocol41), ProtocolError, "cut short before the warnings");
  });

  test("OK with session-state changes: a system variable and the schema (CLIENT_SESSION_TRACK)", () => {
    const tracked = protocol41 | Capability.SessionTrack;
    // status 0x4002: SESSION_STATE_CHANGED | AUTOCOMMIT; empty info; block of 0x11 bytes: type 0, 0x0f bytes: 0a "autocommit" 03 "OFF".
    const payload = hex(`00 00 00 0240 0000 00 11 00 0f 0a ${ascii("autocommit").toString("hex")} 03 ${ascii("OFF").toString("hex")}`);
    const ok = decodeOkPacket(payload, tracked);
    assert.equal(ok.statusFlags, ServerStatus.SessionStateChanged | ServerStatus.Autocommit);
    const entries = decodeSessionState(ok.sessionStateChanges!);
    assert.equal(entries.length, 1);
    assert.equal(entries[0]!.type, SessionStateType.SystemVariables);
    assert.deepEqual(decodeSystemVariable(entries[0]!.data), { name: "autocommit", value: "OFF" });
    assert.deepEqual(encodeOkPacket(ok, tracked), payload);
    // USE test: a SCHEMA entry 01, 05 bytes: 04 "test".
    const schema = encodeSessionState([{ type: SessionStateType.Schema, data: encodeSchemaChange("test") }]);
    assert.deepEqual(schema, hex(`01 05 04 ${ascii("test").toString("hex")}`));
    assert.equal(decodeSchemaChange(decodeSessionState(schema)[0]!.data), "test");
    assert.throws(() => encodeOkPacket({ ...ok, sessionStateChanges: undefined as unknown as Buffer }, tracked), ProtocolError, "the flag without the data");
    assert.throws(() => decodeSessionState(hex("01 05 04 74")), ProtocolError, "an entry longer than its block");
  });

  test("EOF (MySQL docs), the 0xfe OK that ends rows under CLIENT_DEPRECATE_EOF, and a 0xfe row that is neither", () => {
    const eof = payloadOf(hex("05 00 00 05 fe 00 00 02 00"));
    assert.equal(isEofPacket(eof), true);
    assert.deepEqual(decodeEofPacket(eof, protocol41), { warnings: 0, statusFlags: ServerStatus.Autocommit });
    assert.deepEqual(encodeEofPacket({ warnings: 3, statusFlags: ServerStatus.MoreResultsExist }, protocol41), hex("fe 0300 0800"));
    assert.deepEqual(decodeResultsetEnd(eof, protocol41), { warnings: 0, statusFlags: ServerStatus.Autocommit });
    const deprecateEof = protocol41 | Capability.DeprecateEof;
    const okEnd = encodeOkPacket(
      {
        header: OkHeader.EndOfResultset,
        affectedRows: 0,
        lastInsertId: 0,
        statusFlags: ServerStatus.Autocommit | ServerStatus.MoreResultsExist,
        warnings: 2,
        info: "",
      },
      deprecateEof,
    );
    assert.deepEqual(okEnd, hex("fe 00 00 0a00 0200"));
    assert.equal(isResultsetEnd(okEnd, deprecateEof), true);
    assert.deepEqual(decodeResultsetEnd(okEnd, deprecateEof), { warnings: 2, statusFlags: 0x000a, info: "", affectedRows: 0, lastInsertId: 0 });
    // A text row whose first value is 2^24 bytes starts with fe (an 8-byte length) but is a whole packet long.
    const bigRowStart = Buffer.alloc(0xffffff, 0);
    bigRowStart[0] = 0xfe;
    assert.equal(isResultsetEnd(bigRowStart, deprecateEof), false);
    assert.equal(isResultsetEnd(hex("fe 0000000000000000 00"), protocol41), false, "9 bytes is not an EOF");
  });

  test("ERR (MySQL docs): code, '#' and SQLSTATE, message; without the marker; MariaDB progress reports", () => {
    const payload = payloadOf(hex("17 00 00 01 ff 48 04 23 48 59 30 30 30 4e 6f 20 74 61 62 6c 65 73 20 75 73 65 64"));
    assert.equal(responseKind(payload), "err");
    assert.deepEqual(decodeErrPacket(payload), { code: 1096, sqlState: "HY000", message: "No tables used" });
    assert.deepEqual(encodeErrPacket({ code: 1096, sqlState: "HY000", message: "No tables used" }), payload);
    // Before the capabilities are agreed (a refused host) MySQL sends no marker.
    const refused = hex(`ff 6a04 ${ascii("Host '10.0.0.9' is not allowed").toString("hex")}`);
    assert.deepEqual(decodeErrPacket(refused), { code: 1130, message: "Host '10.0.0.9' is not allowed" });
    assert.deepEqual(encodeErrPacket({ code: 1130, message: "Host '10.0.0.9' is not allowed" }), refused);
    assert.throws(() => encodeErrPacket({ code: 1, sqlState: "HY00", message: "" }), ProtocolError, "four characters");
    assert.throws(() => encodeErrPacket({ code: 1, sqlState: "HY00€", message: "" }), ProtocolError, "a character of two bytes");
    // ff ffff, 1 string, stage 1 of 2, 12.5% (12500 thousandths: d4 30 00), "copy".
    const progress = hex(`ff ffff 01 01 02 d43000 04 ${ascii("copy").toString("hex")}`);
    assert.equal(isProgressReport(progress), true);
    assert.deepEqual(decodeProgressReport(progress), { stage: 1, maxStage: 2, progress: 12500, info: "copy" });
    assert.deepEqual(encodeProgressReport({ stage: 1, maxStage: 2, progress: 12500, info: "copy" }), progress);
    assert.throws(() => decodeErrPacket(progress), ProtocolError, "a progress report is not an error");
  });

  test("LOCAL INFILE request (0xfb + file name) is recognised as the answer to a COM_QUERY", () => {
    const request = hex(`fb ${ascii("/etc/passwd").toString("hex")}`);
    assert.equal(responseKind(request), "local-infile");
    assert.equal(isLocalInfileRequest(request), true);
    assert.equal(decodeLocalInfileRequest(request).toString(), "/etc/passwd");
    assert.deepEqual(encodeLocalInfileRequest("/etc/passwd"), request);
  });
});

describe("MySQL codec: resultsets", () => {
  test("a text resultset (MySQL docs): column count, ColumnDefinition41, EOF, row, EOF", () => {
    const stream = hex(`01 00 00 01 01
      27 00 00 02 03 64 65 66 00 00 00 11 40 40 76 65
      72 73 69 6f 6e 5f 63 6f 6d 6d 65 6e 74 00 0c 08
      00 1c 00 00 00 fd 00 00 1f 00 00
      05 00 00 03 fe 00 00 02 00
      1d 00 00 04 1c 4d 79 53 51 4c 20 43 6f 6d 6d 75
      6e 69 74 79 20 53 65 72 76 65 72 20 28 47 50 4c
      29
      05 00 00 05 fe 00 00 02 00`);
    const packets: Buffer[] = [];
    for (let at = 0; at < stream.length; ) {
      const length = stream.readUIntLE(at, 3);
      packets.push(stream.subarray(at + 4, at + 4 + length));
      at += 4 + length;
    }
    assert.equal(packets.length, 5);
    assert.equal(responseKind(packets[0]!), "resultset");
    assert.deepEqual(decodeColumnCount(packets[0]!, protocol41), { columnCount: 1, metadataFollows: true });
    const column = decodeColumnDefinition(packets[1]!);
    assert.deepEqual(column, {
      catalog: "def",
      schema: "",
      table: "",
      orgTable: "",
      name: "@@version_comment",
      orgName: "",
      characterSet: 8,
      columnLength: 28,
      type: ColumnType.VarString,
      flags: 0,
      decimals: 0x1f,
    });
    assert.deepEqual(encodeColumnDefinition(column), packets[1]);
    assert.equal(isEofPacket(packets[2]!), true);
    const row = decodeTextRow(packets[3]!, 1, newRowValues(1));
    assert.equal(packets[3]!.toString("utf8", row.starts[0], row.starts[0]! + row.lengths[0]!), "MySQL Community Server (GPL)");
    assert.equal(isResultsetEnd(packets[4]!, protocol41), true);
    assert.deepEqual(encodeColumnCount({ columnCount: 300, metadataFollows: true }, protocol41), hex("fc2c01"));
    assert.deepEqual(encodeColumnCount({ columnCount: 2, metadataFollows: false }, protocol41 | Capability.OptionalResultsetMetadata), hex("02 00"));
    assert.throws(() => decodeColumnCount(hex("00"), protocol41), ProtocolError, "zero columns");
  });

  test("ColumnDefinition41 of a table column, and MariaDB's extended metadata block", () => {
    const column: ColumnDefinition = {
      catalog: "def",
      schema: "app",
      table: "u",
      orgTable: "users",
      name: "mail",
      orgName: "email",
      characterSet: 45,
      columnLength: 1020,
      type: ColumnType.VarString,
      flags: 0x1001,
      decimals: 0,
    };
    // 03"def" 03"app" 01"u" 05"users" 04"mail" 05"email" 0c 2d00 fc030000 fd 0110 00 0000
    const payload = hex(`03 646566 03 617070 01 75 05 7573657273 04 6d61696c 05 656d61696c 0c 2d00 fc030000 fd 0110 00 0000`);
    assert.deepEqual(encodeColumnDefinition(column), payload);
    assert.deepEqual(decodeColumnDefinition(payload), column);
    const uuid = { ...column, type: ColumnType.String, extendedTypeName: "uuid", extendedFormat: "json" };
    const extended = encodeColumnDefinition(uuid, { mariaDbExtendedMetadata: true });
    // After org_name: 0c bytes: 00 04"uuid" 01 04"json".
    assert.deepEqual(extended.subarray(payload.length - 13, payload.length), hex("0c 00 04 75756964 01 04 6a736f6e"));
    assert.deepEqual(decodeColumnDefinition(extended, { mariaDbExtendedMetadata: true }), uuid);
    assert.throws(
      () => decodeColumnDefinition(payload, { mariaDbExtendedMetadata: true }),
      ProtocolError,
      "read without the block, the fixed fields are misplaced",
    );
    assert.throws(() => decodeColumnDefinition(hex(`03 646566 00 00 00 00 00 0b 2d00 fc030000 fd 0110 00 00`)), ProtocolError, "fixed-fields length 11");
  });

  test("text rows: NULL as 0xfb, values located by offset, a row re-encoded with values set to NULL or left out", () => {
    const values = [Buffer.from("u1"), null, Buffer.alloc(0), Buffer.from("secret"), Buffer.alloc(300, 0x78), null];
    const row = encodeTextRow(values);
    assert.deepEqual(row.subarray(0, 15), hex("02 7531 fb 00 06 736563726574 fc2c01"));
    const located = decodeTextRow(row, values.length, newRowValues(1));
    assert.deepEqual([...located.lengths.subarray(0, 6)], [2, -1, 0, 6, 300, -1]);
    assert.equal(row.toString("utf8", located.starts[3], located.starts[3]! + 6), "secret");
    for (let mask = 0; mask < 1 << values.length; mask++) {
      const keep = values.map((_, i) => (mask & (1 << i)) !== 0);
      assert.deepEqual(maskTextRow(row, values.length, keep), encodeTextRow(values.map((v, i) => (keep[i] ? v : null))), `mask ${mask}`);
    }
    assert.deepEqual(maskTextRow(row, values.length, [1, -1, 1, 0, -1, 1]), encodeTextRow([values[0]!, values[2]!, null, null]));
    assert.throws(() => decodeTextRow(hex("05 6162"), 1, newRowValues()), ProtocolError, "a value longer than its packet");
    assert.throws(() => decodeTextRow(hex("01 61 01 62"), 1, newRowValues()), ProtocolError, "bytes after the last value");
    assert.throws(() => decodeTextRow(hex("01 61"), 2, newRowValues()), ProtocolError, "fewer values than columns");
    assert.throws(() => maskTextRow(hex("01 61 01 62"), 1, [true]), ProtocolError);
  });

  test("binary rows (MySQL docs example, then every type): NULL bitmap at offset 2, per-type lengths", () => {
    // The docs' row: header 00, bitmap 00, "foobar".
    const docs = payloadOf(hex("09 00 00 04 00 00 06 66 6f 6f 62 61 72"));
    const one = decodeBinaryRow(docs, [ColumnType.VarString], newRowValues());
    assert.equal(docs.toString("utf8", one.starts[0], one.starts[0]! + one.lengths[0]!), "foobar");
    // Values from the docs' ProtocolBinary pages: DATETIME 2010-10-17 19:27:30.000001, TIME -120d 19:27:30.000001, DOUBLE 10.2.
    const types = [
      ColumnType.Tiny,
      ColumnType.Short,
      ColumnType.Year,
      ColumnType.Long,
      ColumnType.Int24,
      ColumnType.Float,
      ColumnType.LongLong,
      ColumnType.Double,
      ColumnType.DateTime,
      ColumnType.Time,
      ColumnType.Date,
      ColumnType.Timestamp,
      ColumnType.NewDecimal,
      ColumnType.VarString,
      ColumnType.Blob,
      ColumnType.Json,
      ColumnType.Bit,
      ColumnType.Geometry,
      ColumnType.Enum,
      ColumnType.Null,
    ];
    const contents: Array<Buffer | null> = [
      hex("01"),
      hex("0100"),
      hex("da07"),
      hex("01000000"),
      hex("01000000"),
      hex("0000803f"),
      hex("0100000000000000"),
      hex("666666666666 2440"),
      hex("da07 0a 11 13 1b 1e 01000000"),
      hex("01 78000000 13 1b 1e 01000000"),
      hex("da07 0a 11"),
      hex(""),
      ascii("3.14"),
      ascii("hi"),
      Buffer.alloc(70000, 1),
      ascii('{"a":1}'),
      hex("05"),
      hex("00000000 0101000000"),
      ascii("red"),
      null,
    ];
    const row = encodeBinaryRow(types, contents);
    // 20 columns + 2 bits: 3 bitmap bytes; only the NULL type's value (column 19, bit 21) is NULL.
    assert.deepEqual(row.subarray(0, 4), hex("00 00 00 20"));
    assert.deepEqual(row.subarray(4, 8), hex("01 0100 da"), "fixed widths follow the bitmap directly");
    assert.deepEqual(row.subarray(37, 49), hex("0b da07 0a 11 13 1b 1e 01000000"), "DATETIME: a length byte and 11 bytes");
    const located = decodeBinaryRow(row, types, newRowValues(2));
    for (let i = 0; i < types.length; i++) {
      const content = contents[i];
      if (content === null) assert.equal(located.lengths[i], -1);
      else assert.deepEqual(row.subarray(located.starts[i], located.starts[i]! + located.lengths[i]!), content, `column ${i}`);
    }
    // Setting columns to NULL rewrites the bitmap and drops the value bytes: the same as encoding with nulls.
    const keep = types.map((_, i) => i % 3 !== 1);
    assert.deepEqual(
      maskBinaryRow(row, types, keep),
      encodeBinaryRow(
        types,
        contents.map((c, i) => (keep[i] ? c! : null)),
      ),
    );
    // Leaving columns out rebuilds the bitmap for the rest.
    const actions = types.map((_, i) => (i < 10 ? -1 : i === 12 ? 0 : 1));
    assert.deepEqual(
      maskBinaryRow(row, types, actions),
      encodeBinaryRow(
        types.slice(10),
        contents.slice(10).map((c, i) => (i === 2 ? null : c)),
      ),
    );
    assert.throws(() => decodeBinaryRow(hex("00 00 0a"), [ColumnType.DateTime], newRowValues()), ProtocolError, "a DATETIME cannot be 10 bytes");
    assert.throws(() => decodeBinaryRow(hex("00 00 01"), [ColumnType.Short], newRowValues()), ProtocolError, "a SHORT is 2 bytes");
    assert.throws(() => decodeBinaryRow(hex("00 00 01 02"), [ColumnType.Tiny], newRowValues()), ProtocolError, "bytes after the last value");
    assert.throws(() => decodeBinaryRow(hex("01 00 01"), [ColumnType.Tiny], newRowValues()), ProtocolError, "the header is 0x00");
    assert.throws(() => binaryValueExtent(0x14, hex("00"), 0, 1), ProtocolError, "a type with no binary form");
    assert.throws(() => encodeBinaryRow([ColumnType.Long], [hex("01")]), ProtocolError, "a LONG is 4 bytes");
  });
});

describe("MySQL codec: commands", () => {
  test("COM_QUERY (MySQL docs), with MySQL 8 query attributes; COM_INIT_DB; COM_STMT_PREPARE", () => {
    const packet = hex(`21 00 00 00 03 73 65 6c 65 63 74 20 40 40 76 65 72 73 69 6f 6e 5f 63 6f 6d 6d 65 6e 74 20 6c 69 6d 69 74 20 31`);
    assert.equal(packet[3], 0, "a command starts a new sequence");
    assert.deepEqual(decodeQuery(payloadOf(packet), protocol41), { sql: "select @@version_comment limit 1", attributes: [] });
    assert.deepEqual(encodeQuery({ sql: "select @@version_comment limit 1", attributes: [] }, protocol41), payloadOf(packet));
    const withAttributes = protocol41 | Capability.QueryAttributes;
    // No attributes: count 0, set count 1. One attribute "a" = 'x' (VARCHAR): 01 01, bitmap 00, bound 01, type 0f 00, name 01 61, value 01 78.
    assert.deepEqual(encodeQuery({ sql: "SELECT 1", attributes: [] }, withAttributes), hex(`03 00 01 ${ascii("SELECT 1").toString("hex")}`));
    const attributed = hex(`03 01 01 00 01 0f00 0161 0178 ${ascii("SELECT 1").toString("hex")}`);
    assert.deepEqual(decodeQuery(attributed, withAttributes), {
      sql: "SELECT 1",
      attributes: [{ type: ColumnType.VarChar, unsigned: false, name: "a", value: ascii("x") }],
    });
    assert.deepEqual(encodeQuery(decodeQuery(attributed, withAttributes), withAttributes), attributed);
    assert.throws(() => decodeQuery(hex("03 00 02"), withAttributes), ProtocolError, "parameter set count 2");
    assert.deepEqual(encodeTextCommand(Command.InitDb, "app"), hex("02 617070"));
    assert.equal(decodeTextCommand(hex("02 617070"), Command.InitDb), "app");
    assert.equal(decodeTextCommand(hex(`16 ${ascii("SELECT ?").toString("hex")}`), Command.StmtPrepare), "SELECT ?");
    assert.throws(() => decodeTextCommand(hex("03 617070"), Command.InitDb), ProtocolError);
  });

  test("bare commands, COM_SET_OPTION, COM_STMT_CLOSE/RESET/FETCH/SEND_LONG_DATA", () => {
    assert.deepEqual(encodeBareCommand(Command.Ping), hex("0e"));
    assert.deepEqual(encodeBareCommand(Command.Quit), hex("01"));
    assert.deepEqual(encodeBareCommand(Command.ResetConnection), hex("1f"));
    decodeBareCommand(hex("0e"), Command.Ping);
    assert.throws(() => decodeBareCommand(hex("0e 00"), Command.Ping), ProtocolError);
    assert.deepEqual(encodeSetOption(SetOption.MultiStatementsOff), hex("1b 0100"));
    assert.equal(decodeSetOption(hex("1b 0000")), SetOption.MultiStatementsOn);
    assert.throws(() => decodeSetOption(hex("1b 00")), ProtocolError);
    assert.throws(() => encodeSetOption(0x10000), ProtocolError, "a value that would wrap in its 2 bytes");
    assert.throws(() => encodeStmtFetch({ statementId: 2 ** 32, rows: 1 }), ProtocolError, "nor in 4");
    assert.deepEqual(encodeStatementIdCommand(Command.StmtClose, 0x01020304), hex("19 04030201"));
    assert.equal(decodeStatementIdCommand(hex("1a 07000000"), Command.StmtReset), 7);
    assert.throws(() => decodeStatementIdCommand(hex("1a 07000000"), Command.StmtClose), ProtocolError);
    assert.deepEqual(encodeStmtFetch({ statementId: 1, rows: 100 }), hex("1c 01000000 64000000"));
    assert.deepEqual(decodeStmtFetch(hex("1c 01000000 64000000")), { statementId: 1, rows: 100 });
    assert.deepEqual(encodeStmtSendLongData({ statementId: 2, parameter: 1, data: ascii("abc") }), hex("18 02000000 0100 616263"));
    assert.deepEqual(decodeStmtSendLongData(hex("18 02000000 0100 616263")), { statementId: 2, parameter: 1, data: ascii("abc") });
  });

  test("command codes: names, replication and administration refused by code", () => {
    assert.equal(commandName(Command.BinlogDumpGtid), "COM_BINLOG_DUMP_GTID");
    assert.equal(commandName(Command.StmtPrepare), "COM_STMT_PREPARE");
    assert.equal(commandName(0x99), "COM_0x99");
    assert.equal(Command.BinlogDump, 0x12);
    assert.equal(Command.RegisterSlave, 0x15);
    assert.equal(Command.BinlogDumpGtid, 0x1e);
    for (const code of [Command.BinlogDump, Command.BinlogDumpGtid, Command.RegisterSlave, Command.Clone, Command.Shutdown])
      assert.equal(isReplicationOrAdministrationCommand(code), true, commandName(code));
    for (const code of [Command.Query, Command.StmtExecute, Command.Ping, Command.ChangeUser, Command.InitDb])
      assert.equal(isReplicationOrAdministrationCommand(code), false, commandName(code));
    assert.equal(commandOf(hex("12 04000000")), Command.BinlogDump);
    assert.equal(commandOf(Buffer.alloc(0)), undefined);
  });

  test("COM_CHANGE_USER: native response, database, charset, plugin, attributes", () => {
    const capabilities = protocol41 | Capability.ConnectAttrs;
    const change = {
      username: "bob",
      authResponse: Buffer.alloc(20, 9),
      database: "app",
      characterSet: 45,
      authPluginName: "mysql_native_password",
      attributes: new Map([["k", "v"]]),
    };
    const payload = encodeChangeUser(change, capabilities);
    assert.deepEqual(payload.subarray(0, 26), hex(`11 626f6200 14 ${"09".repeat(20)}`));
    assert.deepEqual(payload.subarray(26, 32), hex("61707000 2d00"));
    assert.deepEqual(payload.subarray(payload.length - 5), hex("04 016b 0176"));
    assert.deepEqual(decodeChangeUser(payload, capabilities), change);
    assert.deepEqual(
      decodeChangeUser(hex("11 626f6200 00 00"), capabilities),
      { username: "bob", authResponse: Buffer.alloc(0), database: "" },
      "an old client stops after the database",
    );
  });

  test("COM_STMT_PREPARE_OK (MySQL docs)", () => {
    const payload = payloadOf(hex("0c 00 00 01 00 01 00 00 00 01 00 02 00 00 00 00"));
    const ok = decodeStmtPrepareOk(payload, protocol41);
    assert.deepEqual(ok, { statementId: 1, columnCount: 1, parameterCount: 2, warnings: 0, metadataFollows: true });
    assert.deepEqual(encodeStmtPrepareOk(ok, protocol41), payload);
    assert.deepEqual(decodeStmtPrepareOk(hex("00 01000000 0100 0200 00"), protocol41).warnings, 0, "pre-4.1.10 servers stop after the filler");
  });

  test("COM_STMT_EXECUTE (MySQL docs), NULL bitmap at offset 0, types resent or remembered, cursor flags, long data", () => {
    const packet = hex("12 00 00 00 17 01 00 00 00 00 01 00 00 00 00 01 0f 00 03 66 6f 6f");
    const execute = decodeStmtExecute(payloadOf(packet), { parameterCount: 1, capabilities: protocol41 });
    assert.deepEqual(execute, {
      statementId: 1,
      flags: CursorFlag.NoCursor,
      iterationCount: 1,
      typesSent: true,
      parameters: [{ type: ColumnType.VarChar, unsigned: false, value: ascii("foo") }],
    });
    assert.deepEqual(encodeStmtExecute(execute, protocol41), payloadOf(packet));
    // Nine parameters: bitmap of 2 bytes; the 1st and 9th NULL (01 01); an unsigned LONGLONG (08 80).
    const nine: StmtExecute = {
      statementId: 3,
      flags: CursorFlag.ReadOnly,
      iterationCount: 1,
      typesSent: true,
      parameters: Array.from({ length: 9 }, (_, i) => ({
        type: i === 1 ? ColumnType.LongLong : ColumnType.Tiny,
        unsigned: i === 1,
        value: i === 0 || i === 8 ? null : i === 1 ? hex("ffffffffffffffff") : Buffer.from([i]),
      })),
    };
    const payload = encodeStmtExecute(nine, protocol41);
    assert.deepEqual(payload.subarray(0, 13), hex("17 03000000 01 01000000 0101 01"));
    assert.deepEqual(payload.subarray(13, 17), hex("0100 0880"));
    assert.deepEqual(decodeStmtExecute(payload, { parameterCount: 9, capabilities: protocol41 }), nine);
    // A later execute without types: decodable only with the types remembered from the first.
    const again = encodeStmtExecute({ ...nine, typesSent: false }, protocol41);
    assert.equal(again.length, payload.length - 18);
    assert.throws(() => decodeStmtExecute(again, { parameterCount: 9, capabilities: protocol41 }), ProtocolError);
    const previousTypes = nine.parameters.map(({ type, unsigned }) => ({ type, unsigned }));
    assert.deepEqual(decodeStmtExecute(again, { parameterCount: 9, capabilities: protocol41, previousTypes }), { ...nine, typesSent: false });
    // A parameter sent by COM_STMT_SEND_LONG_DATA has no bytes here.
    const longData = encodeStmtExecute(
      { ...execute, parameters: [{ type: ColumnType.Blob, unsigned: false, value: Buffer.alloc(0), sentAsLongData: true }] },
      protocol41,
    );
    assert.deepEqual(longData, hex("17 01000000 00 01000000 00 01 fc00"));
    assert.deepEqual(decodeStmtExecute(longData, { parameterCount: 1, capabilities: protocol41, longData: new Set([0]) }).parameters, [
      { type: ColumnType.Blob, unsigned: false, value: Buffer.alloc(0), sentAsLongData: true },
    ]);
    // No parameters: nothing after the iteration count (without query attributes).
    assert.deepEqual(
      encodeStmtExecute({ statementId: 1, flags: 0, iterationCount: 1, parameters: [], typesSent: false }, protocol41),
      hex("17 01000000 00 01000000"),
    );
    assert.throws(
      () => decodeStmtExecute(hex("17 01000000 00 01000000 00"), { parameterCount: 0, capabilities: protocol41 }),
      ProtocolError,
      "a trailing byte",
    );
    // MySQL 8 query attributes: a parameter count first, and names after the types.
    const attributes = protocol41 | Capability.QueryAttributes;
    const named = encodeStmtExecute({ ...execute, parameters: [{ ...execute.parameters[0]!, name: "" }] }, attributes);
    assert.deepEqual(named, hex("17 01000000 00 01000000 01 00 01 0f00 00 03666f6f"));
    assert.deepEqual(decodeStmtExecute(named, { parameterCount: 1, capabilities: attributes }).parameters[0]!.value, ascii("foo"));
  });
});

describe("MySQL codec: framing", () => {
  test("a packet is a 3-byte length, a sequence id and the payload", () => {
    assert.deepEqual(encodePacket(hex("0e"), 0), hex("01 00 00 00 0e"));
    assert.deepEqual(encodePacket(Buffer.alloc(0), 255), hex("00 00 00 ff"));
  });
});
