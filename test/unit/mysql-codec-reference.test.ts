import { after, describe, test } from "node:test";
import assert from "node:assert/strict";
import { Readable } from "node:stream";
import mysql from "mysql2/promise";
import { Capability, MariaDbCapability } from "../../protocols/mysql/capabilities";
import { cachingSha2PasswordPlugin } from "../../protocols/mysql/caching-sha2-password";
import type { ColumnDefinition } from "../../protocols/mysql/column-definition";
import { ColumnFlag } from "../../protocols/mysql/column-flags";
import { ColumnType } from "../../protocols/mysql/column-types";
import { Command } from "../../protocols/mysql/commands";
import { nativePasswordPlugin } from "../../protocols/mysql/native-password";
import { encodeSchemaChange, encodeSessionState, SessionStateType } from "../../protocols/mysql/session-state";
import { ServerStatus } from "../../protocols/mysql/status-flags";
import { CodecServer, type CodecServerOptions, type ScriptedAnswer } from "../helpers/mysql-codec-server";

/**
 * mysql2 (a MySQL client no one here wrote) against a server built on protocols/mysql/ over a
 * loopback socket: every byte mysql2 sends is decoded by the codec, every byte it reads was
 * encoded by it. mysql2 accepting the handshake, the auth exchanges, the column definitions and
 * rows (typed values, NULLs where the codec masked them), and the codec reading back what
 * mysql2 meant (user, database, SQL, parameter values), checks the two agree byte for byte
 * without needing MariaDB.
 */

const offered =
  (Capability.LongPassword |
    Capability.FoundRows |
    Capability.LongFlag |
    Capability.ConnectWithDb |
    Capability.Protocol41 |
    Capability.Transactions |
    Capability.SecureConnection |
    Capability.MultiStatements |
    Capability.MultiResults |
    Capability.PsMultiResults |
    Capability.PluginAuth |
    Capability.PluginAuthLenencClientData |
    Capability.ConnectAttrs |
    Capability.SessionTrack |
    Capability.LocalFiles) >>>
  0;

function column(name: string, type: number, extra: Partial<ColumnDefinition> = {}): ColumnDefinition {
  return {
    catalog: "def",
    schema: "app",
    table: "u",
    orgTable: "users",
    name,
    orgName: name,
    characterSet: 45,
    columnLength: 255,
    type,
    flags: 0,
    decimals: 0,
    ...extra,
  };
}

const textColumns = [
  column("id", ColumnType.Long, { characterSet: 63, columnLength: 11, flags: ColumnFlag.NotNull | ColumnFlag.PrimaryKey }),
  column("email", ColumnType.VarString),
  column("score", ColumnType.Double, { characterSet: 63, decimals: 31 }),
  column("born", ColumnType.DateTime, { characterSet: 63 }),
  column("note", ColumnType.Blob, { characterSet: 45, flags: ColumnFlag.Blob }),
];
const textRows = [
  { text: [Buffer.from("1"), Buffer.from("alice@example.com"), Buffer.from("2.5"), Buffer.from("2010-10-17 19:27:30"), Buffer.from("hi")], binary: [] },
  { text: [Buffer.from("2"), null, Buffer.from("-1e+100"), null, Buffer.from("")], binary: [] },
];

