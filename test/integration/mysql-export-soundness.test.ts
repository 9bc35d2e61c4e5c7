// Issue 21: a MySQL export must be as sound as a PostgreSQL export (issue 18). Each attack runs
// twice with the same SQL and the same client (mysql2): straight against MariaDB, where it must
// expose a forbidden value (so the attack is real and the check can fail), and through an export,
// where no forbidden value may reach the client (rows, error messages, warnings). Where the
// export still shows allowed values, that is checked too, so an export that answers nothing fails.
//
// The world is mysql-export.test.ts's (users of the mixed population, orders(id, user_id, item)
// mapped with user_id as the resource context), purpose "service". "not-accepted" (never accepted
// the terms) is the user whose values the attacks try to read; "accepted" may be used.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import mysql from "mysql2/promise";
import { Capability, hasCapability } from "../../protocols/mysql/capabilities";
import { Command } from "../../protocols/mysql/commands";
import { decodeErrPacket, isErrPacket } from "../../protocols/mysql/err-packet";
import { decodeHandshake } from "../../protocols/mysql/handshake";
import type { NatsServerProcess } from "../../service/nats-server";
import { call as request } from "../../testkit/http";
import { startNats } from "../../testkit/nats";
import { NodeProcess } from "../../testkit/node-process";
import { freePort } from "../../testkit/ports";
import { firstSuccess } from "../../testkit/wait";
import { MariaDbServer } from "../../testkit/mariadb";
import { createMysqlPopulation, reader } from "../fixtures/mysql-population";
import { forbiddenWithOrders, configureOrdersWorld } from "../fixtures/orders-policy";
import { type Verdicts } from "../fixtures/postgres-verdicts";
import { CodecClient, nativePasswordLogin } from "../helpers/mysql-codec-client";
import { attempt, type Outcome } from "../helpers/mysql-attempt";

