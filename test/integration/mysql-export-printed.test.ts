// Adversarial review of the MySQL export (node-sql-parser's MariaDB grammar against MariaDB 10.11):
// literals the parser reads as column names (`_utf8mb4'x'`, `0b0110…`) or a column name it reads as
// a literal (`0x`), through derived tables and CTEs whose columns only the parse traces; a strict
// export's predicate on a derived table's column renamed to a resource-context name; and the
// database part of "Table '<db>.<t>' doesn't exist". Each attack runs straight against MariaDB,
// where it shows a forbidden value (or answers an oracle), and through the export, where it must
// not (text and prepared statements). The world is mysql-export-soundness.test.ts's.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import mysql from "mysql2/promise";
import type { NatsServerProcess } from "../../service/nats-server";
import { call as request } from "../../testkit/http";
import { startNats } from "../../testkit/nats";
import { NodeProcess } from "../../testkit/node-process";
import { freePort } from "../../testkit/ports";
import { firstSuccess } from "../../testkit/wait";
import { MariaDbServer } from "../../testkit/mariadb";
import { createMysqlPopulation, reader } from "../fixtures/mysql-population";
import { forbiddenWithOrders, configureOrdersWorld } from "../fixtures/orders-policy";
import { attempt, type Outcome } from "../helpers/mysql-attempt";

const ALLOWED = "accepted";
const DROPPED = "not-accepted";
const allowedEmail = `${ALLOWED}@example.com`;
const droppedEmail = `${DROPPED}@example.com`;
/** "accepted" as MariaDB's bit literal (the parser reads it as a column name). */
const acceptedBits = `0b${[...Buffer.from(ALLOWED)].map((b) => b.toString(2).padStart(8, "0")).join("")}`;