// One column of every kind a binary row frames differently, with its binary content and what mysql2 makes of it.
const binaryCases: Array<{ column: ColumnDefinition; content: Buffer | null; expected: unknown }> = [
  { column: column("tiny", ColumnType.Tiny, { characterSet: 63 }), content: Buffer.from([0xfe]), expected: -2 },
  { column: column("short", ColumnType.Short, { characterSet: 63, flags: ColumnFlag.Unsigned }), content: Buffer.from([0xff, 0xff]), expected: 65535 },
  {
    column: column("year", ColumnType.Year, { characterSet: 63, flags: ColumnFlag.Unsigned | ColumnFlag.Zerofill }),
    content: Buffer.from([0xda, 0x07]),
    expected: 2010,
  },
  { column: column("long", ColumnType.Long, { characterSet: 63 }), content: Buffer.from([0x39, 0x30, 0, 0]), expected: 12345 },
  { column: column("int24", ColumnType.Int24, { characterSet: 63 }), content: Buffer.from([0xff, 0xff, 0xff, 0xff]), expected: -1 },
  { column: column("float", ColumnType.Float, { characterSet: 63 }), content: Buffer.from("0000c03f", "hex"), expected: 1.5 },
  { column: column("longlong", ColumnType.LongLong, { characterSet: 63 }), content: Buffer.from("0100000000000000", "hex"), expected: 1 },
  { column: column("double", ColumnType.Double, { characterSet: 63 }), content: Buffer.from("6666666666662440", "hex"), expected: 10.2 },
  { column: column("datetime", ColumnType.DateTime, { characterSet: 63 }), content: Buffer.from("da070a11131b1e", "hex"), expected: "2010-10-17 19:27:30" },
  { column: column("date", ColumnType.Date, { characterSet: 63 }), content: Buffer.from("da070a11", "hex"), expected: "2010-10-17" },
  { column: column("time", ColumnType.Time, { characterSet: 63 }), content: Buffer.from("0000000000131b1e", "hex"), expected: "19:27:30" },
  { column: column("decimal", ColumnType.NewDecimal, { characterSet: 63, decimals: 2 }), content: Buffer.from("3.14"), expected: "3.14" },
  { column: column("name", ColumnType.VarString), content: Buffer.from("bob"), expected: "bob" },
  {
    column: column("blob", ColumnType.Blob, { characterSet: 63, flags: ColumnFlag.Blob | ColumnFlag.Binary }),
    content: Buffer.alloc(70000, 7),
    expected: Buffer.alloc(70000, 7),
  },
  { column: column("nothing", ColumnType.VarString), content: null, expected: null },
];

function answers(sql: string): ScriptedAnswer[] {
  if (sql === "SELECT id, email, score, born, note FROM users") return [{ kind: "resultset", columns: textColumns, rows: textRows }];
  if (sql === "SELECT masked") return [{ kind: "resultset", columns: textColumns, rows: textRows, mask: [true, false, true, true, false] }];
  if (sql.startsWith("SELECT all_types")) {
    const columns = binaryCases.map((c) => c.column);
    // Masked: every third column set to NULL by rewriting the row.
    const mask = sql.includes("masked") ? binaryCases.map((_, i) => i % 3 !== 2) : undefined;
    return [{ kind: "resultset", columns, rows: [{ text: [], binary: binaryCases.map((c) => c.content) }], ...(mask ? { mask } : {}) }];
  }
  if (sql === "SELECT 1; SELECT 2")
    return [1, 2].map((n) => ({
      kind: "resultset" as const,
      columns: [column(String(n), ColumnType.LongLong, { characterSet: 63 })],
      rows: [{ text: [Buffer.from(String(n))], binary: [] }],
    }));
  if (sql === "USE app")
    return [
      {
        kind: "ok",
        ok: {
          statusFlags: ServerStatus.Autocommit | ServerStatus.SessionStateChanged,
          sessionStateChanges: encodeSessionState([{ type: SessionStateType.Schema, data: encodeSchemaChange("app") }]),
        },
      },
    ];
  if (sql === "UPDATE users SET x = 1")
    return [{ kind: "ok", ok: { affectedRows: 3, lastInsertId: 0, warnings: 2, info: "Rows matched: 3  Changed: 3  Warnings: 2" } }];
  if (sql === "SELECT big")
    return [
      {
        kind: "resultset",
        columns: [column("big", ColumnType.Blob, { characterSet: 63, flags: ColumnFlag.Blob | ColumnFlag.Binary })],
        rows: [{ text: [Buffer.alloc(17 * 1024 * 1024, 0x61)], binary: [] }],
      },
    ];
  if (sql.startsWith("LOAD DATA LOCAL INFILE")) return [{ kind: "local-infile", fileName: "/tmp/data.csv" }];
  if (sql.startsWith("SELECT ")) {
    const length = Buffer.alloc(8);
    length.writeBigInt64LE(BigInt(sql.length));
    return [
      {
        kind: "resultset",
        columns: [column("n", ColumnType.LongLong, { characterSet: 63 })],
        rows: [{ text: [Buffer.from(String(sql.length))], binary: [length] }],
      },
    ];
  }
  return [{ kind: "err", err: { code: 1064, sqlState: "42000", message: `You have an error in your SQL syntax near '${sql.slice(0, 20)}'` } }];
}

