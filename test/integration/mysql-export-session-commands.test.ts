// Issue 21: the session commands real clients and pools send, through a MySQL export, each as
// sound as the rest: cursors (COM_STMT_EXECUTE with a cursor flag, then COM_STMT_FETCH),
// COM_RESET_CONNECTION and COM_CHANGE_USER. Each attack is shown leaking on a direct connection
// to MariaDB and not through the export.
//
// No client at hand opens cursors (mysql2 always executes without one; MariaDB Connector/J has no
// server cursors), so the cursor tests drive the export with the codec as a raw client
// (test/helpers/mysql-codec-client.ts), with and without CLIENT_DEPRECATE_EOF; mysql2 sends
// COM_RESET_CONNECTION (`reset()`) and COM_CHANGE_USER (`changeUser()`), and multi-statements
// (`multipleStatements: true`).
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import mysql from "mysql2/promise";
import { decodeBinaryRow } from "../../protocols/mysql/binary-row";
import { Capability, hasCapability } from "../../protocols/mysql/capabilities";
import { decodeColumnCount } from "../../protocols/mysql/column-count";
import { decodeColumnDefinition, type ColumnDefinition } from "../../protocols/mysql/column-definition";
import { Command } from "../../protocols/mysql/commands";
import { decodeErrPacket, isErrPacket } from "../../protocols/mysql/err-packet";
import { decodeHandshake } from "../../protocols/mysql/handshake";
import { decodeResultsetEnd, isResultsetEnd } from "../../protocols/mysql/resultset-end";
import { newRowValues } from "../../protocols/mysql/row-values";
import { encodeStmtFetch } from "../../protocols/mysql/statement-commands";
import { CursorFlag, encodeStmtExecute } from "../../protocols/mysql/stmt-execute";
import { decodeStmtPrepareOk } from "../../protocols/mysql/stmt-prepare-ok";
import { ServerStatus } from "../../protocols/mysql/status-flags";
import { encodeTextCommand } from "../../protocols/mysql/text-commands";
import type { NatsServerProcess } from "../../service/nats-server";
import { call as request } from "../../testkit/http";
import { MariaDbServer } from "../../testkit/mariadb";
import { startNats } from "../../testkit/nats";
import { NodeProcess } from "../../testkit/node-process";
import { freePort } from "../../testkit/ports";
import { firstSuccess } from "../../testkit/wait";
import { createMysqlPopulation, reader } from "../fixtures/mysql-population";
import { configureOrdersWorld } from "../fixtures/orders-policy";
import { forbiddenValues } from "../fixtures/postgres-verdicts";
import { CodecClient, nativePasswordLogin } from "../helpers/mysql-codec-client";

const ALLOWED = "accepted";
const DROPPED = "not-accepted";
const droppedEmail = `${DROPPED}@example.com`;
const allowedEmail = `${ALLOWED}@example.com`;
/** A second account of the store, for COM_CHANGE_USER. */
const other = { user: "reader2", password: "reader2-pw" } as const;

/** A logged-in raw client and what it agreed with the server. */
interface RawSession {
  client: CodecClient;
  capabilities: number;
}

/** Every raw client opened, closed after the suite whatever happened (an open socket would keep the test process alive). */
const rawClients: CodecClient[] = [];

async function rawLogin(port: number, deprecateEof: boolean): Promise<RawSession> {
  const client = await CodecClient.connect(port);
  rawClients.push(client);
  const handshake = decodeHandshake(await client.read());
  const wanted =
    Capability.Protocol41 |
    Capability.SecureConnection |
    Capability.PluginAuth |
    Capability.ConnectWithDb |
    Capability.Transactions |
    (deprecateEof ? Capability.DeprecateEof : 0);
  const capabilities = (wanted & handshake.capabilities) >>> 0;
  assert.equal(hasCapability(capabilities, Capability.DeprecateEof), deprecateEof, "the server agrees to CLIENT_DEPRECATE_EOF as asked");
  client.send(nativePasswordLogin(handshake, capabilities, reader));
  const answer = await client.read();
  assert.equal(answer[0], 0x00, isErrPacket(answer) ? decodeErrPacket(answer).message : "logged in");
  return { client, capabilities };
}

/** An error answer's number, or throws when the answer is not an error. */
function errorCode(payload: Buffer): number {
  assert.ok(isErrPacket(payload), `an ERR packet, not 0x${payload[0]?.toString(16)}`);
  return decodeErrPacket(payload).code;
}

