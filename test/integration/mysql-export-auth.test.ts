// Issue 21: how clients log in to a MySQL export. With the export certificate the greeting offers
// TLS and mysql2 verifies the certificate; with `mysql` enforced in the security configuration the
// export verifies clients itself (LDAP, a real slapd), takes their cleartext password only over
// TLS, and logs in to MariaDB as the client or as the export's own credentials.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { connect } from "node:net";
import { connect as tlsConnect } from "node:tls";
import mysql from "mysql2/promise";
import { Capability, hasCapability } from "../../protocols/mysql/capabilities";
import { decodeHandshake } from "../../protocols/mysql/handshake";
import { encodeHandshakeResponse } from "../../protocols/mysql/handshake-response";
import { encodePacket } from "../../protocols/mysql/packets";
import { encodeSslRequest } from "../../protocols/mysql/ssl-request";
import type { NatsServerProcess } from "../../service/nats-server";
import { startNats } from "../../testkit/nats";
import { NodeProcess } from "../../testkit/node-process";
import { realisticPolicy } from "../../testkit/policy";
import { freePort } from "../../testkit/ports";
import { firstSuccess } from "../../testkit/wait";
import { tempDir } from "../../testkit/temp";
import { selfSignedCertificate } from "../../testkit/certificates";
import { SlapdServer } from "../../testkit/slapd";
import { MariaDbServer } from "../../testkit/mariadb";
import { createMysqlPopulation, reader } from "../fixtures/mysql-population";
import { createPopulation } from "../fixtures/population";

/** In the directory only: not a MariaDB account, so only the export's own credentials get her in. */
const alice = { uid: "alice", password: "wonderland" };
/** In the directory, granted nothing by the authorization rules. */
const mallory = { uid: "mallory", password: "no-rule-names-me" };
const basic = (user: string, password: string) => `Basic ${Buffer.from(`${user}:${password}`).toString("base64")}`;

