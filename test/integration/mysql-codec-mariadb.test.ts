import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import mysql from "mysql2/promise";
import { decodeAuthSwitchRequest } from "../../protocols/mysql/auth-switch";
import { decodeBinaryRow, maskBinaryRow } from "../../protocols/mysql/binary-row";
import { Capability, hasCapability, MariaDbCapability } from "../../protocols/mysql/capabilities";
import { clientEd25519Plugin, ed25519PasswordHash, ed25519Response } from "../../protocols/mysql/client-ed25519";
import { decodeColumnCount } from "../../protocols/mysql/column-count";
import { decodeColumnDefinition, type ColumnDefinition } from "../../protocols/mysql/column-definition";
import { ColumnType } from "../../protocols/mysql/column-types";
import { Command } from "../../protocols/mysql/commands";
import { decodeErrPacket, isErrPacket } from "../../protocols/mysql/err-packet";
import { decodeHandshake, type Handshake } from "../../protocols/mysql/handshake";
import { encodeHandshakeResponse } from "../../protocols/mysql/handshake-response";
import { nativePasswordPlugin, nativePasswordResponse } from "../../protocols/mysql/native-password";
import { decodeOkPacket, isOkPacket } from "../../protocols/mysql/ok-packet";
import { encodeQuery } from "../../protocols/mysql/query";
import { decodeResultsetEnd, isResultsetEnd } from "../../protocols/mysql/resultset-end";
import { newRowValues } from "../../protocols/mysql/row-values";
import { decodeSchemaChange, decodeSessionState, SessionStateType } from "../../protocols/mysql/session-state";
import { ServerStatus } from "../../protocols/mysql/status-flags";
import { encodeStmtExecute } from "../../protocols/mysql/stmt-execute";
import { decodeStmtPrepareOk } from "../../protocols/mysql/stmt-prepare-ok";
import { encodeTextCommand } from "../../protocols/mysql/text-commands";
import { decodeTextRow } from "../../protocols/mysql/text-row";
import { MariaDbServer } from "../../testkit/mariadb";
import { CodecClient } from "../helpers/mysql-codec-client";

/**
 * The codec as a client of a real MariaDB (the fixture's mariadbd): its handshake with the
 * extended capabilities, native and ed25519 authentication (the ed25519 signature MariaDB's
 * plugin verifies), text and binary resultsets of many column types with NULLs, and session
 * tracking, decoded from the bytes MariaDB writes.
 */

const wanted =
  (Capability.Protocol41 |
    Capability.SecureConnection |
    Capability.PluginAuth |
    Capability.PluginAuthLenencClientData |
    Capability.ConnectWithDb |
    Capability.Transactions |
    Capability.MultiResults |
    Capability.SessionTrack |
    Capability.DeprecateEof) >>>
  0;

interface Resultset {
  columns: ColumnDefinition[];
  rows: Buffer[];
  end: { statusFlags: number; warnings: number };
}

