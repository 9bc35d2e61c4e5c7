import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { Client } from "pg";
import type { NatsServerProcess } from "../../service/nats-server";
import { realisticPolicy } from "../../testkit/policy";
import { createPopulation } from "../fixtures/population";
import { createAppDatabase, populationHba, roles } from "../fixtures/postgres-population";
import { call as request, type Answer } from "../../testkit/http";
import { startNats } from "../../testkit/nats";
import { NodeProcess } from "../../testkit/node-process";
import { freePort } from "../../testkit/ports";
import { PostgresServer, postgresSystemUser } from "../../testkit/postgres";
import { tempDir } from "../../testkit/temp";
import { certificateAuthority, serverCertificate } from "../../testkit/certificates";

describe("PostgreSQL exports: TLS to the backend (backendTls)", () => {
  let nats: NatsServerProcess;
  let node: NodeProcess;
  /** ssl=on, with a certificate for localhost signed by `ca`. */
  let tlsPg: PostgresServer;
  /** ssl=off. */
  let plainPg: PostgresServer;
  let ca: string;
  let otherCa: string;
  let call: (method: string, path: string, body?: unknown) => Promise<Answer>;
  const exportPorts = new Map<string, number>();

  /** An export of the users table in front of `endpoint` with these backend TLS fields; its port. */
  async function exportWith(name: string, endpoint: string, tls: Record<string, unknown>): Promise<number> {
    const port = await freePort();
    const created = await call("PUT", "/export", {
      type: "postgres",
      endpoint,
      resolverGroup: "users-table",
      metadata: { type: "platformUse", purposeId: "service" },
      port,
      ...tls,
    });
    assert.equal(created.status, 200, JSON.stringify(created.body));
    exportPorts.set(name, port);
    return port;
  }

  /** A client connected through export `name` (retried while the export is not yet listening). */
  async function connectThrough(name: string, applicationName = "backend-tls-test"): Promise<Client> {
    const deadline = Date.now() + 15_000;
    for (;;) {
      const client = new Client({
        host: "127.0.0.1",
        port: exportPorts.get(name)!,
        user: roles.scram.user,
        password: roles.scram.password,
        database: "app",
        application_name: applicationName,
      });
      try {
        await client.connect();
        return client;
      } catch (error) {
        await client.end().catch(() => undefined);
        if ((error as NodeJS.ErrnoException).code !== "ECONNREFUSED" || Date.now() > deadline) throw error;
        await new Promise((resolve) => setTimeout(resolve, 250));
      }
    }
  }

  /** Whether the backend session of the export client named `applicationName` runs over TLS, as the server itself reports it. */
  function backendSsl(pg: PostgresServer, applicationName: string): string {
    return pg.sql(`SELECT s.ssl FROM pg_stat_ssl s JOIN pg_stat_activity a USING (pid) WHERE a.application_name = '${applicationName}'`, "app").trim();
  }

  before(async () => {
    const dir = tempDir("backend-tls");
    const authority = certificateAuthority(dir, "backend-ca");
    const server = serverCertificate(dir, authority);
    ca = readFileSync(authority.certFile, "utf8");
    otherCa = readFileSync(certificateAuthority(dir, "other-ca").certFile, "utf8");
    postgresSystemUser([dir, server.certFile, server.keyFile]);
    tlsPg = await PostgresServer.start({
      hba: populationHba,
      settings: { ssl: "on", ssl_cert_file: `'${server.certFile}'`, ssl_key_file: `'${server.keyFile}'` },
    });
    plainPg = await PostgresServer.start({ hba: populationHba });
    createAppDatabase(tlsPg);
    createAppDatabase(plainPg);
    nats = await startNats();
    node = await NodeProcess.start({ nodeId: "pg-backend-tls-1", natsUrl: nats.url });
    call = (method, path, body) => request(node, method, path, body);
    assert.equal((await call("PUT", "/config", realisticPolicy())).status, 200);
    await createPopulation(call);
    await exportWith("verify-full", `localhost:${tlsPg.port}`, { backendTls: "verify-full", backendCa: ca });
    await exportWith("verify-full-wrong-host", `127.0.0.1:${tlsPg.port}`, { backendTls: "verify-full", backendCa: ca });
    await exportWith("verify-full-wrong-ca", `localhost:${tlsPg.port}`, { backendTls: "verify-full", backendCa: otherCa });
    await exportWith("verify-ca", `127.0.0.1:${tlsPg.port}`, { backendTls: "verify-ca", backendCa: ca });
    await exportWith("require", `127.0.0.1:${tlsPg.port}`, { backendTls: "require" });
    await exportWith("require-plain", `127.0.0.1:${plainPg.port}`, { backendTls: "require" });
    await exportWith("prefer-plain", `127.0.0.1:${plainPg.port}`, { backendTls: "prefer" });
    await exportWith("disable", `127.0.0.1:${tlsPg.port}`, {});
  });

  after(async () => {
    await node?.stop();
    await nats?.stop();
    await tlsPg?.stop();
    await plainPg?.stop();
  });

  test("verify-full with the backend's CA: rows are decided as ever, and the backend sees an SSL connection", async () => {
    const client = await connectThrough("verify-full", "tls-verify-full");
    try {
      const result = await client.query("SELECT id, email FROM users WHERE id = 'not-accepted' OR id = 'accepted'");
      assert.equal(result.rowCount, 1, "rows are decided over backend TLS like in the clear");
      assert.equal(backendSsl(tlsPg, "tls-verify-full"), "t");
    } finally {
      await client.end();
    }
  });

  test("without backendTls the same server is reached in the clear (the probe above can tell)", async () => {
    const client = await connectThrough("disable", "tls-disable");
    try {
      await client.query("SELECT id FROM users WHERE id = 'accepted'");
      assert.equal(backendSsl(tlsPg, "tls-disable"), "f");
    } finally {
      await client.end();
    }
  });

  test("verify-ca checks the CA but not the name; require encrypts without checking", async () => {
    for (const name of ["verify-ca", "require"]) {
      const client = await connectThrough(name, `tls-${name}`);
      try {
        const result = await client.query("SELECT id FROM users WHERE id = 'accepted'");
        assert.equal(result.rowCount, 1);
        assert.equal(backendSsl(tlsPg, `tls-${name}`), "t", name);
      } finally {
        await client.end();
      }
    }
  });

  test("verify-full refuses a certificate of another CA, and one for another host name, with FATAL 08001", async () => {
    for (const name of ["verify-full-wrong-ca", "verify-full-wrong-host"]) {
      await assert.rejects(connectThrough(name), (error: Error & { code?: string; severity?: string }) => {
        assert.equal(error.code, "08001", `${name}: ${error.message}`);
        assert.equal(error.severity, "FATAL");
        assert.match(error.message, /could not verify its backing store over TLS \(backendTls: verify-full\)/);
        return true;
      });
    }
    assert.equal(backendSsl(tlsPg, "backend-tls-test"), "", "no backend session was started");
  });

  test("require against a server without TLS refuses (never falls back to cleartext); prefer falls back", async () => {
    await assert.rejects(connectThrough("require-plain"), (error: Error & { code?: string; severity?: string }) => {
      assert.equal(error.code, "08001", error.message);
      assert.equal(error.severity, "FATAL");
      assert.match(error.message, /does not accept TLS, and this export requires it \(backendTls: require\)/);
      return true;
    });
    const client = await connectThrough("prefer-plain", "tls-prefer");
    try {
      assert.equal((await client.query("SELECT id FROM users WHERE id = 'accepted'")).rowCount, 1);
      assert.equal(backendSsl(plainPg, "tls-prefer"), "f");
    } finally {
      await client.end();
    }
  });

  test("the API: reads show backendTls and backendCa; refused for pipeline exports, a CA without a verify mode, a CA that is not PEM, an unknown mode", async () => {
    const listed = await call("GET", "/export");
    const verifyFull = listed.body.exports.find((e: { listen: { port: number } }) => e.listen.port === exportPorts.get("verify-full"));
    assert.equal(verifyFull.backendTls, "verify-full");
    assert.equal(verifyFull.backendCa, ca);
    const disabled = listed.body.exports.find((e: { listen: { port: number } }) => e.listen.port === exportPorts.get("disable"));
    assert.equal(disabled.backendTls, undefined);

    const base = {
      type: "postgres",
      endpoint: `127.0.0.1:${tlsPg.port}`,
      resolverGroup: "users-table",
      metadata: { type: "platformUse", purposeId: "service" },
    };
    const refusals: Array<[Record<string, unknown>, number, string, string | undefined]> = [
      [{ ...base, type: "pipeline", endpoint: undefined, backendTls: "require" }, 400, "ERR_EXPORT_INVALID", "backendTls"],
      [{ ...base, backendTls: "require", backendCa: ca }, 400, "ERR_EXPORT_INVALID", "backendCa"],
      [{ ...base, backendTls: "verify-full", backendCa: "not a certificate" }, 400, "ERR_EXPORT_INVALID", "backendCa"],
      [
        { ...base, backendTls: "verify-full", backendCa: "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n" },
        400,
        "ERR_EXPORT_INVALID",
        "backendCa",
      ],
      [{ ...base, backendTls: "allow" }, 400, "ERR_REQUEST_INVALID", undefined],
    ];
    for (const [body, status, code, path] of refusals) {
      const answer = await call("PUT", "/export", body);
      assert.equal(answer.status, status, JSON.stringify(body));
      assert.equal(answer.body.error?.code, code, JSON.stringify(answer.body));
      if (path) assert.equal(answer.body.error.details?.[0]?.path, path, JSON.stringify(answer.body));
    }
  });
});
