import { encodeAuthMoreData } from "../../protocols/mysql/auth-more-data";
import { encodeAuthSwitchRequest } from "../../protocols/mysql/auth-switch";
import { encodeBareCommand } from "../../protocols/mysql/bare-commands";
import { encodeBinaryRow } from "../../protocols/mysql/binary-row";
import { Capability, MariaDbCapability } from "../../protocols/mysql/capabilities";
import { encodeChangeUser } from "../../protocols/mysql/change-user";
import { encodeColumnCount } from "../../protocols/mysql/column-count";
import { encodeColumnDefinition } from "../../protocols/mysql/column-definition";
import { ColumnType } from "../../protocols/mysql/column-types";
import { Command } from "../../protocols/mysql/commands";
import { encodeEofPacket } from "../../protocols/mysql/eof-packet";
import { encodeErrPacket, encodeProgressReport } from "../../protocols/mysql/err-packet";
import { encodeHandshake } from "../../protocols/mysql/handshake";
import { encodeHandshakeResponse } from "../../protocols/mysql/handshake-response";
import { encodeLocalInfileRequest } from "../../protocols/mysql/local-infile";
import { encodeOkPacket, OkHeader } from "../../protocols/mysql/ok-packet";
import { encodeQuery } from "../../protocols/mysql/query";
import { encodeSchemaChange, encodeSessionState, SessionStateType } from "../../protocols/mysql/session-state";
import { encodeSetOption, SetOption } from "../../protocols/mysql/set-option";
import { encodeSslRequest } from "../../protocols/mysql/ssl-request";
import { encodeStatementIdCommand, encodeStmtFetch, encodeStmtSendLongData } from "../../protocols/mysql/statement-commands";
import { ServerStatus } from "../../protocols/mysql/status-flags";
import { CursorFlag, encodeStmtExecute } from "../../protocols/mysql/stmt-execute";
import { encodeStmtPrepareOk } from "../../protocols/mysql/stmt-prepare-ok";
import { encodeTextCommand } from "../../protocols/mysql/text-commands";
import { encodeTextRow } from "../../protocols/mysql/text-row";

/**
 * One valid payload of every message kind protocols/mysql/ encodes, with the capabilities it was
 * encoded under: the seeds of the framing and fuzz tests (shared so a new message kind added
 * here is split and fuzzed without touching either).
 */

export const sampleCapabilities =
  (Capability.Protocol41 |
    Capability.SecureConnection |
    Capability.PluginAuth |
    Capability.Transactions |
    Capability.SessionTrack |
    Capability.DeprecateEof |
    Capability.ConnectAttrs |
    Capability.PluginAuthLenencClientData |
    Capability.ConnectWithDb) >>>
  0;

export const sampleBinaryTypes = [
  ColumnType.Long,
  ColumnType.VarString,
  ColumnType.DateTime,
  ColumnType.Double,
  ColumnType.Blob,
  ColumnType.Time,
  ColumnType.Tiny,
  ColumnType.NewDecimal,
  ColumnType.Short,
  ColumnType.LongLong,
];