describe("MySQL export: what runs is what the parser read (literals it misreads), strict predicates through derived tables, error texts", () => {
  let db: MariaDbServer;
  let nats: NatsServerProcess;
  let node: NodeProcess;
  let forbidden: string[];
  let direct: mysql.Connection;
  let through: mysql.Connection;
  let strict: mysql.Connection;
  let strictWritable: mysql.Connection;
  const call = (method: string, path: string, body?: unknown) => request(node, method, path, body);
  const open = (p: number) => mysql.createConnection({ host: "127.0.0.1", port: p, user: reader.user, password: reader.password, database: "app" });
  const leaksIn = (text: string) => forbidden.filter((v) => text.toLowerCase().includes(v.toLowerCase()));

  /** Straight from MariaDB the statement shows a forbidden value; through the export (text and prepared) none, and the outcome is returned. */
  const assertNoLeak = async (sql: string, what: string, connection = through): Promise<Outcome[]> => {
    const straight = await attempt(direct, sql);
    assert.ok(leaksIn(straight.text).length > 0, `${what}: straight from MariaDB it shows a forbidden value: ${straight.text}`);
    const outcomes: Outcome[] = [];
    for (const prepared of [false, true]) {
      const exported = await attempt(connection, sql, prepared);
      assert.deepEqual(leaksIn(exported.text), [], `${what}${prepared ? " (prepared)" : ""}: forbidden values reached the client: ${exported.text}`);
      outcomes.push(exported);
    }
    return outcomes;
  };

  before(async () => {
    db = await MariaDbServer.start();
    await createMysqlPopulation(db);
    nats = await startNats();
    node = await NodeProcess.start({ nodeId: "mysql-printed-1", natsUrl: nats.url });
    const allowed = await configureOrdersWorld(call, node.url);
    assert.ok(allowed.get(ALLOWED)?.has("contact") && allowed.get(DROPPED) === undefined);
    forbidden = forbiddenWithOrders(allowed);
    assert.ok(forbidden.includes(droppedEmail));
    const base = { type: "mysql", endpoint: `127.0.0.1:${db.port}`, resolverGroup: "users-table", metadata: { type: "platformUse", purposeId: "service" } };
    const port = await freePort();
    const strictPort = await freePort();
    const strictWritablePort = await freePort();
    assert.equal((await call("PUT", "/export", { ...base, port })).status, 200);
    assert.equal((await call("PUT", "/export", { ...base, port: strictPort, strict: true })).status, 200);
    assert.equal((await call("PUT", "/export", { ...base, port: strictWritablePort, strict: true, allowWrites: true })).status, 200);
    direct = await open(db.port);
    through = await firstSuccess(() => open(port), 15_000);
    strict = await firstSuccess(() => open(strictPort), 15_000);
    strictWritable = await firstSuccess(() => open(strictWritablePort), 15_000);
  });

  after(async () => {
    await direct?.end().catch(() => undefined);
    await through?.end().catch(() => undefined);
    await strict?.end().catch(() => undefined);
    await strictWritable?.end().catch(() => undefined);
    await node?.stop();
    await nats?.stop();
    await db?.stop();
  });

  test("a character set introducer the parser reads as a column (`_utf8mb4'accepted'`) cannot make every row the allowed user's", async () => {
    const inner = "(SELECT id AS `_utf8mb4`, email, login, name, clicks FROM users) x";
    for (const [sql, what] of [
      [`SELECT y.accepted, y.email, y.login, y.name FROM (SELECT _utf8mb4'accepted', email, login, name FROM ${inner}) y`, "introducer"],
      [`SELECT y.accepted, y.email, y.login FROM (SELECT _utf8mb4 'accepted', email, login FROM ${inner}) y`, "introducer, space before the string"],
      [
        "WITH x AS (SELECT id AS `_utf8mb4`, email FROM users) SELECT y.accepted, y.email FROM (SELECT _UTF8MB4'accepted', email FROM x) y",
        "introducer over a CTE",
      ],
      [
        "SELECT y.accepted, y.item FROM (SELECT _latin1'accepted', item FROM (SELECT user_id AS `_latin1`, item FROM orders) x) y",
        "_latin1 before a string, over orders",
      ],
    ] as const) {
      const [text, prepared] = await assertNoLeak(sql, what);
      for (const outcome of [text!, prepared!]) {
        assert.equal(outcome.error?.errno, 1064, `${what}: refused with a parse error: ${outcome.text}`);
        assert.match(outcome.error!.message, /character set introducer _(utf8mb4|latin1) is refused by the export/i);
      }
    }
  });

  test("what the guard does not see runs as the parser printed it: each row under its own user", async () => {
    // A comment between introducer and string (the guard looks for a string right after), and a bit literal spelling "accepted" (the parser reads a column `0b0110…`).
    for (const [sql, what] of [
      [
        "SELECT y.accepted, y.email FROM (SELECT _utf8mb4/**/'accepted', email FROM (SELECT id AS `_utf8mb4`, email FROM users) x) y ORDER BY 2",
        "introducer, comment before the string",
      ],
      [
        `SELECT y.uid, y.email FROM (SELECT ${acceptedBits} AS uid, email FROM (SELECT id AS \`${acceptedBits}\`, email FROM users) x) y ORDER BY 2`,
        "bit literal",
      ],
    ] as const) {
      const straight = await attempt(direct, sql);
      assert.ok(
        straight.rows.every((row) => row[0] === ALLOWED || Buffer.from(row[0] as Buffer).toString() === ALLOWED),
        `${what}: straight from MariaDB the first column is the literal: ${straight.text}`,
      );
      for (const outcome of await assertNoLeak(sql, what)) {
        assert.equal(outcome.error, undefined, `${what}: answered: ${outcome.text}`);
        assert.ok(
          outcome.rows.some((row) => row[1] === allowedEmail),
          `${what}: the allowed user's row is still there, decided by its own user: ${outcome.text}`,
        );
      }
    }
  });

  test("a column MariaDB reads where the parser reads an empty hex literal (`0x`) is refused: no strict oracle on it", async () => {
    const oracle = (prefix: string) => `SELECT d.user_id FROM (SELECT id AS user_id, secret AS \`0x\` FROM users) d WHERE 0x LIKE '${prefix}%'`;
    assert.deepEqual((await attempt(direct, oracle(`secret-${ALLOWED.slice(0, 3)}`))).rows, [[ALLOWED]], "straight from MariaDB 0x is the secret");
    assert.deepEqual((await attempt(direct, oracle("secret-z"))).rows, []);
    for (const prepared of [false, true])
      for (const prefix of [`secret-${ALLOWED.slice(0, 3)}`, "secret-z"]) {
        const outcome = await attempt(strict, oracle(prefix), prepared);
        assert.equal(outcome.error?.errno, 1064, `refused: ${outcome.text}`);
        assert.match(outcome.error!.message, /0x with no hexadecimal digit/);
      }
    const selected = await attempt(through, "SELECT y.g, y.email FROM (SELECT 0xg, email FROM (SELECT id AS `0xg`, email FROM users) x) y");
    assert.equal(selected.error?.errno, 1064, selected.text);
    // A strict export with writes runs an UPDATE as written: its affected rows would answer the same oracle.
    const update = (prefix: string) =>
      `UPDATE users u JOIN (SELECT id AS user_id, secret AS \`0x\` FROM users) d ON d.user_id = u.id SET u.clicks = u.clicks + 1 WHERE 0x LIKE '${prefix}%'`;
    const [changed] = await direct.query(update(`secret-${ALLOWED.slice(0, 3)}`));
    assert.equal((changed as { affectedRows: number }).affectedRows, 1, "straight from MariaDB the affected rows answer the oracle");
    for (const prepared of [false, true]) {
      const outcome = await attempt(strictWritable, update(`secret-${ALLOWED.slice(0, 3)}`), prepared);
      assert.equal(outcome.error?.errno, 1064, `refused: ${outcome.text}`);
    }
  });
  test("strict: a derived table's or CTE's column is checked as the base column it comes from, not by its name", async () => {
    // `secret` renamed `id` (a resource-context name): which rows come back tells the secret apart.
    const renamed = (prefix: string) => `SELECT d.user_id FROM (SELECT id AS user_id, secret AS id FROM users) d WHERE d.id LIKE '${prefix}%'`;
    assert.deepEqual((await attempt(direct, renamed(`secret-${ALLOWED.slice(0, 3)}`))).rows, [[ALLOWED]], "straight from MariaDB: an oracle on the secret");
    assert.deepEqual((await attempt(direct, renamed("secret-z"))).rows, []);
    // A dropped user's email read prefix by prefix through a UNION (which the walk does not trace) renamed `id`.
    const union = (prefix: string) =>
      `SELECT u.id, u.name FROM users u, (SELECT id AS user_id, email AS id FROM users UNION ALL SELECT NULL, NULL) d WHERE u.id = '${ALLOWED}' AND d.user_id = '${DROPPED}' AND d.id LIKE '${prefix}%'`;
    assert.equal((await attempt(direct, union(DROPPED.slice(0, 5)))).rows.length, 1, "straight from MariaDB: an oracle on the dropped user's email");
    assert.equal((await attempt(direct, union("z"))).rows.length, 0);
    for (const sql of [
      renamed(`secret-${ALLOWED.slice(0, 3)}`),
      renamed("secret-z"),
      union(DROPPED.slice(0, 5)),
      union("z"),
      `WITH c AS (SELECT id AS user_id, secret AS id FROM users) SELECT user_id FROM c WHERE id LIKE 'secret-a%'`,
      `SELECT u.id FROM users u WHERE EXISTS (SELECT 1 FROM (SELECT id AS user_id, secret AS id FROM users) d WHERE d.user_id = u.id AND id LIKE 'secret-a%')`,
      `SELECT x.id FROM (SELECT id AS user_id, LEFT(secret, 8) AS id FROM users) x WHERE x.id = 'secret-a'`,
    ])
      for (const prepared of [false, true]) {
        const outcome = await attempt(strict, sql, prepared);
        assert.equal(outcome.error?.errno, 1227, `${sql}: ${outcome.text}`);
        assert.match(outcome.error!.message, /this export is strict: .* not .*a derived table's or CTE's column/);
      }
    // A resource-context column renamed, or passed through a `*`, still passes.
    assert.deepEqual((await attempt(strict, `SELECT d.uid, d.email FROM (SELECT id AS uid, email FROM users) d WHERE d.uid = '${ALLOWED}'`, true)).rows, [
      [null, allowedEmail],
    ]);
    assert.deepEqual((await attempt(strict, `SELECT x.email FROM (SELECT * FROM users) x WHERE x.id = '${ALLOWED}'`)).rows, [[allowedEmail]]);
  });

  test("shapes a second review found read otherwise by MariaDB are refused: user variables, a WITH inside a derived table, leading-space aliases, parenthesised FROM", async () => {
    // A user variable carries a dropped user's secret from a statement whose rows are dropped to a later one.
    const assign = `SELECT @v := secret FROM users WHERE id = '${DROPPED}'`;
    await attempt(direct, assign);
    assert.ok(leaksIn((await attempt(direct, "SELECT @v")).text).length > 0, "straight from MariaDB: the variable holds the secret");
    // MariaDB's CTE bodies inside a derived table's WITH read the base table, not the statement's CTE of that name: the
    // parser traced x.secret to users.email.
    const nestedWith = `WITH users AS (SELECT id, secret AS email, email AS secret FROM app.users) SELECT x.id, x.secret FROM (WITH a AS (SELECT id, secret FROM users) SELECT * FROM a) x`;
    await assertNoLeak(nestedWith, "a WITH inside a derived table");
    for (const sql of [assign, "SELECT @v", `SELECT id FROM users WHERE LEFT(@v, 3) = 'sec'`, nestedWith])
      for (const connection of [through, strict])
        for (const prepared of [false, true]) {
          const outcome = await attempt(connection, sql, prepared);
          assert.equal(outcome.error?.errno, 1235, `${sql}: ${outcome.text}`);
        }
    // MariaDB drops an alias's leading spaces: ` id` is id, a strict oracle on a dropped user's secret.
    const spaced = (prefix: string) =>
      `SELECT u.id, d.* FROM users u, (SELECT secret AS \` id\` FROM users WHERE id = '${DROPPED}') d WHERE u.id = '${ALLOWED}' AND d.id LIKE '${prefix}%'`;
    assert.equal((await attempt(direct, spaced("secret-n"))).rows.length, 1, "straight from MariaDB: an oracle");
    assert.equal((await attempt(direct, spaced("secret-x"))).rows.length, 0);
    for (const sql of [spaced("secret-n"), "SELECT * FROM (users u, orders o)"]) {
      const outcome = await attempt(strict, sql);
      assert.equal(outcome.error?.errno, 1235, `${sql}: ${outcome.text}`);
    }
    // The connection is still there: a parenthesised FROM used to end it (2013).
    assert.deepEqual((await attempt(strict, `SELECT email FROM users WHERE id = '${ALLOWED}'`)).rows, [[allowedEmail]]);
  });

  test("an unknown table's message is kept only when its database is the statement's or the session's", async () => {
    // A function (the operator's, run with its definer's rights) reading a table of another database, named like a forbidden value.
    const admin = await mysql.createConnection({ ...db.connectionOptions, host: "127.0.0.1" });
    try {
      await admin.query("CREATE DATABASE IF NOT EXISTS `login-not-accepted`");
      await admin.query("CREATE OR REPLACE FUNCTION app.missing() RETURNS INT READS SQL DATA RETURN (SELECT COUNT(*) FROM `login-not-accepted`.nope)");
      await admin.query(`GRANT EXECUTE ON FUNCTION app.missing TO '${reader.user}'@'127.0.0.1'`);
    } finally {
      await admin.end();
    }
    const sql = "SELECT missing() AS nope FROM users";
    const straight = await attempt(direct, sql);
    assert.equal(straight.error?.errno, 1146);
    assert.ok(leaksIn(straight.text).includes(`login-${DROPPED}`), `straight from MariaDB the message names the other database: ${straight.text}`);
    for (const outcome of await assertNoLeak(sql, "another database in an unknown table's message")) assert.equal(outcome.error?.errno, 1146, outcome.text);
    const own = await attempt(through, "SELECT * FROM nope");
    assert.equal(own.error?.message, "Table 'app.nope' doesn't exist", "the session's database and the statement's table: kept");
  });
});