describe("MySQL exports: TLS to clients and direct verification (LDAP)", () => {
  let slapd: SlapdServer;
  let db: MariaDbServer;
  let nats: NatsServerProcess;
  let node: NodeProcess;
  let ca: Buffer;
  let asClient: number;
  let asExport: number;
  /** Export credentials and allowWrites. */
  let writable: number;
  const ssl = () => ({ ca, rejectUnauthorized: true });
  const open = (port: number, user: string, password: string, extra: mysql.ConnectionOptions = {}) =>
    mysql.createConnection({
      host: "127.0.0.1",
      port,
      user,
      password,
      database: "app",
      ssl: ssl(),
      enableCleartextPlugin: true,
      connectTimeout: 3000,
      ...extra,
    });

  before(async () => {
    const dir = tempDir("mysql-export-auth");
    const { certFile, keyFile } = selfSignedCertificate(dir, "warden-export");
    ca = readFileSync(certFile);
    // `reader` is in the directory and in MariaDB with the same password: the client's own identity reaches the backend.
    slapd = await SlapdServer.start({ suffix: "dc=example,dc=org", users: [alice, mallory, { uid: reader.user, password: reader.password }] });
    db = await MariaDbServer.start();
    await createMysqlPopulation(db);
    nats = await startNats();
    const security = {
      verifiers: [
        {
          verifier: "ldap",
          default: "directory",
          profiles: [{ profile: "directory", configuration: { hostname: `127.0.0.1:${slapd.port}`, rootComponents: "ou=people,dc=example,dc=org" } }],
        },
      ],
      credentials: [{ type: "namepwd", verifiers: [{ verifier: "ldap", default: true }] }],
      enforcedComponents: [{ componentName: "mysql" }, { componentName: "config" }, { componentName: "export" }, { componentName: "user" }],
      // A login needs mysql:read, a write on an allowWrites export mysql:write (admin includes both).
      authorization: {
        rules: [
          { name: "admin", ldapUsers: [alice.uid], permissions: ["*:admin"] },
          { name: "readers", ldapUsers: [reader.user], permissions: ["mysql:read"] },
        ],
      },
    };
    const file = join(dir, "security.json");
    writeFileSync(file, JSON.stringify(security));
    node = await NodeProcess.start({
      nodeId: "mysql-auth-1",
      natsUrl: nats.url,
      env: { SECURITY_CONFIG: file, EXPORT_TLS_CERT_FILE: certFile, EXPORT_TLS_KEY_FILE: keyFile },
    });
    const call = async (method: string, path: string, body?: unknown) => {
      const answer = await fetch(`${node.url}${path}`, {
        method,
        headers: { authorization: basic(alice.uid, alice.password), ...(body === undefined ? {} : { "content-type": "application/json" }) },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      const text = await answer.text();
      return { status: answer.status, etag: null, body: text ? JSON.parse(text) : text };
    };
    assert.equal((await call("PUT", "/config", realisticPolicy())).status, 200);
    await createPopulation(call);
    const base = { type: "mysql", endpoint: `127.0.0.1:${db.port}`, resolverGroup: "users-table", metadata: { type: "platformUse", purposeId: "service" } };
    asClient = await freePort();
    asExport = await freePort();
    const created = await call("PUT", "/export", { ...base, port: asClient });
    assert.equal(created.status, 200, JSON.stringify(created.body));
    writable = await freePort();
    const writableCreated = await call("PUT", "/export", {
      ...base,
      port: writable,
      credentials: { user: reader.user, password: reader.password },
      allowWrites: true,
    });
    assert.equal(writableCreated.status, 200, JSON.stringify(writableCreated.body));
    const withCredentials = await call("PUT", "/export", { ...base, port: asExport, credentials: { user: reader.user, password: reader.password } });
    assert.equal(withCredentials.status, 200, JSON.stringify(withCredentials.body));
    assert.equal(withCredentials.body.backendIdentity, "export");
    assert.ok(!JSON.stringify(withCredentials.body).includes(reader.password), "the export's password is never read back");
    await (await firstSuccess(() => open(asClient, reader.user, reader.password), 15_000)).end();
  });

  after(async () => {
    await node?.stop();
    await nats?.stop();
    await db?.stop();
    await slapd?.stop();
  });

  test("TLS: mysql2 verifies the export certificate; the client's directory identity logs in to MariaDB as itself", async () => {
    const c = await open(asClient, reader.user, reader.password);
    const [rows] = await c.query({ sql: "SELECT id, email FROM users WHERE id IN ('accepted', 'not-accepted')", rowsAsArray: true });
    assert.deepEqual(rows, [[null, "accepted@example.com"]]);
    const [[counted]] = (await c.query({ sql: "SELECT COUNT(*) FROM users", rowsAsArray: true })) as unknown as [unknown[][]];
    assert.equal(counted, undefined, "an aggregate names no user: no row");
    await c.end();
    await assert.rejects(
      open(asClient, reader.user, reader.password, { ssl: { rejectUnauthorized: true } }),
      /self[- ]signed|certificate/i,
      "a client that does not trust the certificate refuses it",
    );
  });

  test("an SSLRequest and the TLS ClientHello in one TCP segment: the bytes after the request go to TLS", async () => {
    const socket = connect({ host: "127.0.0.1", port: asClient });
    socket.on("error", () => undefined);
    const greeting = await new Promise<Buffer>((resolve) => socket.once("data", resolve));
    const handshake = decodeHandshake(greeting.subarray(4));
    assert.ok(hasCapability(handshake.capabilities, Capability.Ssl), "the export offers TLS");
    const capabilities = (Capability.Protocol41 | Capability.SecureConnection | Capability.PluginAuth | Capability.Ssl) >>> 0;
    socket.cork();
    socket.write(encodePacket(encodeSslRequest({ capabilities, maxPacketSize: 1 << 24, characterSet: 45, mariaDbCapabilities: 0 }), 1));
    const secure = tlsConnect({ socket, ca, servername: "localhost" });
    setImmediate(() => socket.uncork());
    await new Promise<void>((resolve, reject) => {
      secure.once("secureConnect", resolve);
      secure.once("error", reject);
    });
    secure.write(
      encodePacket(
        encodeHandshakeResponse({
          capabilities,
          maxPacketSize: 1 << 24,
          characterSet: 45,
          mariaDbCapabilities: 0,
          username: reader.user,
          authResponse: Buffer.alloc(0),
          authPluginName: "mysql_native_password",
        }),
        2,
      ),
    );
    const answer = await new Promise<Buffer>((resolve) => secure.once("data", resolve));
    assert.equal(answer[4], 0xfe, "the export asks for the cleartext password (an auth switch) over the TLS session");
    assert.ok(answer.includes(Buffer.from("mysql_clear_password")));
    secure.destroy();
  });

  test("direct verification: a wrong password is refused by the export (1045), before MariaDB is asked", async () => {
    await assert.rejects(open(asClient, reader.user, "wrong"), (error: { errno?: number; sqlState?: string; message?: string }) => {
      assert.equal(error.errno, 1045);
      assert.equal(error.sqlState, "28000");
      assert.match(String(error.message), /Access denied for user 'reader'/);
      return true;
    });
    await assert.rejects(open(asClient, alice.uid, alice.password), (error: { errno?: number; message?: string }) => {
      assert.equal(error.errno, 1045);
      assert.match(String(error.message), /could not log in to its backend/, "alice is verified but is no MariaDB account: the backend refuses her");
      return true;
    });
  });

  test("direct verification takes passwords only over TLS", async () => {
    await assert.rejects(open(asClient, reader.user, reader.password, { ssl: undefined }), (error: { errno?: number; message?: string }) => {
      assert.equal(error.errno, 1045);
      assert.match(String(error.message), /only over TLS/);
      return true;
    });
  });

  test("the export's own credentials: a directory user without a MariaDB account reads as the export's identity", async () => {
    const c = await open(asExport, alice.uid, alice.password);
    const [rows] = await c.query({ sql: "SELECT id, name FROM users WHERE id = 'accepted'", rowsAsArray: true });
    assert.deepEqual(rows, [[null, "Name accepted"]]);
    await c.end();
  });

  test("authorization: a verified directory user no rule grants mysql:read is refused at login (1045), even on an export with its own credentials", async () => {
    await assert.rejects(open(asExport, mallory.uid, mallory.password), (error: { errno?: number; message?: string }) => {
      assert.equal(error.errno, 1045);
      assert.match(String(error.message), /does not hold mysql:read/);
      return true;
    });
    // The same login with a rule: admitted, reading as the export's identity.
    const c = await open(asExport, reader.user, reader.password);
    await c.end();
  });

  test("authorization: on an export with allowWrites, a caller holding mysql:read only has a read-only session; mysql:write lets writes through to MariaDB", async () => {
    const readOnly = await firstSuccess(() => open(writable, reader.user, reader.password), 15_000);
    await assert.rejects(readOnly.query("UPDATE users SET clicks = clicks + 1 WHERE id = 'accepted'"), (error: { message?: string }) => {
      assert.match(String(error.message), /read-only/);
      return true;
    });
    await readOnly.end();
    const writer = await open(writable, alice.uid, alice.password);
    // Past the export's read-only check: MariaDB decides (the export's account may or may not hold UPDATE).
    const outcome = await writer.query("UPDATE users SET clicks = clicks WHERE id = 'accepted'").then(
      () => "written",
      (error: { message?: string }) => String(error.message),
    );
    assert.doesNotMatch(outcome, /export is read-only/);
    await writer.end();
  });
});
