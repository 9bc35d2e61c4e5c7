import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import mysql from "mysql2/promise";
import { MariaDbServer } from "../../testkit/mariadb";

/** The throwaway MariaDB the MySQL export's tests will run against: it starts, authenticates for real, answers, and goes away. */
describe("MariaDB test server", () => {
  let server: MariaDbServer;

  before(async () => {
    server = await MariaDbServer.start();
  });

  after(async () => {
    await server?.stop();
  });

  test("mysql2 connects with the bootstrap account's password and runs SELECT 1", async () => {
    const connection = await mysql.createConnection(server.connectionOptions);
    const [rows] = await connection.query<mysql.RowDataPacket[]>("SELECT 1 AS one, VERSION() AS version, CURRENT_USER() AS who, DATABASE() AS db");
    assert.equal(rows[0]!.one, 1);
    assert.match(String(rows[0]!.version), /MariaDB/);
    assert.equal(rows[0]!.who, `${server.user}@127.0.0.1`);
    assert.equal(rows[0]!.db, server.database);
    await connection.end();
    assert.ok(existsSync(server.socketPath), "the Unix socket lives in the server's own folder");
  });

  test("authentication is real: a wrong password is refused", async () => {
    await assert.rejects(mysql.createConnection({ ...server.connectionOptions, password: "wrong" }), { errno: 1045 });
  });

  test("stop() ends the server and removes its folder", async () => {
    const other = await MariaDbServer.start({ user: "u2", password: "p'2", database: "db2" });
    const connection = await mysql.createConnection(other.connectionOptions);
    await connection.end();
    await other.stop();
    assert.equal(existsSync(other.dir), false);
    await assert.rejects(mysql.createConnection({ ...other.connectionOptions, connectTimeout: 1000 }));
  });
});
