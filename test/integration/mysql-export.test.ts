// Issue 21: MySQL exports. A real MariaDB (the fixture's mariadbd), a real nats-server and node,
// and clients no one here wrote: mysql2 (text protocol and prepared statements) and the `mariadb`
// command-line client. The world is the PostgreSQL tests' (users with one row per user of the
// mixed population, the realistic policy, purpose "service"): rows of users who may not be used
// vanish, values of categories the purpose does not allow are NULL, and users.id (the resource
// context, without a category) is always NULL through the export.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { join } from "node:path";
import mysql from "mysql2/promise";
import { compilePolicy } from "../../decision/compiled-policy";
import type { NatsServerProcess } from "../../service/nats-server";
import { call as request } from "../../testkit/http";
import { startNats } from "../../testkit/nats";
import { NodeProcess } from "../../testkit/node-process";
import { realisticPolicy } from "../../testkit/policy";
import { freePort } from "../../testkit/ports";
import { tempDir } from "../../testkit/temp";
import { firstSuccess } from "../../testkit/wait";
import { MariaDbServer } from "../../testkit/mariadb";
import { createMysqlPopulation, reader } from "../fixtures/mysql-population";
import { createPopulation } from "../fixtures/population";
import { usersRows } from "../fixtures/postgres-population";
import { categoryOf, verdictsOf, type Verdicts } from "../fixtures/postgres-verdicts";

type Cell = string | number | null;

const exportBody = (endpoint: string, extra: Record<string, unknown> = {}) => ({
  type: "mysql",
  endpoint,
  resolverGroup: "users-table",
  metadata: { type: "platformUse", purposeId: "service" },
  ...extra,
});

/** The users rows the purpose may see for these columns (id always NULL: resource context without a category), in id order. */
function expectedUsers(allowed: Verdicts, columns: readonly string[], ids?: readonly string[]): Cell[][] {
  const rows: Cell[][] = [];
  for (const row of usersRows()) {
    if (ids && !ids.includes(row.id ?? "")) continue;
    const categories = row.id === null || row.id === "" ? undefined : allowed.get(row.id);
    if (!categories) continue;
    rows.push(columns.map((c) => (categoryOf[c] && categories.has(categoryOf[c]!) ? ((row as Record<string, unknown>)[c] as Cell) : null)));
  }
  return rows;
}

/** Waits until an export's port takes a mysql2 login. */
async function waitOpen(port: number, user: string = reader.user, password: string = reader.password): Promise<void> {
  const c = await firstSuccess(() => mysql.createConnection({ host: "127.0.0.1", port, user, password, database: "app", connectTimeout: 2000 }), 15_000);
  await c.end();
}

