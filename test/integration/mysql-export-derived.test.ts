// Issue 21: a MySQL export attributes values through derived tables and CTEs that pass base-table
// columns through, each under the user of the base row it comes from (its user column carried up
// as a hidden column when the statement does not return it), and keeps failing closed where that
// is not exact (UNION, recursion, grouping, views, a CTE read twice). Each attack runs straight
// against MariaDB, where it must show a forbidden value, and through the export, where it must
// not; honest queries through derived tables and CTEs show each allowed value (mysql2 text and
// prepared statements, and the `mariadb` client). The world is mysql-export-soundness.test.ts's.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import mysql from "mysql2/promise";
import type { NatsServerProcess } from "../../service/nats-server";
import { call as request } from "../../testkit/http";
import { startNats } from "../../testkit/nats";
import { NodeProcess } from "../../testkit/node-process";
import { freePort } from "../../testkit/ports";
import { firstSuccess } from "../../testkit/wait";
import { MariaDbServer } from "../../testkit/mariadb";
import { createMysqlPopulation, reader } from "../fixtures/mysql-population";
import { forbiddenWithOrders, ordersRows, configureOrdersWorld } from "../fixtures/orders-policy";

const ALLOWED = "accepted";
const DROPPED = "not-accepted";
const allowedEmail = `${ALLOWED}@example.com`;
const droppedEmail = `${DROPPED}@example.com`;

interface Outcome {
  rows: unknown[][];
  text: string;
}

async function attempt(connection: mysql.Connection, sql: string, prepared = false, values: unknown[] = []): Promise<Outcome> {
  try {
    const [rows] = prepared ? await connection.execute({ sql, values, rowsAsArray: true }) : await connection.query({ sql, values, rowsAsArray: true });
    return { rows: Array.isArray(rows) ? (rows as unknown[][]) : [], text: JSON.stringify(rows) };
  } catch (error) {
    const e = error as { errno: number; sqlState: string; message: string };
    return { rows: [], text: `error ${e.errno} ${e.sqlState} ${e.message}` };
  }
}