describe("MySQL codec against a real MariaDB", () => {
  let server: MariaDbServer;

  before(async () => {
    server = await MariaDbServer.start();
    const admin = await mysql.createConnection({ ...server.connectionOptions, multipleStatements: true });
    await admin.query(`
      INSTALL SONAME 'auth_ed25519';
      CREATE USER 'ed'@'127.0.0.1' IDENTIFIED VIA ed25519 USING PASSWORD('ed-secret');
      GRANT SELECT ON app.* TO 'ed'@'127.0.0.1';
      CREATE TABLE app.kinds (id INT PRIMARY KEY, tiny TINYINT, small SMALLINT UNSIGNED, big BIGINT, price DECIMAL(10,2), ratio DOUBLE, f FLOAT,
        name VARCHAR(40), note TEXT, raw BLOB, born DATE, at DATETIME(6), span TIME, y YEAR, b BIT(3), e ENUM('red','green'));
      INSERT INTO app.kinds VALUES
        (1, -2, 65535, -9007199254740993, 3.14, 10.2, 1.5, 'alice', 'hello', x'00ff', '2010-10-17', '2010-10-17 19:27:30.000001', '-838:59:59', 2010, b'101', 'green'),
        (2, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL);
      CREATE VIEW app.kinds_view AS SELECT id, name AS label FROM app.kinds;
    `);
    await admin.end();
  });

  after(async () => {
    await server?.stop();
  });

  /**
   * Connects and authenticates with the codec alone, answering the handshake it decoded with a
   * native password response; an account of another plugin gets an AuthSwitchRequest, answered too.
   */
  async function login(user: string, password: string): Promise<{ client: CodecClient; handshake: Handshake; capabilities: number; plugin: string }> {
    const client = await CodecClient.connect(server.port);
    const handshake = decodeHandshake(await client.read());
    const capabilities = (wanted & handshake.capabilities) >>> 0;
    const authResponse = nativePasswordResponse(password, handshake.authPluginData);
    client.send(
      encodeHandshakeResponse({
        capabilities,
        maxPacketSize: 1 << 24,
        characterSet: 45,
        mariaDbCapabilities: 0,
        username: user,
        authResponse,
        database: "app",
        authPluginName: nativePasswordPlugin,
      }),
    );
    let answer = await client.read();
    let plugin = nativePasswordPlugin as string;
    if (answer[0] === 0xfe) {
      const request = decodeAuthSwitchRequest(answer);
      plugin = request.pluginName;
      assert.equal(plugin, clientEd25519Plugin);
      // ed25519 signs the 32-byte nonce as sent (it may end in a zero byte: no NUL to strip).
      assert.equal(request.pluginData.length, 32);
      client.send(ed25519Response(password, request.pluginData));
      answer = await client.read();
    }
    if (isErrPacket(answer)) {
      client.close();
      throw new Error(`login refused: ${decodeErrPacket(answer).message}`);
    }
    assert.equal(isOkPacket(answer), true);
    decodeOkPacket(answer, capabilities);
    return { client, handshake, capabilities, plugin };
  }

  async function readResultset(client: CodecClient, capabilities: number, first: Buffer): Promise<Resultset> {
    const { columnCount } = decodeColumnCount(first, capabilities);
    const columns: ColumnDefinition[] = [];
    for (let i = 0; i < columnCount; i++) columns.push(decodeColumnDefinition(await client.read()));
    const rows: Buffer[] = [];
    for (;;) {
      const packet = await client.read();
      if (isResultsetEnd(packet, capabilities)) return { columns, rows, end: decodeResultsetEnd(packet, capabilities) };
      rows.push(Buffer.from(packet));
    }
  }

  async function query(client: CodecClient, capabilities: number, sql: string): Promise<Resultset> {
    client.command(encodeQuery({ sql, attributes: [] }, capabilities));
    const first = await client.read();
    if (isErrPacket(first)) throw new Error(decodeErrPacket(first).message);
    return readResultset(client, capabilities, first);
  }

  test("MariaDB's handshake: version, CLIENT_MYSQL clear, its extended capabilities, a 20-byte scramble", async () => {
    const { client, handshake, capabilities } = await login(server.user, server.password);
    assert.match(handshake.serverVersion, /^5\.5\.5-10\.\d+\.\d+-MariaDB/);
    assert.equal(hasCapability(handshake.capabilities, Capability.LongPassword), false);
    assert.ok(handshake.mariaDbCapabilities & MariaDbCapability.ExtendedMetadata, `extended capabilities 0x${handshake.mariaDbCapabilities.toString(16)}`);
    assert.equal(handshake.authPluginData.length, 20);
    assert.equal(handshake.authPluginName, nativePasswordPlugin);
    assert.equal(hasCapability(capabilities, Capability.DeprecateEof), true, "MariaDB agrees to CLIENT_DEPRECATE_EOF");
    client.close();
  });

  test("client_ed25519: MariaDB accepts the codec's signature, and stores the key the codec derives", async () => {
    const { client, plugin } = await login("ed", "ed-secret");
    assert.equal(plugin, clientEd25519Plugin, "switched to ed25519 for this account");
    client.close();
    const admin = await mysql.createConnection(server.connectionOptions);
    const [stored] = await admin.query<mysql.RowDataPacket[]>(
      "SELECT JSON_VALUE(priv, '$.authentication_string') AS publicKey FROM mysql.global_priv WHERE user = 'ed'",
    );
    await admin.end();
    assert.equal(stored[0]!.publicKey, ed25519PasswordHash("ed-secret"));
    await assert.rejects(login("ed", "wrong"), /Access denied/);
  });

  test("a text resultset: column definitions with table and column origins, values and NULLs as byte ranges", async () => {
    const { client, capabilities } = await login(server.user, server.password);
    const result = await query(client, capabilities, "SELECT k.id, k.name AS who, k.price, k.born, k.note FROM kinds k ORDER BY k.id");
    assert.deepEqual(
      result.columns.map((c) => [c.schema, c.table, c.orgTable, c.name, c.orgName, c.type]),
      [
        ["app", "k", "kinds", "id", "id", ColumnType.Long],
        ["app", "k", "kinds", "who", "name", ColumnType.VarString],
        ["app", "k", "kinds", "price", "price", ColumnType.NewDecimal],
        ["app", "k", "kinds", "born", "born", ColumnType.Date],
        ["app", "k", "kinds", "note", "note", ColumnType.Blob],
      ],
    );
    const values = result.rows.map((row) => {
      const located = decodeTextRow(row, 5, newRowValues());
      return Array.from({ length: 5 }, (_, i) =>
        located.lengths[i] === -1 ? null : row.toString("utf8", located.starts[i], located.starts[i]! + located.lengths[i]!),
      );
    });
    assert.deepEqual(values, [
      ["1", "alice", "3.14", "2010-10-17", "hello"],
      ["2", null, null, null, null],
    ]);
    assert.ok(result.end.statusFlags & ServerStatus.Autocommit, "the 0xfe OK that ends rows under CLIENT_DEPRECATE_EOF");
    client.close();
  });

  test("column origins: a base table's column names its table; a derived table, CTE or view names itself", async () => {
    const { client, capabilities } = await login(server.user, server.password);
    const origin = async (sql: string) => (await query(client, capabilities, sql)).columns.map((c) => `${c.table}/${c.orgTable}.${c.orgName} as ${c.name}`);
    // MariaDB names the relation of the outer query's FROM list, not the base table behind it:
    // a derived table, a CTE and a view are their own org_table; an expression has none.
    assert.deepEqual(await origin("SELECT x.e FROM (SELECT name AS e FROM kinds) AS x"), ["x/x.e as e"]);
    assert.deepEqual(await origin("WITH c AS (SELECT name FROM kinds) SELECT c.name FROM c"), ["c/c.name as name"]);
    assert.deepEqual(await origin("SELECT label FROM kinds_view"), ["kinds_view/kinds_view.label as label"]);
    assert.deepEqual(await origin("SELECT CONCAT(name, '!') AS shout FROM kinds"), ["/. as shout"]);
    assert.deepEqual(await origin("SELECT k.name FROM kinds k JOIN (SELECT id FROM kinds) d ON d.id = k.id"), ["k/kinds.name as name"]);
    client.close();
  });

  test("a prepared statement's binary rows: every column type MariaDB frames, NULL bitmap, a row masked and read back", async () => {
    const { client, capabilities } = await login(server.user, server.password);
    client.command(encodeTextCommand(Command.StmtPrepare, "SELECT * FROM kinds WHERE id >= ? ORDER BY id"));
    const prepared = decodeStmtPrepareOk(await client.read(), capabilities);
    assert.equal(prepared.parameterCount, 1);
    assert.equal(prepared.columnCount, 16);
    decodeColumnDefinition(await client.read());
    const columns: ColumnDefinition[] = [];
    for (let i = 0; i < prepared.columnCount; i++) columns.push(decodeColumnDefinition(await client.read()));
    const one = Buffer.alloc(4);
    one.writeInt32LE(1);
    client.command(
      encodeStmtExecute(
        {
          statementId: prepared.statementId,
          flags: 0,
          iterationCount: 1,
          typesSent: true,
          parameters: [{ type: ColumnType.Long, unsigned: false, value: one }],
        },
        capabilities,
      ),
    );
    const result = await readResultset(client, capabilities, await client.read());
    const types = result.columns.map((c) => c.type);
    assert.deepEqual(types, [
      ColumnType.Long,
      ColumnType.Tiny,
      ColumnType.Short,
      ColumnType.LongLong,
      ColumnType.NewDecimal,
      ColumnType.Double,
      ColumnType.Float,
      ColumnType.VarString,
      ColumnType.Blob,
      ColumnType.Blob,
      ColumnType.Date,
      ColumnType.DateTime,
      ColumnType.Time,
      ColumnType.Year,
      ColumnType.Bit,
      ColumnType.String,
    ]);
    const row = result.rows[0]!;
    const located = decodeBinaryRow(row, types, newRowValues());
    const value = (i: number) => row.subarray(located.starts[i], located.starts[i]! + located.lengths[i]!);
    assert.equal(value(0).readInt32LE(0), 1);
    assert.equal(value(1).readInt8(0), -2);
    assert.equal(value(2).readUInt16LE(0), 65535);
    assert.equal(value(3).readBigInt64LE(0), -9007199254740993n);
    assert.equal(value(4).toString(), "3.14");
    assert.equal(value(5).readDoubleLE(0), 10.2);
    assert.equal(value(6).readFloatLE(0), 1.5);
    assert.equal(value(7).toString(), "alice");
    assert.equal(value(8).toString(), "hello");
    assert.deepEqual(value(9), Buffer.from([0x00, 0xff]));
    assert.deepEqual(value(10), Buffer.from("da070a11", "hex"), "DATE: 4 bytes");
    assert.deepEqual(value(11), Buffer.from("da070a11131b1e01000000", "hex"), "DATETIME(6): 11 bytes with microseconds");
    assert.deepEqual(value(12), Buffer.from("01 22000000 16 3b 3b".replace(/ /g, ""), "hex"), "TIME -838:59:59: negative, 34 days 22:59:59");
    assert.equal(value(13).readUInt16LE(0), 2010);
    assert.deepEqual(value(14), Buffer.from([0x05]));
    assert.equal(value(15).toString(), "green");
    const nulls = decodeBinaryRow(result.rows[1]!, types, newRowValues());
    assert.deepEqual(
      [...nulls.lengths.subarray(0, 16)].map((l) => l === -1),
      [false, ...Array(15).fill(true)],
    );
    const keep = types.map((_, i) => i % 2 === 0);
    const masked = decodeBinaryRow(maskBinaryRow(row, types, keep), types, newRowValues());
    for (let i = 0; i < 16; i++) assert.equal(masked.lengths[i] === -1, !keep[i], `column ${i}`);
    client.close();
  });

  test("session tracking: USE answers an OK whose SCHEMA entry names the database", async () => {
    const { client, capabilities } = await login(server.user, server.password);
    client.command(encodeTextCommand(Command.InitDb, "mysql"));
    const ok = decodeOkPacket(await client.read(), capabilities);
    assert.ok(ok.statusFlags & ServerStatus.SessionStateChanged);
    const schema = decodeSessionState(ok.sessionStateChanges!).find((entry) => entry.type === SessionStateType.Schema);
    assert.equal(decodeSchemaChange(schema!.data), "mysql");
    client.close();
  });
});