export function samplePayloads(): Array<{ kind: string; payload: Buffer }> {
  const scramble = Buffer.from("0123456789abcdefghij");
  const column = {
    catalog: "def",
    schema: "app",
    table: "u",
    orgTable: "users",
    name: "email",
    orgName: "email",
    characterSet: 45,
    columnLength: 1020,
    type: ColumnType.VarString,
    flags: 0,
    decimals: 0,
  };
  return [
    {
      kind: "handshake",
      payload: encodeHandshake({
        protocolVersion: 10,
        serverVersion: "5.5.5-10.11.6-MariaDB",
        connectionId: 9,
        authPluginData: scramble,
        capabilities: (0xf7fe | Capability.PluginAuth | Capability.SessionTrack | Capability.DeprecateEof) >>> 0,
        mariaDbCapabilities: MariaDbCapability.Progress,
        characterSet: 45,
        statusFlags: 2,
        authPluginName: "mysql_native_password",
      }),
    },
    {
      kind: "handshake-response",
      payload: encodeHandshakeResponse({
        capabilities: sampleCapabilities,
        maxPacketSize: 1 << 24,
        characterSet: 45,
        mariaDbCapabilities: 0,
        username: "alice",
        authResponse: Buffer.alloc(20, 3),
        database: "app",
        authPluginName: "mysql_native_password",
        attributes: new Map([["_client_name", "test"]]),
      }),
    },
    { kind: "ssl-request", payload: encodeSslRequest({ capabilities: sampleCapabilities, maxPacketSize: 1 << 24, characterSet: 45, mariaDbCapabilities: 0 }) },
    {
      kind: "auth-switch-request",
      payload: encodeAuthSwitchRequest({ pluginName: "caching_sha2_password", pluginData: Buffer.concat([scramble, Buffer.alloc(1)]) }),
    },
    { kind: "auth-more-data", payload: encodeAuthMoreData(Buffer.from([4])) },
    {
      kind: "ok",
      payload: encodeOkPacket(
        {
          header: OkHeader.Ok,
          affectedRows: 3,
          lastInsertId: 70000,
          statusFlags: ServerStatus.Autocommit | ServerStatus.SessionStateChanged,
          warnings: 1,
          info: "Rows matched: 3",
          sessionStateChanges: encodeSessionState([{ type: SessionStateType.Schema, data: encodeSchemaChange("app") }]),
        },
        sampleCapabilities,
      ),
    },
    { kind: "eof", payload: encodeEofPacket({ warnings: 0, statusFlags: 2 }, sampleCapabilities) },
    { kind: "err", payload: encodeErrPacket({ code: 1146, sqlState: "42S02", message: "Table 'app.x' doesn't exist" }) },
    { kind: "progress", payload: encodeProgressReport({ stage: 1, maxStage: 3, progress: 5000, info: "copy to tmp table" }) },
    { kind: "local-infile", payload: encodeLocalInfileRequest("/tmp/data.csv") },
    { kind: "column-count", payload: encodeColumnCount({ columnCount: 3, metadataFollows: true }, sampleCapabilities) },
    { kind: "column-definition", payload: encodeColumnDefinition(column) },
    {
      kind: "column-definition-extended",
      payload: encodeColumnDefinition({ ...column, extendedTypeName: "uuid", extendedFormat: "json" }, { mariaDbExtendedMetadata: true }),
    },
    { kind: "text-row", payload: encodeTextRow([Buffer.from("1"), null, Buffer.from("alice@example.com")]) },
    {
      kind: "binary-row",
      payload: encodeBinaryRow(sampleBinaryTypes, [
        Buffer.from([1, 0, 0, 0]),
        Buffer.from("x"),
        Buffer.from("da070a11131b1e", "hex"),
        null,
        Buffer.alloc(300, 5),
        Buffer.from("0001000000131b1e", "hex"),
        Buffer.from([7]),
        Buffer.from("3.14"),
        null,
        Buffer.alloc(8, 1),
      ]),
    },
    { kind: "query", payload: encodeQuery({ sql: "SELECT id, email FROM users WHERE id = 1", attributes: [] }, sampleCapabilities) },
    {
      kind: "query-attributes",
      payload: encodeQuery(
        { sql: "SELECT 1", attributes: [{ type: ColumnType.VarString, unsigned: false, name: "trace", value: Buffer.from("t1") }] },
        (sampleCapabilities | Capability.QueryAttributes) >>> 0,
      ),
    },
    {
      kind: "stmt-execute-attributes",
      payload: encodeStmtExecute(
        {
          statementId: 5,
          flags: 0,
          iterationCount: 1,
          typesSent: true,
          parameters: [
            { type: ColumnType.Long, unsigned: false, name: "", value: Buffer.alloc(4, 1) },
            { type: ColumnType.VarString, unsigned: false, name: "trace", value: Buffer.from("t1") },
          ],
        },
        (sampleCapabilities | Capability.QueryAttributes) >>> 0,
      ),
    },
    { kind: "init-db", payload: encodeTextCommand(Command.InitDb, "app") },
    { kind: "stmt-prepare", payload: encodeTextCommand(Command.StmtPrepare, "SELECT * FROM users WHERE id = ?") },
    {
      kind: "stmt-prepare-ok",
      payload: encodeStmtPrepareOk({ statementId: 5, columnCount: 2, parameterCount: 1, warnings: 0, metadataFollows: true }, sampleCapabilities),
    },
    {
      kind: "stmt-execute",
      payload: encodeStmtExecute(
        {
          statementId: 5,
          flags: CursorFlag.ReadOnly,
          iterationCount: 1,
          typesSent: true,
          parameters: [
            { type: ColumnType.LongLong, unsigned: true, value: Buffer.alloc(8, 2) },
            { type: ColumnType.VarString, unsigned: false, value: null },
            { type: ColumnType.VarString, unsigned: false, value: Buffer.from("abc") },
          ],
        },
        sampleCapabilities,
      ),
    },
    { kind: "stmt-fetch", payload: encodeStmtFetch({ statementId: 5, rows: 10 }) },
    { kind: "stmt-close", payload: encodeStatementIdCommand(Command.StmtClose, 5) },
    { kind: "stmt-reset", payload: encodeStatementIdCommand(Command.StmtReset, 5) },
    { kind: "stmt-send-long-data", payload: encodeStmtSendLongData({ statementId: 5, parameter: 0, data: Buffer.from("chunk") }) },
    { kind: "set-option", payload: encodeSetOption(SetOption.MultiStatementsOff) },
    {
      kind: "change-user",
      payload: encodeChangeUser(
        {
          username: "bob",
          authResponse: Buffer.alloc(20, 1),
          database: "app",
          characterSet: 45,
          authPluginName: "mysql_native_password",
          attributes: new Map(),
        },
        sampleCapabilities,
      ),
    },
    { kind: "ping", payload: encodeBareCommand(Command.Ping) },
    { kind: "quit", payload: encodeBareCommand(Command.Quit) },
    { kind: "reset-connection", payload: encodeBareCommand(Command.ResetConnection) },
  ];
}
