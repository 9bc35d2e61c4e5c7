import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { connect } from "node:net";
import { Client } from "pg";
import { encodeSSLRequest, encodeStartup } from "../../protocols/postgres/startup";
import type { NatsServerProcess } from "../../service/nats-server";
import { realisticPolicy } from "../../testkit/policy";
import { createPopulation } from "../fixtures/population";
import { createAppDatabase, populationHba, roles } from "../fixtures/postgres-population";
import { call as request } from "../../testkit/http";
import { startNats } from "../../testkit/nats";
import { NodeProcess } from "../../testkit/node-process";
import { freePort } from "../../testkit/ports";
import { PostgresServer } from "../../testkit/postgres";
import { selfSignedCertificate } from "../../testkit/certificates";
import { tempDir } from "../../testkit/temp";

describe("PostgreSQL exports over TLS", () => {
  let nats: NatsServerProcess;
  let node: NodeProcess;
  let pg: PostgresServer;
  let exportPort: number;
  let certFile: string;

  before(async () => {
    const dir = tempDir("export-tls");
    let keyFile: string;
    ({ certFile, keyFile } = selfSignedCertificate(dir, "warden-export"));
    pg = await PostgresServer.start({ hba: populationHba });
    createAppDatabase(pg);
    nats = await startNats();
    node = await NodeProcess.start({ nodeId: "pg-tls-1", natsUrl: nats.url, env: { EXPORT_TLS_CERT_FILE: certFile, EXPORT_TLS_KEY_FILE: keyFile } });
    const call = (method: string, path: string, body?: unknown) => request(node, method, path, body);
    assert.equal((await call("PUT", "/config", realisticPolicy())).status, 200);
    await createPopulation(call);
    exportPort = await freePort();
    assert.equal(
      (
        await call("PUT", "/export", {
          type: "postgres",
          endpoint: `127.0.0.1:${pg.port}`,
          resolverGroup: "users-table",
          metadata: { type: "platformUse", purposeId: "service" },
          port: exportPort,
        })
      ).status,
      200,
    );
  });

  after(async () => {
    await node?.stop();
    await nats?.stop();
    await pg?.stop();
  });

  test("SSLRequest is answered 'S' and the export presents its certificate: node-postgres and psql verify it", async () => {
    const deadline = Date.now() + 15_000;
    for (;;) {
      const c = new Client({
        host: "127.0.0.1",
        port: exportPort,
        user: roles.scram.user,
        password: roles.scram.password,
        database: "app",
        ssl: { ca: readFileSync(certFile), rejectUnauthorized: true },
      });
      try {
        await c.connect();
        const result = await c.query("SELECT id, email FROM users WHERE id = 'not-accepted' OR id = 'accepted'");
        assert.equal(result.rowCount, 1, "rows are decided over TLS like in the clear");
        await c.end();
        break;
      } catch (error) {
        await c.end().catch(() => undefined);
        if (Date.now() > deadline) throw error;
        await new Promise((resolve) => setTimeout(resolve, 250));
      }
    }
    const psql = spawnSync(
      "psql",
      [
        `host=127.0.0.1 port=${exportPort} user=${roles.scram.user} dbname=app sslmode=verify-full sslrootcert=${certFile}`,
        "-X",
        "-A",
        "-t",
        "-c",
        "SELECT id, name FROM users WHERE id = 'accepted'",
      ],
      { encoding: "utf8", env: { ...process.env, PGPASSWORD: roles.scram.password } },
    );
    assert.equal(psql.status, 0, psql.stderr);
    assert.equal(psql.stdout.trim(), "|Name accepted");
  });

  test("bytes sent after SSLRequest before the handshake are refused (no buffer stuffing)", async () => {
    const socket = connect({ host: "127.0.0.1", port: exportPort });
    const received: Buffer[] = [];
    socket.on("data", (chunk: Buffer) => received.push(chunk));
    socket.on("error", () => undefined);
    await new Promise((resolve) => socket.once("connect", resolve));
    socket.write(
      Buffer.concat([
        encodeSSLRequest(),
        encodeStartup(
          new Map([
            ["user", roles.trusted.user],
            ["database", "app"],
          ]),
        ),
      ]),
    );
    await new Promise((resolve) => socket.once("close", resolve));
    const answer = Buffer.concat(received);
    assert.equal(answer[0], 0x45, "an ErrorResponse, not 'S'");
    assert.ok(answer.includes(Buffer.from("08P01")));
  });
});