const servers: CodecServer[] = [];
async function serve(options: Partial<CodecServerOptions>): Promise<CodecServer> {
  const server = await CodecServer.start({
    authPlugin: nativePasswordPlugin,
    users: { alice: { password: "s3cret" }, bob: { password: "b0b", plugin: nativePasswordPlugin } },
    capabilities: offered,
    answer: answers,
    ...options,
  });
  servers.push(server);
  return server;
}

function connect(server: CodecServer, extra: Partial<mysql.ConnectionOptions> = {}): Promise<mysql.Connection> {
  return mysql.createConnection({
    host: "127.0.0.1",
    port: server.port,
    user: "alice",
    password: "s3cret",
    database: "app",
    dateStrings: true,
    supportBigNumbers: true,
    ...extra,
  });
}

/** Waits (at most 5 s) for the server to have seen what the client already sent. */
async function until(condition: () => boolean): Promise<void> {
  for (const deadline = Date.now() + 5000; !condition() && Date.now() < deadline; ) await new Promise((resolve) => setTimeout(resolve, 10));
}

after(async () => {
  for (const server of servers) await server.stop();
});

describe("MySQL codec against mysql2", () => {
  test("handshake and mysql_native_password: mysql2's HandshakeResponse41 decodes to what it was given; a wrong password gets the codec's ERR", async () => {
    const server = await serve({});
    const connection = await connect(server);
    const response = server.recorded.handshakeResponses[0]!;
    assert.equal(response.username, "alice");
    assert.equal(response.database, "app");
    assert.equal(response.authPluginName, nativePasswordPlugin);
    assert.equal(response.attributes?.get("_client_name"), "Node-MySQL-2");
    assert.equal(response.authResponse.length, 20);
    assert.deepEqual(server.recorded.authOutcomes, ["native alice"]);
    await connection.ping();
    await connection.end();
    await until(() => server.recorded.commands.length === 2);
    assert.deepEqual(server.recorded.commands, [Command.Ping, Command.Quit]);
    await assert.rejects(connect(server, { password: "wrong" }), (error: { errno?: number; sqlState?: string; message?: string }) => {
      assert.equal(error.errno, 1045);
      assert.equal(error.sqlState, "28000");
      assert.equal(error.message, "Access denied for user 'alice'@'localhost' (using password: YES)");
      return true;
    });
  });

  test("caching_sha2_password: fast auth, full auth with the RSA key exchange, and an AuthSwitchRequest to native", async () => {
    const fast = await serve({ authPlugin: cachingSha2PasswordPlugin, sha2Cached: true });
    await (await connect(fast)).end();
    assert.deepEqual(fast.recorded.authOutcomes, ["fast-auth alice"]);
    assert.equal(fast.recorded.handshakeResponses[0]!.authPluginName, cachingSha2PasswordPlugin);
    await assert.rejects(connect(fast, { password: "nope" }), { errno: 1045 });

    const full = await serve({ authPlugin: cachingSha2PasswordPlugin, sha2Cached: false });
    await (await connect(full)).end();
    assert.deepEqual(full.recorded.authOutcomes, ["full-auth alice"], "0x04, then mysql2 asked for the key (0x02) and sent the password RSA-encrypted");
    await assert.rejects(connect(full, { password: "nope" }), { errno: 1045 });

    const switched = await serve({ authPlugin: cachingSha2PasswordPlugin, sha2Cached: true });
    await (await connect(switched, { user: "bob", password: "b0b" })).end();
    assert.deepEqual(switched.recorded.authOutcomes, ["native bob"], "switched from caching_sha2 to native");
  });

  test("COM_QUERY: a text resultset's column definitions and rows, NULLs, and a row the codec masked", async () => {
    const server = await serve({});
    const connection = await connect(server);
    const [rows, fields] = await connection.query<mysql.RowDataPacket[]>("SELECT id, email, score, born, note FROM users");
    assert.equal(server.recorded.queries[0]!.sql, "SELECT id, email, score, born, note FROM users");
    assert.deepEqual(
      rows.map((r) => ({ ...r })),
      [
        { id: 1, email: "alice@example.com", score: 2.5, born: "2010-10-17 19:27:30", note: "hi" },
        { id: 2, email: null, score: -1e100, born: null, note: "" },
      ],
    );
    assert.deepEqual(
      fields.map((f) => ({
        catalog: f.catalog,
        schema: f.schema,
        table: f.table,
        orgTable: f.orgTable,
        name: f.name,
        orgName: f.orgName,
        characterSet: f.characterSet,
        columnLength: f.columnLength,
        type: f.type,
        flags: f.flags,
        decimals: f.decimals,
      })),
      textColumns.map(({ extendedTypeName: _t, extendedFormat: _f, ...rest }) => rest),
    );
    const [masked] = await connection.query<mysql.RowDataPacket[]>("SELECT masked");
    assert.deepEqual(
      masked.map((r) => ({ ...r })),
      [
        { id: 1, email: null, score: 2.5, born: "2010-10-17 19:27:30", note: null },
        { id: 2, email: null, score: -1e100, born: null, note: null },
      ],
    );
    const [ok] = await connection.query<mysql.ResultSetHeader>("UPDATE users SET x = 1");
    assert.equal(ok.affectedRows, 3);
    assert.equal(ok.warningStatus, 2);
    assert.equal(ok.info, "Rows matched: 3  Changed: 3  Warnings: 2");
    await assert.rejects(connection.query("DELETE nonsense"), { errno: 1064, sqlState: "42000" });
    await connection.end();
  });

  test("prepared statements: mysql2's COM_STMT_EXECUTE decodes to its parameters; a binary row of every framing, NULLs and masked values", async () => {
    const server = await serve({});
    const connection = await connect(server);
    const [rows, fields] = await connection.execute<mysql.RowDataPacket[]>("SELECT all_types WHERE id = ? AND name = ? AND note = ? AND at = ?", [
      7,
      "bob",
      null,
      2.5,
    ]);
    assert.equal(server.recorded.prepares[0], "SELECT all_types WHERE id = ? AND name = ? AND note = ? AND at = ?");
    const execute = server.recorded.executes[0]!;
    assert.equal(execute.typesSent, true);
    assert.deepEqual(
      execute.parameters.map((p) => ({
        type: p.type,
        value:
          p.value === null
            ? null
            : p.type === ColumnType.LongLong
              ? p.value.readBigInt64LE(0)
              : p.type === ColumnType.Double
                ? p.value.readDoubleLE(0)
                : p.value.toString(),
      })),
      [
        // mysql2 binds every JavaScript number as a DOUBLE.
        { type: ColumnType.Double, value: 7 },
        { type: ColumnType.VarString, value: "bob" },
        { type: ColumnType.Null, value: null },
        { type: ColumnType.Double, value: 2.5 },
      ],
    );
    assert.deepEqual(
      fields.map((f) => f.type),
      binaryCases.map((c) => c.column.type),
    );
    assert.deepEqual(
      Object.values(rows[0]!),
      binaryCases.map((c) => c.expected),
    );
    const [masked] = await connection.execute<mysql.RowDataPacket[]>("SELECT all_types masked");
    assert.deepEqual(
      Object.values(masked[0]!),
      binaryCases.map((c, i) => (i % 3 === 2 ? null : c.expected)),
    );
    await connection.end();
  });

  test("multi-statements, session-state tracking, LOCAL INFILE, COM_CHANGE_USER", async () => {
    const server = await serve({});
    const connection = await connect(server, { multipleStatements: true, infileStreamFactory: () => Readable.from([Buffer.from("1,alice\n2,bob\n")]) });
    const [results] = await connection.query<mysql.RowDataPacket[][]>("SELECT 1; SELECT 2");
    assert.deepEqual(
      results.map((rows) => rows.map((r) => ({ ...r }))),
      [[{ 1: 1 }], [{ 2: 2 }]],
    );
    const [use] = await connection.query<mysql.ResultSetHeader & { stateChanges?: { schema: string } }>("USE app");
    assert.equal(use.stateChanges?.schema, "app", "mysql2 read the codec's SCHEMA entry");
    const [loaded] = await connection.query<mysql.ResultSetHeader>("LOAD DATA LOCAL INFILE '/tmp/data.csv' INTO TABLE users");
    assert.equal(loaded.affectedRows, 1);
    assert.deepEqual(server.recorded.infileData, [Buffer.from("1,alice\n2,bob\n")]);
    await connection.changeUser({ user: "bob", password: "b0b" });
    assert.equal(server.recorded.changeUsers[0]!.username, "bob");
    assert.deepEqual(server.recorded.authOutcomes, ["native alice", "native bob"]);
    await connection.end();
  });

  test("16 MiB and more: a 17 MiB SQL text mysql2 split into packets, a 17 MiB value the codec split", async () => {
    const server = await serve({});
    const connection = await connect(server, { maxPreparedStatements: 1 });
    const sql = `SELECT '${"x".repeat(17 * 1024 * 1024)}'`;
    const [rows] = await connection.query<mysql.RowDataPacket[]>(sql);
    assert.equal(server.recorded.queries[0]!.sql.length, sql.length, "reassembled from mysql2's packets");
    assert.equal(rows[0]!.n, sql.length);
    const [big] = await connection.query<mysql.RowDataPacket[]>("SELECT big");
    assert.ok(Buffer.isBuffer(big[0]!.big));
    assert.equal((big[0]!.big as Buffer).length, 17 * 1024 * 1024);
    await connection.end();
  });

  test("MySQL 8 query attributes and MariaDB's extended capabilities, when the server offers them", async () => {
    const attributes = await serve({ capabilities: (offered | Capability.QueryAttributes) >>> 0 });
    const connection = await connect(attributes);
    await connection.query({ sql: "SELECT with_attributes", attributes: { trace: "t1" } } as mysql.QueryOptions);
    assert.deepEqual(
      attributes.recorded.queries[0]!.attributes.map((a) => ({ name: a.name, value: a.value?.toString() })),
      [{ name: "trace", value: "t1" }],
    );
    await connection.execute("SELECT x = ?", [1]);
    assert.equal(attributes.recorded.executes[0]!.parameters.length, 1, "the parameter count mysql2 sent first");
    await connection.end();

    const mariadb = await serve({
      serverVersion: "5.5.5-10.11.6-MariaDB",
      capabilities: (offered & ~Capability.LongPassword) >>> 0,
      mariaDbCapabilities: MariaDbCapability.ExtendedMetadata,
    });
    const onMaria = await connect(mariadb);
    assert.equal(mariadb.recorded.handshakeResponses[0]!.mariaDbCapabilities, MariaDbCapability.ExtendedMetadata, "mysql2 asked for extended metadata");
    const [rows] = await onMaria.query<mysql.RowDataPacket[]>("SELECT id, email, score, born, note FROM users");
    assert.equal(rows[0]!.email, "alice@example.com", "column definitions with the extended block read by mysql2");
    await onMaria.end();
  });
});