const ALLOWED = "accepted";
const DROPPED = "not-accepted";
const droppedEmail = `${DROPPED}@example.com`;
describe("MySQL export soundness (issue 21): attacks that leak straight from MariaDB do not leak through the export", () => {
  let db: MariaDbServer;
  let nats: NatsServerProcess;
  let node: NodeProcess;
  let readOnlyPort: number;
  let writablePort: number;
  let strictPort: number;
  let strict: mysql.Connection;
  let allowed: Verdicts;
  let forbidden: string[];
  let direct: mysql.Connection;
  let through: mysql.Connection;
  let writable: mysql.Connection;
  const call = (method: string, path: string, body?: unknown) => request(node, method, path, body);
  const open = (port: number) => mysql.createConnection({ host: "127.0.0.1", port, user: reader.user, password: reader.password, database: "app" });

  const leaksIn = (text: string): string[] => {
    const lower = text.toLowerCase();
    return forbidden.filter((v) => lower.includes(v.toLowerCase()) || lower.includes(Buffer.from(v).toString("hex")));
  };

  /** The attack reads a forbidden value straight from MariaDB, and none through the export. */
  const assertBlocked = async (sql: string, what: string, options: { prepared?: boolean; via?: () => mysql.Connection } = {}): Promise<Outcome> => {
    const straight = await attempt(direct, sql, options.prepared);
    assert.ok(
      leaksIn(straight.text).includes(droppedEmail) || leaksIn(straight.text).length > 0,
      `${what}: the attack is real (straight from MariaDB it shows a forbidden value): ${straight.text}`,
    );
    const exported = await attempt(options.via?.() ?? through, sql, options.prepared);
    assert.deepEqual(leaksIn(exported.text), [], `${what}: forbidden values reached the client through the export: ${exported.text}`);
    return exported;
  };

  const waitOpen = (port: number) => firstSuccess(() => open(port), 15_000);

  before(async () => {
    db = await MariaDbServer.start();
    await createMysqlPopulation(db);
    // Server-side code an operator left in the database: a function and a procedure that raise a value as their message.
    const admin = await mysql.createConnection({ ...db.connectionOptions, multipleStatements: true });
    await admin.query(`
      CREATE FUNCTION app.leak_signal() RETURNS INT READS SQL DATA BEGIN DECLARE v VARCHAR(80); SELECT email INTO v FROM app.users WHERE id = '${DROPPED}'; SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = v; RETURN 1; END;
      CREATE FUNCTION app.leak_as_parse_error() RETURNS INT READS SQL DATA BEGIN DECLARE v VARCHAR(200); SELECT CONCAT("You have an error in your SQL syntax; check the manual that corresponds to your MariaDB server version for the right syntax to use near '", email, "' at line 1") INTO v FROM app.users WHERE id = '${DROPPED}'; SIGNAL SQLSTATE '42000' SET MYSQL_ERRNO = 1064, MESSAGE_TEXT = v; RETURN 1; END;
      CREATE TABLE app.k (v VARCHAR(80) PRIMARY KEY);
    `);
    await admin.end();
    nats = await startNats();
    node = await NodeProcess.start({ nodeId: "mysql-soundness-1", natsUrl: nats.url });
    allowed = await configureOrdersWorld(call, node.url);
    assert.ok(allowed.get(ALLOWED)?.has("contact") && allowed.get(DROPPED) === undefined);
    forbidden = forbiddenWithOrders(allowed);
    assert.ok(forbidden.includes(droppedEmail));
    readOnlyPort = await freePort();
    writablePort = await freePort();
    strictPort = await freePort();
    const base = { type: "mysql", endpoint: `127.0.0.1:${db.port}`, resolverGroup: "users-table", metadata: { type: "platformUse", purposeId: "service" } };
    assert.equal((await call("PUT", "/export", { ...base, port: readOnlyPort })).status, 200);
    assert.equal((await call("PUT", "/export", { ...base, port: writablePort, allowWrites: true })).status, 200);
    assert.equal((await call("PUT", "/export", { ...base, port: strictPort, strict: true })).status, 200);
    direct = await open(db.port);
    through = await waitOpen(readOnlyPort);
    writable = await waitOpen(writablePort);
    strict = await waitOpen(strictPort);
  });

  after(async () => {
    await direct?.end().catch(() => undefined);
    await through?.end().catch(() => undefined);
    await writable?.end().catch(() => undefined);
    await strict?.end().catch(() => undefined);
    await node?.stop();
    await nats?.stop();
    await db?.stop();
  });

  test("strict: predicates on other columns than resource-context ones, which infer values the export empties, are refused", async () => {
    const secret = await attempt(direct, `SELECT secret FROM users WHERE id = '${ALLOWED}'`);
    assert.deepEqual(secret.rows, [[`secret-${ALLOWED}`]], "directly, the unmapped value is there");
    const probe = (prefix: string) => `SELECT id FROM users WHERE id = '${ALLOWED}' AND secret LIKE '${prefix}%'`;
    assert.equal((await attempt(through, probe(`secret-${ALLOWED.slice(0, 1)}`))).rows.length, 1);
    assert.equal(
      (await attempt(through, probe("secret-z"))).rows.length,
      0,
      "through a non-strict export the predicate tells the value apart by which rows come back",
    );
    for (const [sql, prepared] of [
      [probe("secret-a"), false],
      [probe("secret-z"), true],
      [`SELECT id, email FROM users WHERE id = '${ALLOWED}' ORDER BY email`, false],
      [`SELECT id, email FROM users WHERE id = '${ALLOWED}' ORDER BY 2`, false],
      ["SELECT id FROM users GROUP BY login", false],
      [`SELECT u.id FROM users u JOIN users b ON b.email = u.email WHERE u.id = '${ALLOWED}'`, false],
      ["SELECT id, ROW_NUMBER() OVER (ORDER BY clicks) FROM users", false],
      [`SELECT id FROM users WHERE id IN (SELECT id FROM users WHERE name LIKE 'Name a%')`, true],
      // MariaDB orders by an output column's alias before a table's column: the alias's expression is what is checked.
      [`SELECT id AS uid, email, IF(secret LIKE 'secret-a%', 1, 0) AS id FROM users WHERE id IN ('${ALLOWED}', 'child') ORDER BY id DESC LIMIT 1`, false],
      [`SELECT id, IF(secret LIKE 'secret-a%', 1, 0) AS id2 FROM users GROUP BY id HAVING id2 = 1`, false],
    ] as const) {
      const outcome = await attempt(strict, sql, prepared);
      assert.equal(outcome.error?.errno, 1227, `${sql}: ${outcome.text}`);
      assert.match(outcome.error!.message, /this export is strict: .* may use only resource-context columns \(id, user_id\)/);
    }
    // The same alias oracle straight from MariaDB: which allowed row comes first tells the unmapped value.
    const aliasOracle = (prefix: string) =>
      `SELECT id AS uid, IF(secret LIKE '${prefix}%', id = '${ALLOWED}', id = 'child') AS id FROM users WHERE id IN ('${ALLOWED}', 'child') ORDER BY id DESC LIMIT 1`;
    assert.deepEqual(
      (await attempt(direct, aliasOracle(`secret-${ALLOWED.slice(0, 1)}`))).rows.map((r) => r[0]),
      [ALLOWED],
    );
    assert.deepEqual(
      (await attempt(direct, aliasOracle("secret-z"))).rows.map((r) => r[0]),
      ["child"],
      "directly, the alias orders by the secret",
    );
    assert.deepEqual(
      (await attempt(strict, `SELECT id AS id, email FROM users WHERE id = '${ALLOWED}' ORDER BY id`)).rows,
      [[null, `${ALLOWED}@example.com`]],
      "an alias naming the column itself orders by it",
    );
    const allowedRows = await attempt(strict, `SELECT id, email FROM users WHERE id = '${ALLOWED}' ORDER BY 1`);
    assert.deepEqual(allowedRows.rows, [[null, `${ALLOWED}@example.com`]], "predicates on resource-context columns pass");
    const joined = await attempt(strict, `SELECT u.email, o.item FROM users u JOIN orders o ON o.user_id = u.id WHERE u.id = '${ALLOWED}'`, true);
    assert.deepEqual(joined.rows, [[`${ALLOWED}@example.com`, `item-${ALLOWED}`]], "a join on resource-context columns passes");
  });

  test("self-joins: each value is decided by its own instance's user, told apart by alias", async () => {
    const sql = `SELECT a.id, a.email, b.email FROM users a JOIN users b ON b.id = '${DROPPED}' WHERE a.id = '${ALLOWED}'`;
    const shown = await assertBlocked(sql, "self-join, the other instance's user not selected");
    assert.deepEqual(shown.rows, [], "b's user, added as a hidden column, may not be used: the row is dropped");
    const both = await attempt(through, `SELECT a.email, b.email FROM users a JOIN users b ON b.id = a.id WHERE a.id = '${ALLOWED}'`);
    assert.deepEqual(both.rows, [[`${ALLOWED}@example.com`, `${ALLOWED}@example.com`]], "each instance decided by its own hidden user column");
    const withUser = await assertBlocked(
      `SELECT a.id, a.email, b.id, b.email FROM users a JOIN users b ON b.id = '${DROPPED}' WHERE a.id = '${ALLOWED}'`,
      "self-join with both users",
    );
    assert.deepEqual(withUser.rows, [], "a row naming a user who may not be used is dropped");
    const swapped = await assertBlocked(
      `SELECT b.email AS email, a.id AS id FROM users a, users b WHERE a.id = '${ALLOWED}' AND b.id = '${DROPPED}'`,
      "labels swapped",
    );
    assert.deepEqual(swapped.rows, [], "b's hidden user column names the user who may not be used");
    // A client's own column named like the export's hidden one does not pose as the user.
    const posing = await assertBlocked(
      `SELECT email, '${ALLOWED}' AS warden_user_0 FROM users WHERE id = '${DROPPED}'`,
      "a column posing as the hidden user column",
    );
    assert.deepEqual(posing.rows, []);
    const prepared = await assertBlocked(`SELECT email, '${ALLOWED}' AS warden_user_0 FROM users WHERE id = '${DROPPED}'`, "the same, prepared", {
      prepared: true,
    });
    assert.deepEqual(prepared.rows, []);
    // Aliases differ only in case: two instances on the server (lower_case_table_names=0).
    await assertBlocked(`SELECT A.id, a.email FROM users A JOIN users a ON a.id = '${DROPPED}' WHERE A.id = '${ALLOWED}'`, "aliases differing in case");
    const outer = await attempt(
      through,
      `SELECT a.id, a.email, b.id, b.email FROM users a LEFT JOIN users b ON b.id = 'nobody-here' WHERE a.id = '${ALLOWED}'`,
    );
    assert.deepEqual(outer.rows, [[null, `${ALLOWED}@example.com`, null, null]], "the missing side of an outer join names no one: the row stays");
  });

  test("cross-table joins: orders' values under orders' user, users' under users'", async () => {
    const shown = await assertBlocked(
      `SELECT u.id, u.email, o.item FROM users u JOIN orders o ON o.user_id = '${DROPPED}' WHERE u.id = '${ALLOWED}'`,
      "join to another user's order",
    );
    assert.deepEqual(shown.rows, [], "the order's user (a hidden column) may not be used: the row is dropped");
    const own = await attempt(through, `SELECT u.id, u.email, o.user_id, o.item FROM users u JOIN orders o ON o.user_id = u.id WHERE u.id = '${ALLOWED}'`);
    assert.deepEqual(own.rows, [[null, `${ALLOWED}@example.com`, null, `item-${ALLOWED}`]], "a join of the allowed user's own rows shows both tables' values");
  });

  test("subqueries, derived tables and CTEs (one named like the table) posing as another user, views and UNION", async () => {
    const scalar = await assertBlocked(
      `SELECT id, email, (SELECT email FROM users WHERE id = '${DROPPED}') FROM users WHERE id = '${ALLOWED}'`,
      "scalar subquery in the select list",
    );
    assert.deepEqual(scalar.rows, [[null, `${ALLOWED}@example.com`, null]]);
    await assertBlocked(`SELECT x.id, x.email FROM (SELECT '${ALLOWED}' AS id, email FROM users WHERE id = '${DROPPED}') x`, "derived table");
    await assertBlocked(
      `SELECT users.id, users.email FROM (SELECT '${ALLOWED}' AS id, email FROM app.users WHERE id = '${DROPPED}') users`,
      "derived table named like the table",
    );
    await assertBlocked(
      `WITH users AS (SELECT '${ALLOWED}' AS id, email FROM app.users WHERE id = '${DROPPED}') SELECT id, email FROM users`,
      "CTE named like the table",
    );
    await assertBlocked(`SELECT id, email FROM users WHERE id = '${ALLOWED}' UNION ALL SELECT '${ALLOWED}', email FROM users WHERE id = '${DROPPED}'`, "UNION");
    await assertBlocked(`SELECT id, email FROM users_view WHERE id = '${DROPPED}'`, "a view the mapping does not name");
  });

  test("GROUP_CONCAT, aggregates and JSON_OBJECT: expressions are NULL, grouped rows are not attributed", async () => {
    await assertBlocked("SELECT GROUP_CONCAT(email) FROM users", "GROUP_CONCAT");
    await assertBlocked("SELECT id, GROUP_CONCAT(email) FROM users GROUP BY id", "GROUP_CONCAT per group");
    await assertBlocked(`SELECT COUNT(*), email FROM users WHERE id = '${DROPPED}'`, "aggregate beside a plain column");
    const json = await assertBlocked("SELECT id, JSON_OBJECT('e', email) FROM users", "JSON_OBJECT");
    assert.ok(json.rows.length > 0 && json.rows.every((r) => r[1] === null), "allowed users' rows stay, the expression is NULL");
  });

  test("casts with warnings: SHOW WARNINGS keeps level and code, not the quoted value", async () => {
    for (const connection of [direct, through]) await attempt(connection, `SELECT id, CAST(email AS SIGNED) FROM users WHERE id = '${DROPPED}'`);
    const straight = await attempt(direct, "SHOW WARNINGS");
    assert.ok(straight.text.includes(droppedEmail), `straight from MariaDB the warning quotes the value: ${straight.text}`);
    await attempt(through, `SELECT id, CAST(email AS SIGNED) FROM users WHERE id = '${DROPPED}'`);
    const exported = await attempt(through, "SHOW WARNINGS");
    assert.deepEqual(leaksIn(exported.text), []);
    assert.ok(exported.rows.length > 0, "the warnings are there");
    assert.deepEqual(exported.rows[0]!.slice(0, 2), ["Warning", 1292], "level and code stay");
  });

  test("error-based extraction: ExtractValue, UpdateXML, duplicate keys, SIGNAL texts keep their number and SQLSTATE, never the value", async () => {
    for (const [sql, what] of [
      [`SELECT ExtractValue('<a/>', CONCAT('/!', (SELECT email FROM users WHERE id = '${DROPPED}')))`, "ExtractValue XPath error"],
      [`SELECT UpdateXML('<a/>', CONCAT('/!', (SELECT email FROM users WHERE id = '${DROPPED}')), 'x')`, "UpdateXML XPath error"],
      [
        `SELECT id FROM users WHERE id = 'x' AND (SELECT 1 FROM (SELECT COUNT(*), CONCAT((SELECT email FROM users WHERE id = '${DROPPED}'), FLOOR(RAND(0) * 2)) g FROM information_schema.columns GROUP BY g) t)`,
        "duplicate entry of a GROUP BY (double query)",
      ],
      ["SELECT leak_signal()", "SIGNAL in a function"],
      ["SELECT leak_as_parse_error()", "SIGNAL posing as a parse error (number 1064, its wording)"],
    ] as const) {
      const exported = await assertBlocked(sql, what);
      const straight = await attempt(direct, sql);
      assert.ok(exported.error, `${what}: an error through the export too`);
      assert.equal(exported.error!.errno, straight.error!.errno, `${what}: the same error number`);
      assert.equal(exported.error!.sqlState, straight.error!.sqlState, `${what}: the same SQLSTATE`);
    }
    const writeSql = `INSERT INTO k SELECT email FROM users WHERE id = '${DROPPED}' UNION ALL SELECT email FROM users WHERE id = '${DROPPED}'`;
    const duplicate = await assertBlocked(writeSql, "duplicate key on a write (allowWrites)", { via: () => writable });
    assert.equal(duplicate.error?.errno, 1062);
    assert.equal(duplicate.error?.sqlState, "23000");
    const unknown = await attempt(through, "SELECT nosuch FROM users");
    assert.equal(unknown.error?.errno, 1054);
    assert.match(
      unknown.error!.message,
      /^Unknown column 'nosuch' in '(field list|SELECT)'$/,
      "an error quoting only the client's own statement keeps its message",
    );
  });

  test("compound statements, executable comments and stored programs are refused", async () => {
    const compound = `BEGIN NOT ATOMIC DECLARE v VARCHAR(80); SELECT email INTO v FROM users WHERE id = '${DROPPED}'; SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = v; END`;
    const refused = await assertBlocked(compound, "compound statement raising a value");
    assert.equal(refused.error?.errno, 1064);
    const comment = await assertBlocked(`SELECT id /*!, email */ FROM users WHERE id = '${DROPPED}' OR id = '${ALLOWED}'`, "executable comment");
    assert.equal(comment.error?.errno, 1064);
    const mariaComment = await assertBlocked(
      `SELECT id /*M!100000 , email */ FROM users WHERE id = '${DROPPED}' OR id = '${ALLOWED}'`,
      "MariaDB executable comment",
    );
    assert.equal(mariaComment.error?.errno, 1064);
    const writableCompound = await attempt(writable, compound);
    assert.equal(writableCompound.error?.errno, 1064, "refused with allowWrites too");
    // `--` without a space: a comment to the parser, two minus signs and a string to MariaDB, which then reads
    // 'accepted' AS id where the parser sees the users.id column: every user's values decided as accepted's.
    const dashes = `SELECT x.id, x.m FROM (SELECT email AS m, 0 --'\nAS q, id #' AS q, '${ALLOWED}' AS id\nFROM users) x`;
    const dashed = await assertBlocked(dashes, "'--' without a space hiding the user column");
    assert.equal(dashed.error?.errno, 1064);
    assert.match(dashed.error!.message, /'--' not followed by a space/);
    assert.equal((await attempt(writable, dashes)).error?.errno, 1064, "with allowWrites too");
    assert.deepEqual(
      (await attempt(through, `SELECT email -- a comment\nFROM users WHERE id = '${ALLOWED}'`)).rows,
      [[`${ALLOWED}@example.com`]],
      "'-- ' comments pass",
    );
    // NO_BACKSLASH_ESCAPES: the parser would still read \' as an escaped quote, the server as a backslash and a quote's end.
    for (const mode of [
      "SET sql_mode='NO_BACKSLASH_ESCAPES'",
      "SET @@session.sql_mode='ANSI_QUOTES'",
      "SET SESSION sql_mode=concat(@@sql_mode, ',PIPES_AS_CONCAT')",
    ]) {
      const set = await attempt(writable, mode);
      assert.equal(set.error?.errno, 1227, `${mode}: refused with allowWrites: ${set.text}`);
    }
    // Modes that leave how statements are read alone are drivers' session set-up (docs/mysql-export.md, "Session settings").
    assert.equal((await attempt(writable, "SET SESSION sql_mode=''")).error, undefined);
  });

  test("prepared statements (binary protocol) get the same decisions", async () => {
    const joined = await assertBlocked(
      `SELECT a.id, a.email, b.email FROM users a JOIN users b ON b.id = '${DROPPED}' WHERE a.id = '${ALLOWED}'`,
      "prepared self-join",
      { prepared: true },
    );
    assert.deepEqual(joined.rows, [], "b's hidden user column, in a binary result too");
    const own = await attempt(through, `SELECT a.email, b.email FROM users a JOIN users b ON b.id = a.id WHERE a.id = '${ALLOWED}'`, true);
    assert.deepEqual(own.rows, [[`${ALLOWED}@example.com`, `${ALLOWED}@example.com`]]);
    await assertBlocked(
      `SELECT id, email FROM users WHERE id = '${ALLOWED}' UNION ALL SELECT '${ALLOWED}', email FROM users WHERE id = '${DROPPED}'`,
      "prepared UNION",
      { prepared: true },
    );
    await assertBlocked("SELECT leak_signal()", "prepared SIGNAL", { prepared: true });
  });

  test("LAST_INSERT_ID(expr) cannot carry a value out through OK packets", async () => {
    await attempt(direct, `SELECT LAST_INSERT_ID(LENGTH(email) * 1000 + ASCII(email)) FROM users WHERE id = '${DROPPED}'`);
    const straight = await attempt(direct, "SELECT LAST_INSERT_ID()");
    assert.equal(Number(straight.rows[0]![0]), droppedEmail.length * 1000 + droppedEmail.charCodeAt(0), "straight from MariaDB it carries a value");
    await attempt(through, `SELECT LAST_INSERT_ID(LENGTH(email) * 1000 + ASCII(email)) FROM users WHERE id = '${DROPPED}'`);
    const exported = await through.query("USE app");
    assert.equal((exported[0] as mysql.ResultSetHeader).insertId, 0, "no last insert id in an OK through a read-only export");
    assert.deepEqual((await attempt(through, "SELECT LAST_INSERT_ID()")).rows, [], "an expression names no user: no row");
  });

  test("the greeting never offers LOCAL INFILE or session tracking; replication and administration commands are refused", async () => {
    const greeting = async (port: number) => {
      const client = await CodecClient.connect(port);
      const handshake = decodeHandshake(await client.read());
      return { client, handshake };
    };
    const straight = await greeting(db.port);
    straight.client.close();
    for (const flag of [Capability.LocalFiles, Capability.MultiStatements, Capability.SessionTrack])
      assert.ok(hasCapability(straight.handshake.capabilities, flag), "MariaDB offers it");
    const { client, handshake } = await greeting(readOnlyPort);
    for (const flag of [Capability.LocalFiles, Capability.SessionTrack, Capability.Compress])
      assert.ok(!hasCapability(handshake.capabilities, flag), `the export does not offer 0x${flag.toString(16)}`);
    const capabilities =
      (Capability.Protocol41 | Capability.SecureConnection | Capability.PluginAuth | Capability.ConnectWithDb | Capability.Transactions) >>> 0;
    client.send(nativePasswordLogin(handshake, capabilities, reader));
    assert.equal((await client.read())[0], 0x00, "logged in");
    for (const command of [
      Command.BinlogDump,
      Command.BinlogDumpGtid,
      Command.RegisterSlave,
      Command.ProcessInfo,
      Command.FieldList,
      Command.SetOption,
      Command.Shutdown,
    ]) {
      client.command(Buffer.from([command, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]));
      const answer = await client.read();
      assert.ok(isErrPacket(answer), `command 0x${command.toString(16)} is refused`);
      assert.equal(decodeErrPacket(answer).code, 1047);
    }
    client.close();
  });

  // Last: once this view exists, the unqualified `users.*` mapping names two relations and maps neither (for connections opened after).
  test("a view or a table named like a mapped table in another database does not take the mapping", async () => {
    const admin = await mysql.createConnection({ ...db.connectionOptions, multipleStatements: true });
    // And a table of the same name holding a copy made elsewhere, the dropped user's email under the allowed user's id.
    await admin.query(
      `CREATE DATABASE other2; CREATE TABLE other2.users AS SELECT '${ALLOWED}' AS id, email FROM app.users WHERE id = '${DROPPED}'; GRANT SELECT ON other2.* TO '${reader.user}'@'127.0.0.1'`,
    );
    await admin.query(
      `CREATE DATABASE other; CREATE VIEW other.users AS SELECT a.id AS id, b.email AS email FROM app.users a JOIN app.users b ON a.id = '${ALLOWED}' AND b.id = '${DROPPED}'; GRANT SELECT ON other.* TO '${reader.user}'@'127.0.0.1'`,
    );
    await admin.end();
    const fresh = await open(readOnlyPort);
    const straight = await open(db.port);
    try {
      const exported = await assertBlocked("SELECT id, email FROM other.users", "a look-alike view", { via: () => fresh });
      assert.deepEqual(exported.rows, []);
      const copy = await assertBlocked("SELECT id, email FROM other2.users", "a base table named like the mapped one in another database", {
        via: () => fresh,
      });
      assert.deepEqual(copy.rows, [], "users.* names two base tables now: it maps neither");
      // Unqualified, from the view's database: MariaDB reports the view's columns with its base table's database (app).
      await straight.query("USE other");
      await fresh.query("USE other");
      const leaked = await attempt(straight, "SELECT id, email FROM users");
      assert.ok(leaksIn(leaked.text).includes(droppedEmail), `straight from MariaDB the view shows the value: ${leaked.text}`);
      const shown = await attempt(fresh, "SELECT id, email FROM users");
      assert.deepEqual(leaksIn(shown.text), []);
      assert.deepEqual(shown.rows, []);
    } finally {
      await fresh.end();
      await straight.end();
    }
  });

  test("a carriage return ends a comment for the parser and not for MariaDB: refused, so drivers' SET cannot set sql_mode nor a SHOW read users", async () => {
    // To the parser, two settings of autocommit (drivers' session set-up, which runs as written);
    // to MariaDB, `SET autocommit = 1, sql_mode = "NO_BACKSLASH_ESCAPES"`.
    const set = `SET autocommit = 1 #\r, autocommit = '\n, sql_mode = "NO_BACKSLASH_ESCAPES" #'`;
    // Then the parser reads a string and a schema read (rows pass whole); MariaDB reads '\' and users.
    const select = "SELECT '\\', email, secret, id FROM app.users #' AS x FROM information_schema.SCHEMATA";
    const printed = "SELECT '\\', email, secret, id FROM app.users #' AS `x` FROM `information_schema`.`SCHEMATA`";
    const straight = await open(db.port);
    try {
      await straight.query(set);
      const read = await attempt(straight, printed);
      assert.ok(leaksIn(read.text).includes(droppedEmail), `directly, the SET turned NO_BACKSLASH_ESCAPES on: ${read.text}`);
    } finally {
      await straight.end();
    }
    const session = await waitOpen(readOnlyPort);
    try {
      const refused = await attempt(session, set);
      assert.deepEqual(leaksIn((await attempt(session, select)).text), []);
      assert.equal(refused.error?.errno, 1064, refused.text);
      assert.match(refused.error!.message, /carriage return not followed by a line feed/);
      // A SHOW runs as written too: to MariaDB `SHOW DATABASES WHERE <a subquery on users>`, an oracle on a dropped user's e-mail.
      const show = (prefix: string) =>
        `SHOW DATABASES #\r LIKE 'a\n WHERE (SELECT COUNT(*) FROM app.users WHERE id = "${DROPPED}" AND email LIKE "${prefix}%") > 0 #'`;
      assert.notDeepEqual((await attempt(direct, show("n"))).rows, [], "directly, a dropped user's e-mail starts with n");
      assert.deepEqual((await attempt(direct, show("z"))).rows, [], "and not with z");
      for (const prefix of ["n", "z"]) assert.equal((await attempt(session, show(prefix))).error?.errno, 1064);
      // CR LF ends a comment at the same place for both.
      assert.deepEqual((await attempt(session, `SELECT item\r\nFROM orders # a comment\r\nWHERE user_id = '${ALLOWED}'`)).rows, [[`item-${ALLOWED}`]]);
    } finally {
      await session.end();
    }
  });
});