/** Prepares `sql`; its id and the result's column count as the server (or export) says. */
async function prepare({ client, capabilities }: RawSession, sql: string): Promise<{ statementId: number; columns: number }> {
  client.command(encodeTextCommand(Command.StmtPrepare, sql));
  const first = await client.read();
  if (isErrPacket(first)) throw new Error(`prepare refused: ${decodeErrPacket(first).message}`);
  const ok = decodeStmtPrepareOk(first, capabilities);
  const eof = !hasCapability(capabilities, Capability.DeprecateEof);
  const packets = ok.parameterCount + ok.columnCount + (eof && ok.parameterCount > 0 ? 1 : 0) + (eof && ok.columnCount > 0 ? 1 : 0);
  for (let i = 0; i < packets; i++) await client.read();
  return { statementId: ok.statementId, columns: ok.columnCount };
}

/** What a cursor gave: the definitions sent at execute, the rows fetched (binary, decoded as text), every byte seen as text, and the fetches made. */
interface CursorOutcome {
  columns: ColumnDefinition[];
  rows: Array<Array<string | null>>;
  text: string;
  fetches: number;
}

/** Opens a read-only cursor on a prepared statement and fetches it `perFetch` rows at a time to its last row. */
async function readCursor(session: RawSession, statementId: number, perFetch: number): Promise<CursorOutcome> {
  const { client, capabilities } = session;
  client.command(encodeStmtExecute({ statementId, flags: CursorFlag.ReadOnly, iterationCount: 1, parameters: [], typesSent: false }, capabilities));
  const first = await client.read();
  if (isErrPacket(first)) throw new Error(`execute refused: ${decodeErrPacket(first).message}`);
  const { columnCount } = decodeColumnCount(first, capabilities);
  const columns: ColumnDefinition[] = [];
  for (let i = 0; i < columnCount; i++) columns.push(decodeColumnDefinition(await client.read()));
  const opened = await client.read();
  assert.ok(isResultsetEnd(opened, capabilities), "the definitions end, no rows at execute");
  assert.ok(decodeResultsetEnd(opened, capabilities).statusFlags & ServerStatus.CursorExists, "a cursor is open");
  const types = columns.map((c) => c.type);
  const values = newRowValues(columnCount);
  const outcome: CursorOutcome = { columns, rows: [], text: columns.map((c) => `${c.table}.${c.name}`).join(" "), fetches: 0 };
  for (;;) {
    client.command(encodeStmtFetch({ statementId, rows: perFetch }));
    outcome.fetches++;
    let status: number;
    for (;;) {
      const payload = await client.read();
      outcome.text += payload.toString("latin1");
      if (isErrPacket(payload)) throw new Error(`fetch refused: ${decodeErrPacket(payload).message}`);
      if (isResultsetEnd(payload, capabilities)) {
        status = decodeResultsetEnd(payload, capabilities).statusFlags;
        break;
      }
      decodeBinaryRow(payload, types, values);
      outcome.rows.push(
        types.map((_, i) => (values.lengths[i]! < 0 ? null : payload.toString("utf8", values.starts[i]!, values.starts[i]! + values.lengths[i]!))),
      );
    }
    if (status & ServerStatus.LastRowSent || !(status & ServerStatus.CursorExists)) return outcome;
    assert.ok(outcome.fetches < 1000, "the cursor ends");
  }
}

