// Issue 27, part 1: schema browsing through a PostgreSQL export. A statement that reads only the
// system catalogs passes unredacted, so psql's \d family, JDBC DatabaseMetaData and
// information_schema give the same answers through the export as directly. Catalog relations and
// functions that hold or reach data values (column statistics, query_to_xml...) are not catalog
// reads: each such attack is shown leaking a forbidden value directly and not through the export.
// A named catalog statement that server-side code replaced (DEALLOCATE and PREPARE in a DO block)
// is decided row by row again.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { join } from "node:path";
import { Client } from "pg";
import { encodeBind } from "../../protocols/postgres/bind";
import { encodeExecute } from "../../protocols/postgres/execute";
import { encodeParse } from "../../protocols/postgres/parse";
import { encodeQuery } from "../../protocols/postgres/query";
import { encodeSync } from "../../protocols/postgres/sync";
import { jdbcJar, PostgresServer } from "../../testkit/postgres";
import { tempDir } from "../../testkit/temp";
import { CatalogExports, DROPPED, droppedEmail } from "../fixtures/postgres-catalog";
import { roles } from "../fixtures/postgres-population";
import { rowsOf, WireClient } from "../helpers/pg-wire";

describe("PostgreSQL exports: schema browsing (catalog reads pass, values in the catalog do not)", () => {
  const world = new CatalogExports();
  const { leaked } = world;
  let pg: PostgresServer;
  let readOnlyPort: number;
  let writablePort: number;

  const psql = (port: number, ...commands: string[]) => {
    const args = ["-h", "127.0.0.1", "-p", String(port), "-U", roles.scram.user, "-d", "app", "-X", ...commands.flatMap((c) => ["-c", c])];
    const out = spawnSync("psql", args, { encoding: "utf8", env: { ...process.env, PGPASSWORD: roles.scram.password } });
    assert.equal(out.status, 0, out.stderr);
    return out.stdout;
  };
  const query = async (port: number, sql: string): Promise<unknown[][]> => {
    const client = world.client(port);
    await client.connect();
    try {
      return (await client.query({ text: sql, rowMode: "array" })).rows;
    } finally {
      await client.end().catch(() => undefined);
    }
  };

  before(async () => {
    // pg_statistic is for superusers only; a role granted it (as monitoring roles often are) shows the attack.
    await world.start("pg-catalog-1", {
      setupSql: `ALTER TABLE users ADD PRIMARY KEY (email); ANALYZE users; GRANT SELECT ON pg_catalog.pg_statistic TO ${roles.scram.user}`,
      writable: true,
    });
    ({ pg, readOnlyPort, writablePort } = world);
  });

  after(() => world.stop());

  test("psql \\dt, \\d users, \\d+ users, \\df and \\dn answer as they do directly", () => {
    for (const command of ["\\dt", "\\d users", "\\d+ users", "\\df", "\\dn", "\\dv"]) {
      const direct = psql(pg.port, command);
      assert.ok(direct.trim().length > 0, `${command} answers directly`);
      assert.equal(psql(readOnlyPort, command), direct, command);
    }
    assert.match(psql(readOnlyPort, "\\d users"), /email\s*\|\s*text/);
  });

  test("information_schema, the catalog tables and describing functions answer as they do directly (node-postgres)", async () => {
    const statements = [
      "SELECT table_name, column_name, data_type FROM information_schema.columns WHERE table_name = 'users' ORDER BY ordinal_position",
      "SELECT c.relname, c.relkind, pg_catalog.pg_get_userbyid(c.relowner) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = 'public' ORDER BY 1",
      "SELECT pg_catalog.pg_get_viewdef('users_view'::regclass), pg_catalog.pg_get_indexdef(i.indexrelid) FROM pg_catalog.pg_index i WHERE i.indrelid = 'users'::regclass",
      "SELECT current_schema(), current_database(), version()",
    ];
    for (const sql of statements) {
      const direct = await query(pg.port, sql);
      assert.ok(direct.length > 0, `${sql} has rows directly`);
      assert.deepEqual(await query(readOnlyPort, sql), direct, sql);
    }
  });

  test("JDBC DatabaseMetaData: getTables, getColumns (also as a named server-side statement), getPrimaryKeys answer as they do directly", () => {
    const dir = tempDir("jdbc-metadata");
    const source = join(__dirname, "..", "..", "..", "test", "fixtures", "jdbc", "MetadataClient.java");
    const compiled = spawnSync("javac", ["-cp", jdbcJar, "-d", dir, source], { encoding: "utf8" });
    assert.equal(compiled.status, 0, compiled.stderr);
    const run = (port: number) => {
      const out = spawnSync(
        "java",
        ["-cp", `${dir}:${jdbcJar}`, "MetadataClient", `jdbc:postgresql://127.0.0.1:${port}/app`, roles.scram.user, roles.scram.password],
        { encoding: "utf8", timeout: 60_000 },
      );
      assert.equal(out.status, 0, out.stderr);
      return out.stdout.trim().split("\n");
    };
    const direct = run(pg.port);
    for (const expected of ["table|users|TABLE", "columns1|email|text|2|NO", "columns7|email|text|2|NO", "key|users|email|1"])
      assert.ok(direct.includes(expected), `${expected} directly: ${direct.join(" / ")}`);
    assert.deepEqual(run(readOnlyPort), direct);
  });

  describe("values the catalog holds or reaches: each leaks directly and not through the export", () => {
    const attacks: Record<string, string> = {
      "column statistics (pg_stats)": "SELECT histogram_bounds::text FROM pg_stats WHERE tablename = 'users' AND attname = 'email'",
      "column statistics (pg_statistic)":
        "SELECT stavalues1::text FROM pg_catalog.pg_statistic s JOIN pg_catalog.pg_class c ON c.oid = s.starelid WHERE c.relname = 'users'",
      "query_to_xml runs a statement given as text": "SELECT pg_catalog.query_to_xml('SELECT email FROM users', true, false, '')::text",
      "table_to_xml reads a table": "SELECT table_to_xml('users', true, false, '')::text",
      "a subquery inside a catalog read": "SELECT c.relname, (SELECT string_agg(email, ',') FROM users) FROM pg_catalog.pg_class c WHERE c.relname = 'users'",
      "a WITH entry naming a later one that is a real table":
        "WITH a AS (SELECT * FROM users), users AS (SELECT relname FROM pg_catalog.pg_class) SELECT * FROM a",
    };
    for (const [name, sql] of Object.entries(attacks)) {
      test(name, async () => {
        const direct = JSON.stringify(await query(pg.port, sql));
        assert.ok(leaked(direct).length > 0, `the attack is real: ${direct.slice(0, 200)}`);
        const exported = await query(readOnlyPort, sql).then(
          (rows) => JSON.stringify(rows),
          (error: Error) => error.message,
        );
        assert.deepEqual(leaked(exported), [], exported.slice(0, 200));
      });
    }
  });

  test("an advisory lock keyed by a value, then pg_locks: leaks directly and not through the export", async () => {
    // The lock is taken by a row-by-row statement (its row is dropped, its function still runs): the catalog must not show the key.
    const statements = [
      `SELECT pg_advisory_lock(ascii(substr(email, 1, 1))) FROM users WHERE id = '${DROPPED}'`,
      "SELECT objid::int FROM pg_catalog.pg_locks WHERE locktype = 'advisory'",
    ];
    const run = async (port: number) => {
      const client = new Client({ host: "127.0.0.1", port, user: roles.scram.user, password: roles.scram.password, database: "app" });
      await client.connect();
      try {
        await client.query(statements[0]!);
        return (await client.query({ text: statements[1]!, rowMode: "array" })).rows;
      } finally {
        await client.end().catch(() => undefined);
      }
    };
    assert.deepEqual(await run(pg.port), [[droppedEmail.charCodeAt(0)]], "the attack is real");
    assert.deepEqual(await run(readOnlyPort), []);
  });

  test("a named catalog statement replaced by server-side code (DEALLOCATE and PREPARE in a DO block) is decided row by row again", async () => {
    const catalogRead = "SELECT relname::text AS v FROM pg_catalog.pg_class WHERE relname = 'users'";
    const swap = `DO $$ BEGIN EXECUTE 'DEALLOCATE s1'; EXECUTE format('PREPARE s1 AS SELECT %L::text AS v', (SELECT email FROM users WHERE id = '${DROPPED}')); END $$`;
    const run = async (port: number) => {
      const wire = await WireClient.connect(port, roles.trusted.user, "app");
      try {
        wire.send(
          encodeParse({ statement: "s1", sql: catalogRead, parameterTypes: [] }),
          encodeBind({ portal: "", statement: "s1", parameterFormats: [], parameters: [], resultFormats: [] }),
          encodeExecute({ portal: "", maxRows: 0 }),
          encodeSync(),
        );
        const before = rowsOf(await wire.until((m) => m.code === "Z"));
        wire.send(encodeQuery(swap));
        await wire.until((m) => m.code === "Z");
        wire.send(
          encodeBind({ portal: "", statement: "s1", parameterFormats: [], parameters: [], resultFormats: [] }),
          encodeExecute({ portal: "", maxRows: 0 }),
          encodeSync(),
        );
        const after = await wire.until((m) => m.code === "Z");
        wire.send(encodeQuery(`PREPARE s2 AS ${catalogRead}`));
        await wire.until((m) => m.code === "Z");
        wire.send(encodeQuery(swap.replaceAll("s1", "s2")));
        await wire.until((m) => m.code === "Z");
        wire.send(encodeQuery("EXECUTE s2"));
        const sqlLevel = await wire.until((m) => m.code === "Z");
        return {
          before,
          after: after.map((m) => m.code + m.body.toString("latin1")).join(""),
          sqlLevel: sqlLevel.map((m) => m.code + m.body.toString("latin1")).join(""),
        };
      } finally {
        wire.close();
      }
    };
    const direct = await run(pg.port);
    assert.ok(direct.after.includes(droppedEmail) && direct.sqlLevel.includes(droppedEmail), "the swap is real");
    const exported = await run(writablePort);
    assert.deepEqual(exported.before, [["users"]], "the catalog read passed before the swap");
    assert.deepEqual(leaked(exported.after), []);
    assert.deepEqual(leaked(exported.sqlLevel), []);
  });
});