describe("MySQL export attribution through derived tables, CTEs, views and subqueries (issue 21)", () => {
  let db: MariaDbServer;
  let nats: NatsServerProcess;
  let node: NodeProcess;
  let port: number;
  let forbidden: string[];
  /** A user other than ALLOWED who may be used and has an order. */
  let otherAllowed: string;
  let direct: mysql.Connection;
  let through: mysql.Connection;
  const call = (method: string, path: string, body?: unknown) => request(node, method, path, body);
  const open = (p: number) => mysql.createConnection({ host: "127.0.0.1", port: p, user: reader.user, password: reader.password, database: "app" });
  const leaksIn = (text: string) => forbidden.filter((v) => text.toLowerCase().includes(v.toLowerCase()));

  /** Straight from MariaDB the statement shows a forbidden value (the attack is real); through the export, with text and prepared statements, none. */
  const assertBlocked = async (sql: string, what: string): Promise<Outcome> => {
    const straight = await attempt(direct, sql);
    assert.ok(leaksIn(straight.text).length > 0, `${what}: straight from MariaDB it shows a forbidden value: ${straight.text}`);
    const exported = await attempt(through, sql);
    assert.deepEqual(leaksIn(exported.text), [], `${what}: forbidden values reached the client through the export: ${exported.text}`);
    assert.ok(!exported.text.startsWith("error"), `${what}: answered, not refused: ${exported.text}`);
    const prepared = await attempt(through, sql, true);
    assert.deepEqual(leaksIn(prepared.text), [], `${what} (prepared): forbidden values reached the client through the export: ${prepared.text}`);
    assert.deepEqual(prepared.rows, exported.rows, `${what}: prepared as text`);
    return exported;
  };

  /** What the export answers, with text and prepared statements alike. */
  const shown = async (sql: string, values: unknown[] = []): Promise<unknown[][]> => {
    const text = await attempt(through, sql, false, values);
    const prepared = await attempt(through, sql, true, values);
    assert.deepEqual(prepared.rows, text.rows, `${sql}: prepared as text (${prepared.text} / ${text.text})`);
    return text.rows;
  };

  before(async () => {
    db = await MariaDbServer.start();
    await createMysqlPopulation(db);
    nats = await startNats();
    node = await NodeProcess.start({ nodeId: "mysql-derived-1", natsUrl: nats.url });
    const allowed = await configureOrdersWorld(call, node.url);
    assert.ok(allowed.get(ALLOWED)?.has("contact") && allowed.get(DROPPED) === undefined);
    forbidden = forbiddenWithOrders(allowed);
    assert.ok(forbidden.includes(droppedEmail));
    otherAllowed = ordersRows().find((o) => o.userId !== ALLOWED && allowed.get(o.userId) !== undefined)!.userId;
    assert.ok(otherAllowed);
    port = await freePort();
    const body = {
      type: "mysql",
      endpoint: `127.0.0.1:${db.port}`,
      resolverGroup: "users-table",
      metadata: { type: "platformUse", purposeId: "service" },
      port,
    };
    assert.equal((await call("PUT", "/export", body)).status, 200);
    direct = await open(db.port);
    through = await firstSuccess(() => open(port), 15_000);
  });

  after(async () => {
    await direct?.end().catch(() => undefined);
    await through?.end().catch(() => undefined);
    await node?.stop();
    await nats?.stop();
    await db?.stop();
  });

  test("honest queries through derived tables and CTEs show each allowed value (text and prepared)", async () => {
    const both = `id IN ('${ALLOWED}', '${DROPPED}')`;
    assert.deepEqual((await attempt(direct, `SELECT x.email FROM (SELECT email FROM users WHERE ${both}) x ORDER BY 1`)).rows, [
      [allowedEmail],
      [droppedEmail],
    ]);
    assert.deepEqual(await shown(`SELECT x.email FROM (SELECT email FROM users WHERE ${both}) x`), [[allowedEmail]], "the user column carried up, hidden");
    assert.deepEqual(await shown("SELECT x.email FROM (SELECT email FROM users WHERE id = ?) x", [ALLOWED]), [[allowedEmail]], "with a placeholder");
    assert.deepEqual(await shown(`WITH c AS (SELECT id, email FROM users) SELECT id, email FROM c WHERE ${both}`), [[null, allowedEmail]]);
    assert.deepEqual(
      await shown(`WITH c(who, mail) AS (SELECT id, email FROM users WHERE ${both}) SELECT mail FROM c`),
      [[allowedEmail]],
      "a CTE's column list",
    );
    assert.deepEqual(await shown(`SELECT e FROM (SELECT m AS e FROM (SELECT email AS m FROM users WHERE ${both}) i) o`), [[allowedEmail]], "nested");
    assert.deepEqual(
      await shown(`SELECT * FROM (SELECT u.email, o.item FROM users u JOIN orders o ON o.user_id = u.id WHERE u.${both}) d`),
      [[allowedEmail, `item-${ALLOWED}`]],
      "a lone * carries both instances' user columns; neither is sent",
    );
    assert.deepEqual(
      await shown(`SELECT d.email, u.email FROM (SELECT id, email FROM users) d JOIN users u ON u.id = d.id WHERE d.${both}`),
      [[allowedEmail, allowedEmail]],
      "a derived table joined to its own base table",
    );
    assert.deepEqual(
      await shown(`WITH c AS (SELECT id, email FROM users) SELECT a.id, a.email, b.id, b.email FROM c a JOIN c b ON b.id = a.id WHERE a.${both}`),
      [[null, allowedEmail, null, allowedEmail]],
      "a CTE read twice, each reading with its own user column",
    );
  });

  test("the mariadb command-line client reads through a derived table", () => {
    const sql = `SELECT x.email FROM (SELECT email FROM users WHERE id IN ('${ALLOWED}', '${DROPPED}')) x ORDER BY x.email`;
    const run = (p: number) =>
      spawnSync(
        "mariadb",
        ["--no-defaults", "-h", "127.0.0.1", "-P", String(p), "-u", reader.user, `-p${reader.password}`, "--skip-ssl", "-D", "app", "-N", "-B", "-e", sql],
        { encoding: "utf8" },
      );
    const straight = run(db.port);
    assert.equal(straight.status, 0, straight.stderr);
    assert.equal(straight.stdout, `${allowedEmail}\n${droppedEmail}\n`);
    const exported = run(port);
    assert.equal(exported.status, 0, exported.stderr);
    assert.equal(exported.stdout, `${allowedEmail}\n`);
  });

  test("a self-join through a derived table: each value under its own instance's user", async () => {
    const sql = `SELECT d.id, d.email FROM (SELECT b.id, a.email FROM users a JOIN users b ON b.id = '${ALLOWED}' WHERE a.id = '${DROPPED}') d`;
    assert.deepEqual((await assertBlocked(sql, "self-join through a derived table")).rows, [], "a's user (carried up, hidden) may not be used");
    const star = `SELECT * FROM (SELECT b.id, a.email FROM users a JOIN users b ON b.id = '${ALLOWED}' WHERE a.id = '${DROPPED}') d`;
    assert.deepEqual((await assertBlocked(star, "the same through a lone *")).rows, []);
  });

  test("CTEs that rename columns: the user is read from the column that is the user column", async () => {
    const posing = `WITH c(id, email) AS (SELECT '${ALLOWED}', email FROM users WHERE id = '${DROPPED}') SELECT id, email FROM c`;
    assert.deepEqual((await assertBlocked(posing, "a CTE whose id column is a constant")).rows, []);
    const swapped = `WITH c(id, email) AS (SELECT email, id FROM users WHERE id = '${DROPPED}') SELECT id, email FROM c`;
    assert.deepEqual((await assertBlocked(swapped, "a CTE that swaps id and email")).rows, []);
    const honest = await shown(`WITH c(id, email) AS (SELECT email, id FROM users WHERE id = '${ALLOWED}') SELECT id, email FROM c`);
    assert.deepEqual(honest, [[allowedEmail, null]], "the swapped columns keep their own categories");
    const renamed = `SELECT x.id, x.email FROM (SELECT '${ALLOWED}' AS id, email FROM users WHERE id = '${DROPPED}') x`;
    assert.deepEqual((await assertBlocked(renamed, "a derived table whose id column is a constant")).rows, []);
    const likeTable = `WITH users AS (SELECT '${ALLOWED}' AS id, email FROM app.users WHERE id = '${DROPPED}') SELECT id, email FROM users`;
    assert.deepEqual((await assertBlocked(likeTable, "a CTE named like the table")).rows, []);
  });

  test("a derived table joined to its own base table, and nested subqueries", async () => {
    const joined = `SELECT d.email, u.id, u.email FROM (SELECT email FROM users WHERE id = '${DROPPED}') d JOIN users u ON u.id = '${ALLOWED}'`;
    assert.deepEqual((await assertBlocked(joined, "derived table joined to its own base table")).rows, []);
    const nested = `SELECT e FROM (SELECT m AS e FROM (SELECT email AS m FROM users WHERE id = '${DROPPED}') i) o`;
    assert.deepEqual((await assertBlocked(nested, "nested derived tables")).rows, []);
    const stars = `SELECT * FROM (SELECT * FROM (SELECT email FROM users WHERE id = '${DROPPED}') i) o`;
    assert.deepEqual((await assertBlocked(stars, "nested lone stars")).rows, []);
    const inCte = `WITH c AS (SELECT x.email FROM (SELECT email FROM users WHERE id = '${DROPPED}') x) SELECT email FROM c`;
    assert.deepEqual((await assertBlocked(inCte, "a derived table inside a CTE")).rows, []);
  });

  test("what stays unattributed: UNION, recursion, grouping, views, a * over the derived table, a CTE read twice without its user column", async () => {
    const union = `SELECT x.id, x.email FROM (SELECT id, email FROM users WHERE id = '${ALLOWED}' UNION ALL SELECT a.id, b.email FROM users a, users b WHERE a.id = '${ALLOWED}' AND b.id = '${DROPPED}') x`;
    assert.deepEqual((await assertBlocked(union, "UNION mixing two users' values in a derived table")).rows, []);
    const recursive = `WITH RECURSIVE r(id, email, n) AS (SELECT id, email, 1 FROM users WHERE id = '${DROPPED}' UNION ALL SELECT id, email, n + 1 FROM r WHERE n < 2) SELECT id, email FROM r`;
    assert.deepEqual((await assertBlocked(recursive, "recursive CTE")).rows, []);
    const grouped = `SELECT x.email FROM (SELECT MAX(email) AS email FROM users WHERE id IN ('${ALLOWED}', '${DROPPED}') GROUP BY name) x`;
    assert.deepEqual((await assertBlocked(grouped, "grouped derived table")).rows, []);
    const view = `SELECT x.id, x.email FROM (SELECT id, email FROM users_view WHERE id = '${DROPPED}') x`;
    assert.deepEqual((await assertBlocked(view, "a view inside a derived table")).rows, []);
    const starred = await assertBlocked(`SELECT d.*, 1 FROM (SELECT email FROM users WHERE id IN ('${ALLOWED}', '${DROPPED}')) d`, "d.* beside another column");
    assert.deepEqual(starred.rows, [], "no user column can be added without showing through d.*: nothing decides, no rows");
    const twice = `WITH c AS (SELECT email FROM users) SELECT a.email, b.email FROM c a JOIN c b ON b.email = '${droppedEmail}' WHERE a.email = '${allowedEmail}'`;
    assert.deepEqual((await assertBlocked(twice, "a CTE read twice")).rows, []);
  });

  test("SELECT DISTINCT gets hidden user columns (equal values of two users are two rows); GROUP BY and aggregates are not attributed", async () => {
    const both = `id IN ('${ALLOWED}', '${DROPPED}')`;
    assert.deepEqual(await shown(`SELECT DISTINCT email FROM users WHERE ${both}`), [[allowedEmail]], "DISTINCT");
    assert.deepEqual(await shown(`SELECT DISTINCT x.email FROM (SELECT email FROM users WHERE ${both}) x`), [[allowedEmail]], "DISTINCT over a derived table");
    // Two orders of two allowed users joined to one user's row: one distinct email straight from MariaDB, two rows through the export (each with its own hidden order user).
    const owners = `o.user_id IN ('${ALLOWED}', '${otherAllowed}')`;
    const same = `SELECT DISTINCT u.email FROM users u JOIN orders o ON ${owners} WHERE u.id = '${ALLOWED}'`;
    assert.deepEqual((await attempt(direct, same)).rows, [[allowedEmail]], "straight from MariaDB, one distinct row");
    assert.deepEqual(await shown(same), [[allowedEmail], [allowedEmail]], "through the export the hidden user columns make the rows distinct");
    const distinct = await assertBlocked(`SELECT DISTINCT d.email FROM (SELECT email FROM users WHERE id = '${DROPPED}') d`, "DISTINCT over a derived table");
    assert.deepEqual(distinct.rows, []);
    assert.deepEqual((await assertBlocked(`SELECT email FROM users WHERE ${both} GROUP BY email`, "GROUP BY")).rows, []);
  });
});