describe("MySQL export session commands (issue 21): cursors, COM_RESET_CONNECTION, COM_CHANGE_USER, multi-statements", () => {
  let db: MariaDbServer;
  let nats: NatsServerProcess;
  let node: NodeProcess;
  let port: number;
  let forbidden: string[];
  const call = (method: string, path: string, body?: unknown) => request(node, method, path, body);
  const open = (to: number, account: { user: string; password: string } = reader) =>
    mysql.createConnection({ host: "127.0.0.1", port: to, user: account.user, password: account.password, database: "app" });
  const leaksIn = (text: string): string[] => {
    const lower = text.toLowerCase();
    return forbidden.filter((v) => lower.includes(v.toLowerCase()));
  };

  before(async () => {
    db = await MariaDbServer.start();
    await createMysqlPopulation(db);
    const admin = await mysql.createConnection({ ...db.connectionOptions, multipleStatements: true });
    // A function a SELECT can call that writes: the read-only session is what stops it.
    await admin.query(`
      CREATE FUNCTION app.note_it() RETURNS INT MODIFIES SQL DATA BEGIN INSERT INTO app.audit_notes (note) VALUES ('written'); RETURN 1; END;
      CREATE USER '${other.user}'@'127.0.0.1' IDENTIFIED BY '${other.password}';
      GRANT ALL PRIVILEGES ON app.* TO '${other.user}'@'127.0.0.1';
    `);
    await admin.end();
    nats = await startNats();
    node = await NodeProcess.start({ nodeId: "mysql-session-commands-1", natsUrl: nats.url });
    const allowed = await configureOrdersWorld(call, node.url);
    assert.ok(allowed.get(ALLOWED)?.has("contact") && allowed.get(DROPPED) === undefined);
    forbidden = forbiddenValues(allowed);
    assert.ok(forbidden.includes(droppedEmail));
    port = await freePort();
    const body = {
      type: "mysql",
      endpoint: `127.0.0.1:${db.port}`,
      resolverGroup: "users-table",
      metadata: { type: "platformUse", purposeId: "service" },
      port,
    };
    assert.equal((await call("PUT", "/export", body)).status, 200);
    await (await firstSuccess(() => open(port), 15_000)).end();
  });

  after(async () => {
    for (const client of rawClients) client.close();
    await node?.stop();
    await nats?.stop();
    await db?.stop();
  });

  for (const deprecateEof of [true, false]) {
    test(`cursors (${deprecateEof ? "CLIENT_DEPRECATE_EOF" : "EOF packets"}): fetched rows are decided as binary rows, the definitions sent at execute are the rewritten ones`, async () => {
      // The export adds the hidden user column `id` to this statement; the client never sees it.
      const sql = "SELECT email, login FROM users";
      const straight = await rawLogin(db.port, deprecateEof);
      const direct = await readCursor(straight, (await prepare(straight, sql)).statementId, 2);
      straight.client.close();
      assert.ok(leaksIn(direct.text).includes(droppedEmail), `straight from MariaDB the cursor shows a forbidden value: ${direct.text}`);
      assert.ok(direct.fetches > 2, "the rows came in several fetches");

      const session = await rawLogin(port, deprecateEof);
      const { statementId, columns } = await prepare(session, sql);
      assert.equal(columns, 2, "COM_STMT_PREPARE_OK counts the client's columns only");
      const exported = await readCursor(session, statementId, 2);
      assert.deepEqual(leaksIn(exported.text), [], `no forbidden value through the export's cursor: ${exported.text}`);
      assert.deepEqual(
        exported.columns.map((c) => c.name),
        ["email", "login"],
        "the definitions at execute leave the hidden user column out",
      );
      assert.ok(exported.rows.every((row) => row.length === 2));
      assert.ok(
        exported.rows.some((row) => row[0] === allowedEmail),
        `an allowed user's value comes through the cursor: ${JSON.stringify(exported.rows)}`,
      );
      // The same statement without a cursor, through the export (mysql2): the same rows.
      const plain = await open(port);
      const [rows] = await plain.execute({ sql, rowsAsArray: true });
      await plain.end();
      assert.deepEqual(exported.rows, rows, "a cursor decides exactly as a binary resultset");
      assert.ok(exported.rows.length < direct.rows.length, "rows of users who may not be used were dropped");

      // A fetch on a statement without an open cursor, or a cursor kind the export does not serve: answered by the export.
      session.client.command(encodeStmtFetch({ statementId, rows: 1 }));
      const afterEnd = await session.client.read();
      assert.ok(isErrPacket(afterEnd) || isResultsetEnd(afterEnd, session.capabilities), "past the last row: an error or an empty fetch");
      const unopened = await prepare(session, "SELECT email FROM users WHERE id = 'x'");
      session.client.command(encodeStmtFetch({ statementId: unopened.statementId, rows: 1 }));
      assert.equal(errorCode(await session.client.read()), 1421, "no cursor open: ER_STMT_HAS_NO_OPEN_CURSOR");
      session.client.command(
        encodeStmtExecute({ statementId, flags: CursorFlag.Scrollable, iterationCount: 1, parameters: [], typesSent: false }, session.capabilities),
      );
      assert.equal(errorCode(await session.client.read()), 1047, "scrollable cursors are refused");
      session.client.close();
    });
  }

  test("COM_RESET_CONNECTION (mysql2 reset()): the session is read-only again and its rows still decided", async () => {
    // Straight to MariaDB a reset undoes SET SESSION TRANSACTION READ ONLY: the function writes.
    const direct = await open(db.port);
    await direct.query("SET SESSION TRANSACTION READ ONLY");
    await assert.rejects(direct.query("SELECT app.note_it()"), (e: { errno: number }) => e.errno === 1792, "read-only before the reset");
    await direct.reset();
    await direct.query("SELECT app.note_it()");
    await direct.end();

    const through = await open(port);
    await assert.rejects(through.query("SELECT app.note_it()"), (e: { errno: number }) => e.errno === 1792, "the export's session is read-only");
    const [before] = await through.execute({ sql: "SELECT email FROM users WHERE id = ?", rowsAsArray: true }, [ALLOWED]);
    assert.deepEqual(before, [[allowedEmail]]);
    await through.reset();
    await assert.rejects(through.query("SELECT app.note_it()"), (e: { errno: number }) => e.errno === 1792, "still read-only after the reset");
    const [rows] = await through.query({ sql: "SELECT email FROM users", rowsAsArray: true });
    assert.deepEqual(leaksIn(JSON.stringify(rows)), [], "rows decided after the reset");
    assert.ok(JSON.stringify(rows).includes(allowedEmail));
    // mysql2 prepares again after a reset (its statement cache is dropped with the server's statements).
    const [again] = await through.execute({ sql: "SELECT email FROM users WHERE id = ?", rowsAsArray: true }, [DROPPED]);
    assert.deepEqual(again, [], "a prepared statement after the reset is decided too");
    await through.end();
  });

  test("COM_RESET_CONNECTION forgets the session's prepared statements: executing an old id is refused by the export", async () => {
    const session = await rawLogin(port, true);
    const { statementId } = await prepare(session, "SELECT email FROM users");
    session.client.command(Buffer.from([Command.ResetConnection]));
    assert.equal((await session.client.read())[0], 0x00, "reset: OK");
    session.client.command(
      encodeStmtExecute({ statementId, flags: CursorFlag.NoCursor, iterationCount: 1, parameters: [], typesSent: false }, session.capabilities),
    );
    assert.equal(errorCode(await session.client.read()), 1243, "ER_UNKNOWN_STMT_HANDLER");
    session.client.close();
  });

  test("multi-statements (mysql2 multipleStatements): each statement analysed and its result decided on its own; one refused statement refuses the text", async () => {
    const text = `SELECT email FROM users WHERE id = '${DROPPED}'; SELECT id, email FROM users WHERE id = '${ALLOWED}'; SELECT 1 AS one`;
    const direct = await mysql.createConnection({
      host: "127.0.0.1",
      port: db.port,
      user: reader.user,
      password: reader.password,
      database: "app",
      multipleStatements: true,
    });
    const [straight] = await direct.query({ sql: text, rowsAsArray: true });
    assert.ok(
      leaksIn(JSON.stringify(straight)).includes(droppedEmail),
      `straight from MariaDB the first statement shows a forbidden value: ${JSON.stringify(straight)}`,
    );
    const through = await mysql.createConnection({
      host: "127.0.0.1",
      port,
      user: reader.user,
      password: reader.password,
      database: "app",
      multipleStatements: true,
    });
    const [results] = await through.query({ sql: text, rowsAsArray: true });
    // The users-table mapping gives id no category: its values are NULL, the row stays; SELECT 1 reads no table (a schema read: it passes).
    assert.deepEqual(results, [[], [[null, allowedEmail]], [[1]]], "three results, each decided with its own statement's analysis");
    // One statement refused: nothing of the text runs (the read-only refusal is the only answer).
    const [[notesBefore]] = (await direct.query({ sql: "SELECT COUNT(*) FROM audit_notes", rowsAsArray: true })) as unknown as [[[number]]];
    await assert.rejects(
      through.query(`SELECT app.note_it(); SELECT email FROM users; DELETE FROM audit_notes`),
      (e: { errno: number; message: string }) => e.errno === 1792 && /statement 3 of 3/.test(e.message),
      "a write in a read-only export refuses the whole text",
    );
    const [[notesAfter]] = (await direct.query({ sql: "SELECT COUNT(*) FROM audit_notes", rowsAsArray: true })) as unknown as [[[number]]];
    assert.deepEqual(notesAfter, notesBefore, "the first statement did not run either");
    // The server's error ends the sequence, as on MariaDB.
    await assert.rejects(through.query("SELECT email FROM users; SELECT nope FROM users; SELECT 1"), (e: { errno: number }) => e.errno === 1054);
    const [after] = await through.query({ sql: "SELECT 2 AS two", rowsAsArray: true });
    assert.deepEqual(after, [[2]], "the connection goes on (a constant reads no table: a schema read, it passes)");
    await through.end();
    await direct.end();
    // Without CLIENT_MULTI_STATEMENTS a multi-statement is refused, as the server refuses it.
    const single = await open(port);
    await assert.rejects(single.query(text), (e: { errno: number }) => e.errno === 1235);
    await single.end();
  });

  test("COM_CHANGE_USER (mysql2 changeUser()): a new login through the backend; read-only and decided as before; a wrong password ends the connection", async () => {
    const direct = await open(db.port);
    await direct.query("SET SESSION TRANSACTION READ ONLY");
    await direct.changeUser({ user: other.user, password: other.password, database: "app" });
    await direct.query("SELECT app.note_it()");
    const [[whoDirect]] = (await direct.query({ sql: "SELECT CURRENT_USER()", rowsAsArray: true })) as unknown as [[[string]]];
    assert.match(whoDirect[0], /^reader2@/, "straight from MariaDB the change took effect and undid read-only");
    await direct.end();

    const through = await open(port);
    await through.changeUser({ user: other.user, password: other.password, database: "app" });
    await assert.rejects(through.query("SELECT app.note_it()"), (e: { errno: number }) => e.errno === 1792, "read-only again after the change");
    const [rows] = await through.query({ sql: "SELECT id, email FROM users", rowsAsArray: true });
    assert.deepEqual(leaksIn(JSON.stringify(rows)), [], "rows decided for the new login");
    assert.ok(JSON.stringify(rows).includes(allowedEmail));
    await assert.rejects(
      through.changeUser({ user: other.user, password: "wrong", database: "app" }),
      (e: { errno: number }) => e.errno === 1045,
      "the backend's own refusal",
    );
    await assert.rejects(through.query("SELECT 1"), "the connection ended after a refused change of user");
    through.destroy();
  });

  test("COM_CHANGE_USER to a no-pad collation of big5 (id 1025: two bytes, which the handshake cannot carry) is refused: the session would read a backslash after a multi-byte character otherwise than the parser", async () => {
    // mysql2 sends its configured collation id in COM_CHANGE_USER and names none above 255: the test sets the id itself.
    const changeTo = async (connection: mysql.Connection, collation: number) => {
      const config = (connection as unknown as { connection: { config: { charsetNumber: number } } }).connection.config;
      const before = config.charsetNumber;
      config.charsetNumber = collation;
      try {
        await connection.changeUser({ user: reader.user, password: reader.password, database: "app" });
      } finally {
        config.charsetNumber = before;
      }
    };
    const query = async (connection: mysql.Connection, sql: string) => JSON.stringify((await connection.query({ sql, rowsAsArray: true }))[0]);
    // U+FFFD is EF BF BD in UTF-8; to big5, BD 5C is one character, so the quote after the backslash
    // ends the string and `#` makes the rest a comment. The parser reads one string: a schema read,
    // whose rows pass whole, and its printing is the same text.
    const sql = "SELECT '\uFFFD\\', email, id FROM app.users #' AS x FROM information_schema.SCHEMATA";
    const direct = await open(db.port);
    await changeTo(direct, 1025);
    assert.equal(await query(direct, "SELECT @@character_set_client"), '[["big5"]]');
    assert.ok(
      (await query(direct, sql.replace("AS x FROM information_schema.SCHEMATA", "AS `x` FROM `information_schema`.`SCHEMATA`"))).includes(droppedEmail),
    );
    await direct.end();

    const through = await open(port);
    await assert.rejects(changeTo(through, 1025), (e: { errno: number }) => e.errno === 1115, "refused as a big5 login is");
    through.destroy();
    const again = await open(port);
    assert.equal(await query(again, "SELECT @@character_set_client"), '[["utf8mb4"]]');
    assert.deepEqual(leaksIn(await query(again, sql)), []);
    await again.end();
  });
});