describe("MySQL exports (issue 21): mysql2 and the mariadb client through an export in front of MariaDB", () => {
  let db: MariaDbServer;
  let nats: NatsServerProcess;
  let node: NodeProcess;
  let port: number;
  let exportId: string;
  let allowed: Verdicts;
  const call = (method: string, path: string, body?: unknown) => request(node, method, path, body);
  const connect = (p = port, extra: mysql.ConnectionOptions = {}) =>
    mysql.createConnection({ host: "127.0.0.1", port: p, user: reader.user, password: reader.password, database: "app", ...extra });

  before(async () => {
    db = await MariaDbServer.start();
    await createMysqlPopulation(db);
    nats = await startNats();
    node = await NodeProcess.start({ nodeId: "mysql-export-1", natsUrl: nats.url });
    const policy = realisticPolicy();
    assert.equal((await call("PUT", "/config", policy)).status, 200);
    await createPopulation(call);
    const revision = Number((await fetch(`${node.url}/config`)).headers.get("x-config-revision"));
    allowed = await verdictsOf(call, compilePolicy(policy, revision), "service");
    port = await freePort();
    const created = await call("PUT", "/export", exportBody(`127.0.0.1:${db.port}`, { port }));
    assert.equal(created.status, 200, JSON.stringify(created.body));
    exportId = (created.body as { id: string }).id;
    await waitOpen(port);
  });

  after(async () => {
    await node?.stop();
    await nats?.stop();
    await db?.stop();
  });

  test("PUT /export: a mysql export is created and shown; fields that do not apply are refused with why", async () => {
    const shown = await call("GET", `/export?id=${exportId}`);
    assert.equal(shown.status, 200);
    const view = shown.body as { type: string; endpoint: string; status: string; backendIdentity: string; listen: { port: number } };
    assert.equal(view.type, "mysql");
    assert.equal(view.endpoint, `127.0.0.1:${db.port}`);
    assert.equal(view.status, "active");
    assert.equal(view.backendIdentity, "client");
    assert.equal(view.listen.port, port);
    for (const [what, body, path] of [
      ["no endpoint", { type: "mysql", resolverGroup: "users-table", metadata: { type: "platformUse", purposeId: "service" } }, "endpoint"],
      ["endpoint not host:port", exportBody("nowhere"), "endpoint"],
      ["backendTls prefer", exportBody("127.0.0.1:3306", { backendTls: "prefer" }), "backendTls"],
      ["cloudSigning", exportBody("127.0.0.1:3306", { cloudSigning: { id: "x" } }), "cloudSigning"],
      ["credentials without direct verification", exportBody("127.0.0.1:3306", { credentials: { user: "u", password: "p" } }), "credentials"],
    ] as const) {
      const refused = await call("PUT", "/export", body);
      assert.equal(refused.status, 400, `${what}: ${JSON.stringify(refused.body)}`);
      const error = (refused.body as { error: { code: string; details?: Array<{ path: string }> } }).error;
      assert.equal(error.code, "ERR_EXPORT_INVALID", what);
      assert.equal(error.details?.[0]?.path, path, what);
    }
  });

  test("mysql2 text protocol: rows of users who may not be used vanish, disallowed values are NULL", async () => {
    const direct = await connect(db.port);
    const [all] = await direct.query({ sql: "SELECT id, email, login, name, clicks FROM users ORDER BY id", rowsAsArray: true });
    assert.ok(
      (all as Cell[][]).some((r) => r[0] === "not-accepted"),
      "directly, every row is there",
    );
    await direct.end();
    const c = await connect();
    const [rows] = await c.query({ sql: "SELECT id, email, login, name, clicks FROM users ORDER BY id", rowsAsArray: true });
    const expected = expectedUsers(allowed, ["id", "email", "login", "name", "clicks"]);
    assert.equal((rows as Cell[][]).length, expected.length);
    assert.deepEqual(new Set((rows as Cell[][]).map((r) => JSON.stringify(r))), new Set(expected.map((r) => JSON.stringify(r))));
    assert.ok(
      expected.some((r) => r[1] === "accepted@example.com"),
      "the allowed user's email crosses (the check is not vacuous)",
    );
    const [star] = await c.query({ sql: "SELECT * FROM users WHERE id IN ('accepted', 'not-accepted')", rowsAsArray: true });
    assert.deepEqual(
      star,
      [[null, "accepted@example.com", "login-accepted", "Name accepted", 0.25, null]],
      "SELECT *: secret is not mapped (NULL), the dropped user's row is gone",
    );
    const [onlyEmail, onlyEmailFields] = await c.query({ sql: "SELECT email FROM users", rowsAsArray: true });
    assert.deepEqual(
      new Set((onlyEmail as Cell[][]).map((r) => JSON.stringify(r))),
      new Set(expectedUsers(allowed, ["email"]).map((r) => JSON.stringify(r))),
      "the user column the statement does not select is added as a hidden column: allowed users' rows come, the others' do not",
    );
    assert.deepEqual(
      onlyEmailFields.map((f) => f.name),
      ["email"],
      "the hidden column never reaches the client",
    );
    await c.end();
    // An account that sees every database (performance_schema has a `users` table too): the unqualified mapping still names app.users.
    const admin = await mysql.createConnection({ ...db.connectionOptions, port });
    const [asAdmin] = await admin.query({ sql: "SELECT id, email FROM users WHERE id IN ('accepted', 'not-accepted')", rowsAsArray: true });
    assert.deepEqual(asAdmin, [[null, "accepted@example.com"]]);
    await admin.end();
  });

  test("mysql2 prepared statements (binary protocol): the same decisions", async () => {
    const c = await connect();
    const [rows] = await c.execute({ sql: "SELECT id, email, name, clicks FROM users WHERE id = ? OR id = ?", rowsAsArray: true }, [
      "accepted",
      "not-accepted",
    ]);
    assert.deepEqual(rows, [[null, "accepted@example.com", "Name accepted", 0.25]]);
    const [again] = await c.execute({ sql: "SELECT id, email, name, clicks FROM users WHERE id = ? OR id = ?", rowsAsArray: true }, [
      "third-party",
      "not-accepted",
    ]);
    assert.deepEqual(
      again,
      expectedUsers(allowed, ["id", "email", "name", "clicks"], ["third-party"]),
      "a prepared statement run again is decided for its new rows",
    );
    assert.equal((again as Cell[][]).length, allowed.get("third-party") ? 1 : 0);
    const [hidden, hiddenFields] = await c.execute({ sql: "SELECT email, name FROM users WHERE id = ? OR id = ?", rowsAsArray: true }, [
      "accepted",
      "not-accepted",
    ]);
    assert.deepEqual(hidden, [["accepted@example.com", "Name accepted"]], "a hidden user column in a binary result: decided on, left out of the row");
    assert.deepEqual(
      hiddenFields.map((f) => f.name),
      ["email", "name"],
    );
    await c.end();
  });

  test("pass-through authentication: a wrong password gets the backend's own error", async () => {
    await assert.rejects(connect(port, { password: "wrong" }), (error: { errno?: number; sqlState?: string; message?: string }) => {
      assert.equal(error.errno, 1045);
      assert.equal(error.sqlState, "28000");
      assert.match(String(error.message), /Access denied for user 'reader'/);
      return true;
    });
  });

  test("a character set whose characters can end in a quote byte (gbk) is refused at login", async () => {
    const direct = await connect(db.port, { charset: "GBK_CHINESE_CI" });
    await direct.end();
    await assert.rejects(connect(port, { charset: "GBK_CHINESE_CI" }), (error: { errno?: number }) => {
      assert.equal(error.errno, 1115);
      return true;
    });
  });

  test("the mariadb command-line client reads through the export", () => {
    const run = (sql: string, p = port) =>
      spawnSync(
        "mariadb",
        ["--no-defaults", "-h", "127.0.0.1", "-P", String(p), "-u", reader.user, `-p${reader.password}`, "--skip-ssl", "-D", "app", "-N", "-B", "-e", sql],
        { encoding: "utf8" },
      );
    const direct = run("SELECT id, email FROM users WHERE id IN ('accepted', 'not-accepted') ORDER BY id", db.port);
    assert.equal(direct.status, 0, direct.stderr);
    assert.equal(direct.stdout, "accepted\taccepted@example.com\nnot-accepted\tnot-accepted@example.com\n");
    const through = run("SELECT id, email FROM users WHERE id IN ('accepted', 'not-accepted') ORDER BY id");
    assert.equal(through.status, 0, through.stderr);
    assert.equal(through.stdout, "NULL\taccepted@example.com\n");
    const refused = run("DELETE FROM users");
    assert.notEqual(refused.status, 0);
    assert.match(refused.stderr, /ERROR 1792 \(25006\).*read-only/);
  });

  test("schema browsing: SHOW TABLES, DESCRIBE, SHOW COLUMNS, SHOW INDEX, SHOW CREATE TABLE, SHOW DATABASES answer as directly, text and prepared; other SHOWs keep no rows", async () => {
    const direct = await connect(db.port);
    const through = await connect();
    try {
      for (const sql of [
        "SHOW TABLES",
        "SHOW DATABASES",
        "DESCRIBE users",
        "SHOW COLUMNS FROM users",
        "SHOW COLUMNS FROM app.users",
        "SHOW INDEX FROM orders",
        "SHOW CREATE TABLE users",
        "SHOW COLLATION LIKE 'utf8mb4_bin'",
        "SHOW CHARACTER SET LIKE 'utf8mb4'",
      ]) {
        const [expected] = await direct.query({ sql, rowsAsArray: true });
        assert.ok((expected as unknown[]).length > 0, `${sql}: the server answers rows`);
        assert.deepEqual((await through.query({ sql, rowsAsArray: true }))[0], expected, `${sql} (text)`);
        assert.deepEqual((await through.execute({ sql, rowsAsArray: true }))[0], expected, `${sql} (prepared)`);
      }
      // SHOW PROCESSLIST shows other sessions' statements, values and all: directly, a query naming a dropped user's e-mail.
      const other = await connect(db.port);
      const running = other.query("SELECT SLEEP(3), 'not-accepted@example.com' AS looked_up").catch(() => undefined);
      await new Promise((resolve) => setTimeout(resolve, 500));
      const [listed] = await direct.query({ sql: "SHOW FULL PROCESSLIST", rowsAsArray: true });
      assert.match(JSON.stringify(listed), /not-accepted@example\.com/, "directly: another session's statement, with its value");
      // SHOW DATABASES LIKE: the parser prints it without its filter, so it cannot run as the parser read it.
      for (const sql of ["SHOW PROCESSLIST", "SHOW STATUS", "SHOW TRIGGERS", "SHOW DATABASES WHERE `Database` = (SELECT 'app')", "SHOW DATABASES LIKE 'ap%'"]) {
        const [rows] = await through.query({ sql, rowsAsArray: true });
        assert.deepEqual(rows, [], `${sql}: no rows through the export`);
      }
      await running;
      await other.end();
    } finally {
      await direct.end();
      await through.end();
    }
    const cli = spawnSync(
      "mariadb",
      [
        "--no-defaults",
        "-h",
        "127.0.0.1",
        "-P",
        String(port),
        "-u",
        reader.user,
        `-p${reader.password}`,
        "--skip-ssl",
        "-D",
        "app",
        "-N",
        "-B",
        "-e",
        "SHOW TABLES",
      ],
      { encoding: "utf8" },
    );
    assert.equal(cli.status, 0, cli.stderr);
    assert.match(cli.stdout, /^users$/m, "the mariadb client lists the tables");
  });

  test("schema browsing through information_schema: the tables and columns a driver lists answer as directly; statement texts, LAST_INSERT_ID and FOUND_ROWS do not pass", async () => {
    const direct = await connect(db.port);
    const through = await connect();
    try {
      for (const sql of [
        "SELECT DATABASE(), VERSION()",
        "SELECT @@version_comment LIMIT 1",
        "SELECT SCHEMA_NAME FROM information_schema.SCHEMATA ORDER BY 1",
        // MariaDB Connector/J's getTables, and a getColumns of the same shape.
        "SELECT TABLE_SCHEMA TABLE_CAT, NULL TABLE_SCHEM, TABLE_NAME, IF(TABLE_TYPE='BASE TABLE' or TABLE_TYPE='SYSTEM VERSIONED', 'TABLE', IF(TABLE_TYPE='TEMPORARY', 'LOCAL TEMPORARY', TABLE_TYPE)) as TABLE_TYPE, TABLE_COMMENT REMARKS FROM INFORMATION_SCHEMA.TABLES WHERE TABLE_SCHEMA = 'app' AND TABLE_NAME LIKE '%' ORDER BY TABLE_TYPE, TABLE_SCHEMA, TABLE_NAME",
        "SELECT c.TABLE_NAME, c.COLUMN_NAME, UCASE(IF(COLUMN_TYPE LIKE '%(%)%', CONCAT(SUBSTRING(COLUMN_TYPE, 1, LOCATE('(', COLUMN_TYPE) - 1)), COLUMN_TYPE)) TYPE_NAME, CAST(c.ORDINAL_POSITION AS SIGNED) pos FROM information_schema.COLUMNS c JOIN information_schema.TABLES t ON t.TABLE_NAME = c.TABLE_NAME AND t.TABLE_SCHEMA = c.TABLE_SCHEMA WHERE c.TABLE_SCHEMA = DATABASE() ORDER BY c.TABLE_NAME, pos",
        "SELECT TABLE_NAME, CONSTRAINT_NAME FROM information_schema.KEY_COLUMN_USAGE WHERE TABLE_SCHEMA = 'app' ORDER BY 1, 2",
      ]) {
        const [expected] = await direct.query({ sql, rowsAsArray: true });
        assert.ok((expected as unknown[]).length > 0, `${sql}: the server answers rows`);
        assert.deepEqual((await through.query({ sql, rowsAsArray: true }))[0], expected, `${sql} (text)`);
        assert.deepEqual((await through.execute({ sql, rowsAsArray: true }))[0], expected, `${sql} (prepared)`);
      }
      // Values a statement leaves in the session, shown straight from MariaDB, and kept back by the export.
      const secretQuery = "SELECT SQL_CALC_FOUND_ROWS LAST_INSERT_ID(LENGTH(email)), id FROM users WHERE id = 'not-accepted'";
      await direct.query(secretQuery);
      const [[leaked]] = (await direct.query({ sql: "SELECT LAST_INSERT_ID()", rowsAsArray: true })) as unknown as [Cell[][]];
      assert.equal(Number(leaked![0]), "not-accepted@example.com".length, "directly: LAST_INSERT_ID(expr) keeps a dropped user's value");
      await through.query(secretQuery);
      for (const sql of ["SELECT LAST_INSERT_ID()", "SELECT FOUND_ROWS()", "SELECT INFO FROM information_schema.PROCESSLIST"]) {
        const [rows] = await through.query({ sql, rowsAsArray: true });
        assert.deepEqual(rows, [], `${sql}: no rows through the export`);
      }
    } finally {
      await direct.end();
      await through.end();
    }
  });

  test("JDBC (MariaDB Connector/J): it connects (its session set-up is taken), DatabaseMetaData's tables and keys answer as directly, a prepared query's rows are decided", () => {
    const dir = tempDir("mariadb-jdbc");
    const jar = "/usr/share/java/mariadb-java-client.jar";
    const source = join(__dirname, "..", "..", "..", "test", "fixtures", "jdbc", "MariaDbClient.java");
    const compiled = spawnSync("javac", ["-cp", jar, "-d", dir, source], { encoding: "utf8" });
    assert.equal(compiled.status, 0, compiled.stderr);
    const run = (p: number) => {
      const out = spawnSync("java", ["-cp", `${dir}:${jar}`, "MariaDbClient", `jdbc:mariadb://127.0.0.1:${p}/app`, reader.user, reader.password], {
        encoding: "utf8",
        timeout: 60_000,
      });
      assert.equal(out.status, 0, out.stderr);
      return out.stdout.trim().split("\n");
    };
    const direct = run(db.port);
    for (const expected of ["table|users|TABLE", "column|email|VARCHAR|2|YES", "key|orders|id|1", "user|not-accepted|not-accepted@example.com"])
      assert.ok(direct.includes(expected), `${expected} directly: ${direct.join(" / ")}`);
    const through = run(port);
    const schema = (lines: string[]) => lines.filter((line) => line.startsWith("table|") || line.startsWith("key|"));
    assert.deepEqual(schema(through), schema(direct), "the tables and keys, as directly");
    // Connector/J's getColumns query holds CONVERT(x, UNSIGNED INTEGER), which node-sql-parser cannot read: refused (1064), as
    // every statement the export's parser cannot read is (docs/mysql-export.md, "Schema browsing"); DESCRIBE and SHOW COLUMNS list them.
    assert.ok(!direct.some((line) => line.startsWith("columns refused")));
    assert.ok(through.includes("columns refused|1064"), through.join(" / "));
    assert.deepEqual(
      through.filter((line) => line.startsWith("user|")),
      ["user|null|accepted@example.com"],
      "the dropped user's row vanishes, id (no category) is NULL",
    );
  });

  test("read-only by default, and what is never run: writes, LOAD DATA, INTO OUTFILE, executable comments, multi-statements, unparsable SQL, replication commands", async () => {
    const c = await connect();
    for (const [sql, errno] of [
      ["INSERT INTO audit_notes (note) VALUES ('x')", 1792],
      ["UPDATE users SET email = 'x'", 1792],
      ["CREATE TABLE t2 (a INT)", 1792],
      ["SET @x = 1", 1792],
      ["LOAD DATA LOCAL INFILE '/etc/passwd' INTO TABLE audit_notes", 1227],
      ["SELECT email FROM users INTO OUTFILE '/tmp/leak'", 1227],
      ["SELECT id INTO @x FROM users LIMIT 1", 1227],
      ["SELECT id /*!, email */ FROM users", 1064],
      ["SELECT id /*M!100000 , email */ FROM users", 1064],
      ["SELECT 1; SELECT 2", 1235],
      ["SELECT id FROM users USE INDEX (x)", 1064],
      ["BEGIN NOT ATOMIC SELECT 1; END", 1064],
      ["CALL p()", 1227],
    ] as const) {
      await assert.rejects(c.query(sql), (error: { errno?: number }) => {
        assert.equal(error.errno, errno, sql);
        return true;
      });
    }
    const [[count]] = (await c.query({ sql: "SELECT id, note FROM audit_notes", rowsAsArray: true })) as unknown as [Cell[][]];
    assert.equal(count, undefined, "nothing was written");
    const [rows] = await c.query({ sql: "SELECT id, email FROM users WHERE id = 'accepted'", rowsAsArray: true });
    assert.deepEqual(rows, [[null, "accepted@example.com"]], "the connection goes on after refusals");
    await c.end();
  });

  test("stop, start and delete: the port closes and opens again; a deleted export is gone", async () => {
    const stopped = await call("PUT", `/export/stop?id=${exportId}`);
    assert.equal(stopped.status, 200);
    assert.equal((stopped.body as { status: string }).status, "inactive");
    const until = Date.now() + 10_000;
    while (Date.now() < until) {
      const open = await connect(port, { connectTimeout: 1000 }).then(
        async (c) => (await c.end(), true),
        () => false,
      );
      if (!open) break;
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    await assert.rejects(connect(port, { connectTimeout: 1000 }), "a stopped export does not answer");
    assert.equal((await call("PUT", `/export/start?id=${exportId}`)).status, 200);
    await waitOpen(port);
    const shown = (await call("GET", `/export?id=${exportId}`)).body as {
      serving: { connections: { total: number }; rows: { in: number; kept: number; dropped: number } } | null;
    };
    assert.ok(shown.serving, "the serving node reports it");
    const otherPort = await freePort();
    const other = await call("PUT", "/export", exportBody(`127.0.0.1:${db.port}`, { port: otherPort }));
    assert.equal(other.status, 200);
    const otherId = (other.body as { id: string }).id;
    await waitOpen(otherPort);
    assert.equal((await call("DELETE", `/export?id=${otherId}`)).status, 200);
    assert.equal((await call("GET", `/export?id=${otherId}`)).status, 404);
  });
});
