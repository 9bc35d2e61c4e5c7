// Issue 24 item 5 for MySQL exports: TLS to the backend (backendTls disable | require | verify-ca |
// verify-full, backendCa), against a real MariaDB serving TLS with a certificate for `localhost`
// signed by a test CA, and a MariaDB without TLS. Whether the export's backend connection is
// encrypted is read from the server itself (its Ssl_accepts counter).
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import mysql from "mysql2/promise";
import type { NatsServerProcess } from "../../service/nats-server";
import { certificateAuthority, serverCertificate } from "../../testkit/certificates";
import { call as request, type Answer } from "../../testkit/http";
import { MariaDbServer } from "../../testkit/mariadb";
import { startNats } from "../../testkit/nats";
import { NodeProcess } from "../../testkit/node-process";
import { realisticPolicy } from "../../testkit/policy";
import { freePortBesides } from "../../testkit/ports";
import { tempDir } from "../../testkit/temp";
import { firstSuccess } from "../../testkit/wait";
import { createMysqlPopulation, reader } from "../fixtures/mysql-population";
import { createPopulation } from "../fixtures/population";

describe("MySQL exports: TLS to the backend (backendTls)", () => {
  let nats: NatsServerProcess;
  let node: NodeProcess;
  /** Serves TLS with a certificate for localhost signed by `ca`. */
  let tlsDb: MariaDbServer;
  /** No TLS: its greeting does not offer CLIENT_SSL. */
  let plainDb: MariaDbServer;
  let ca: string;
  let otherCa: string;
  let call: (method: string, path: string, body?: unknown) => Promise<Answer>;
  const exportPorts = new Map<string, number>();

  const openClient = (port: number) =>
    mysql.createConnection({ host: "127.0.0.1", port, user: reader.user, password: reader.password, database: "app", connectTimeout: 5_000 });

  async function exportWith(name: string, endpoint: string, tls: Record<string, unknown>): Promise<void> {
    // A port another export of this suite claimed may not be listening yet: freePort alone could hand it out again.
    const port = await freePortBesides(exportPorts.values());
    const created = await call("PUT", "/export", {
      type: "mysql",
      endpoint,
      resolverGroup: "users-table",
      metadata: { type: "platformUse", purposeId: "service" },
      port,
      ...tls,
    });
    assert.equal(created.status, 200, `${name}: ${JSON.stringify(created.body)}`);
    exportPorts.set(name, port);
  }

  /** A client through the named export, once its port is open (a refused login is the export's answer: thrown). */
  function through(name: string): Promise<mysql.Connection> {
    return firstSuccess(
      () => openClient(exportPorts.get(name)!),
      15_000,
      (error) => (error as NodeJS.ErrnoException).code === "ECONNREFUSED",
    );
  }

  /** TLS handshakes the TLS server has accepted so far, as it reports them. */
  async function tlsAccepts(): Promise<number> {
    const admin = await mysql.createConnection(tlsDb.connectionOptions);
    try {
      const [rows] = await admin.query({ sql: "SHOW GLOBAL STATUS LIKE 'Ssl_accepts'", rowsAsArray: true });
      return Number((rows as Array<[string, string]>)[0]![1]);
    } finally {
      await admin.end();
    }
  }

  before(async () => {
    const dir = tempDir("mysql-backend-tls");
    const authority = certificateAuthority(dir, "backend-ca");
    ca = readFileSync(authority.certFile, "utf8");
    otherCa = readFileSync(certificateAuthority(dir, "other-ca").certFile, "utf8");
    tlsDb = await MariaDbServer.start({ tls: serverCertificate(dir, authority) });
    plainDb = await MariaDbServer.start();
    await createMysqlPopulation(tlsDb);
    await createMysqlPopulation(plainDb);
    nats = await startNats();
    node = await NodeProcess.start({ nodeId: "mysql-backend-tls-1", natsUrl: nats.url });
    call = (method, path, body) => request(node, method, path, body);
    assert.equal((await call("PUT", "/config", realisticPolicy())).status, 200);
    await createPopulation(call);
    await exportWith("verify-full", `localhost:${tlsDb.port}`, { backendTls: "verify-full", backendCa: ca });
    await exportWith("verify-full-wrong-host", `127.0.0.1:${tlsDb.port}`, { backendTls: "verify-full", backendCa: ca });
    await exportWith("verify-full-wrong-ca", `localhost:${tlsDb.port}`, { backendTls: "verify-full", backendCa: otherCa });
    await exportWith("verify-ca", `127.0.0.1:${tlsDb.port}`, { backendTls: "verify-ca", backendCa: ca });
    await exportWith("verify-ca-wrong-ca", `127.0.0.1:${tlsDb.port}`, { backendTls: "verify-ca", backendCa: otherCa });
    await exportWith("require", `127.0.0.1:${tlsDb.port}`, { backendTls: "require" });
    await exportWith("require-plain", `127.0.0.1:${plainDb.port}`, { backendTls: "require" });
    await exportWith("disable", `127.0.0.1:${tlsDb.port}`, {});
  });

  after(async () => {
    await node?.stop();
    await nats?.stop();
    await tlsDb?.stop();
    await plainDb?.stop();
  });

  test("verify-full, verify-ca and require: rows are decided as ever over a backend connection the server sees encrypted", async () => {
    for (const name of ["verify-full", "verify-ca", "require"]) {
      const before = await tlsAccepts();
      const client = await through(name);
      try {
        const [rows] = await client.query({ sql: "SELECT id, email FROM users WHERE id IN ('accepted', 'not-accepted')", rowsAsArray: true });
        assert.deepEqual(rows, [[null, "accepted@example.com"]], `${name}: rows decided over backend TLS as in the clear`);
        const [hidden] = await client.execute({ sql: "SELECT email FROM users WHERE id = ?", rowsAsArray: true }, ["accepted"]);
        assert.deepEqual(hidden, [["accepted@example.com"]], `${name}: prepared statements too`);
      } finally {
        await client.end();
      }
      assert.equal((await tlsAccepts()) - before, 1, `${name}: the server accepted one TLS handshake, the export's`);
    }
  });

  test("without backendTls the same server is reached in the clear (the probe above can tell)", async () => {
    const before = await tlsAccepts();
    const client = await through("disable");
    try {
      const [rows] = await client.query({ sql: "SELECT id, email FROM users WHERE id = 'accepted'", rowsAsArray: true });
      assert.deepEqual(rows, [[null, "accepted@example.com"]]);
    } finally {
      await client.end();
    }
    assert.equal((await tlsAccepts()) - before, 0);
  });

  test("a certificate of another CA is refused (verify-full and verify-ca), and one for another host name under verify-full, with 2026", async () => {
    for (const name of ["verify-full-wrong-ca", "verify-ca-wrong-ca", "verify-full-wrong-host"]) {
      await assert.rejects(through(name), (error: { errno?: number; message?: string }) => {
        assert.equal(error.errno, 2026, `${name}: ${error.message}`);
        assert.match(String(error.message), /could not verify its backing store over TLS \(backendTls: verify-(full|ca)\)/, name);
        return true;
      });
    }
    // The same CA at 127.0.0.1 is taken under verify-ca (the first test): only the name differs.
  });

  test("require against a server without TLS refuses: never cleartext when TLS is asked for", async () => {
    await assert.rejects(through("require-plain"), (error: { errno?: number; message?: string }) => {
      assert.equal(error.errno, 2026, error.message);
      assert.match(String(error.message), /does not accept TLS, and this export requires it \(backendTls: require\)/);
      return true;
    });
  });

  test("the API: prefer (which could fall back to cleartext) and a CA without a verify mode are refused; reads show the fields", async () => {
    const listed = await call("GET", "/export");
    const verifyFull = (listed.body as { exports: Array<{ listen: { port: number }; backendTls?: string; backendCa?: string }> }).exports.find(
      (e) => e.listen.port === exportPorts.get("verify-full"),
    );
    assert.equal(verifyFull?.backendTls, "verify-full");
    assert.equal(verifyFull?.backendCa, ca);
    const base = { type: "mysql", endpoint: `127.0.0.1:${tlsDb.port}`, resolverGroup: "users-table", metadata: { type: "platformUse", purposeId: "service" } };
    for (const [body, path] of [
      [{ ...base, backendTls: "prefer" }, "backendTls"],
      [{ ...base, backendTls: "require", backendCa: ca }, "backendCa"],
      [{ ...base, backendTls: "verify-full", backendCa: "not a certificate" }, "backendCa"],
    ] as const) {
      const answer = await call("PUT", "/export", body);
      assert.equal(answer.status, 400, JSON.stringify(body));
      const error = (answer.body as { error: { code: string; details?: Array<{ path: string }> } }).error;
      assert.equal(error.code, "ERR_EXPORT_INVALID");
      assert.equal(error.details?.[0]?.path, path);
    }
  });
});
