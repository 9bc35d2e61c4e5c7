import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { writeFileSync } from "node:fs";
import { connect } from "node:net";
import { join } from "node:path";
import { Client } from "pg";
import { encodeBind } from "../../protocols/postgres/bind";
import { encodeDescribe } from "../../protocols/postgres/describe";
import { encodeExecute } from "../../protocols/postgres/execute";
import { encodeParse } from "../../protocols/postgres/parse";
import { encodeQuery } from "../../protocols/postgres/query";
import { encodeStartup } from "../../protocols/postgres/startup";
import { encodeSync } from "../../protocols/postgres/sync";
import type { NatsServerProcess } from "../../service/nats-server";
import { realisticPolicy } from "../../testkit/policy";
import { createPopulation } from "../fixtures/population";
import { createAppDatabase, populationHba, roles } from "../fixtures/postgres-population";
import { call as request } from "../../testkit/http";
import { startNats } from "../../testkit/nats";
import { NodeProcess } from "../../testkit/node-process";
import { freePort } from "../../testkit/ports";
import { PostgresServer } from "../../testkit/postgres";
import { tempDir } from "../../testkit/temp";
import { WireClient } from "../helpers/pg-wire";
import { currentRss } from "../../testkit/memory";
import { seededRandom } from "../helpers/seeded-random";

const bigRows = 100_000;

describe("PostgreSQL exports under load and abuse", () => {
  let nats: NatsServerProcess;
  let node: NodeProcess;
  let pg: PostgresServer;
  let exportPort: number;
  const call = (method: string, path: string, body?: unknown) => request(node, method, path, body);

  before(async () => {
    pg = await PostgresServer.start({ hba: populationHba });
    createAppDatabase(pg);
    const init = spawnSync("pgbench", ["-i", "-q", "-s", "1", "-h", "127.0.0.1", "-p", String(pg.port), "-U", "postgres", "app"], {
      encoding: "utf8",
      env: { ...process.env, PGPASSWORD: "postgres" },
    });
    assert.equal(init.status, 0, init.stderr);
    // 200 MB of rows of an allowed user, for the slow client.
    pg.sql(`CREATE TABLE big AS SELECT 'accepted'::text AS uid, repeat('x', 2000) AS payload FROM generate_series(1, ${bigRows})`, "app");
    pg.sql(`GRANT ALL ON ALL TABLES IN SCHEMA public TO ${roles.scram.user}, ${roles.trusted.user}`, "app");
    nats = await startNats();
    // Sessions on the node's own loop: the backpressure test measures the process that holds the rows (the workers suite measures a worker's).
    node = await NodeProcess.start({ nodeId: "pg-robust-1", natsUrl: nats.url, env: { EXPORT_WORKERS: "0" } });
    const policy = realisticPolicy();
    policy.mappingGroups.push(
      {
        name: "accounts",
        fieldMappings: [
          { recordField: "pgbench_accounts.aid", resourceContext: true },
          { recordField: "pgbench_accounts.abalance", categoryId: "usage" },
        ],
      },
      {
        name: "big",
        fieldMappings: [
          { recordField: "public.big.uid", resourceContext: true },
          { recordField: "public.big.payload", categoryId: "contact" },
        ],
      },
    );
    assert.equal((await call("PUT", "/config", policy)).status, 200);
    await createPopulation(call);
    exportPort = await freePort();
    // Writes allowed: the TPC-B-like pgbench script updates through the export.
    const created = await call("PUT", "/export", {
      type: "postgres",
      endpoint: `127.0.0.1:${pg.port}`,
      resolverGroup: "accounts",
      metadata: { type: "platformUse", purposeId: "service" },
      port: exportPort,
      allowWrites: true,
    });
    assert.equal(created.status, 200);
    const deadline = Date.now() + 15_000;
    while (!(await works())) {
      if (Date.now() > deadline) throw new Error("the export did not open");
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  });

  after(async () => {
    await node?.stop();
    await nats?.stop();
    await pg?.stop();
  });

  let lastFailure = "";
  async function works(): Promise<boolean> {
    const c = new Client({
      host: "127.0.0.1",
      port: exportPort,
      user: roles.scram.user,
      password: roles.scram.password,
      database: "app",
      connectionTimeoutMillis: 3000,
    });
    try {
      await c.connect();
      const result = await c.query("SELECT aid, abalance FROM pgbench_accounts WHERE aid = $1", [1]);
      return result.command === "SELECT";
    } catch (error) {
      lastFailure = String(error);
      return false;
    } finally {
      await c.end().catch(() => undefined);
    }
  }

  // pgbench's built-in scripts first read their scale with count(*): an aggregate names no user, so through an export it returns no row (docs/postgres-export.md).
  test("pgbench runs to completion through an export: a select-only script (prepared) and a TPC-B-like write script (simple)", () => {
    const dir = tempDir("pgbench");
    const script = join(dir, "select.sql");
    writeFileSync(script, "\\set aid random(1, 100000)\nSELECT aid, abalance FROM pgbench_accounts WHERE aid = :aid;\n");
    const writeScript = join(dir, "writes.sql");
    writeFileSync(
      writeScript,
      [
        "\\set aid random(1, 100000)",
        "\\set delta random(-5000, 5000)",
        "BEGIN;",
        "UPDATE pgbench_accounts SET abalance = abalance + :delta WHERE aid = :aid;",
        "SELECT aid, abalance FROM pgbench_accounts WHERE aid = :aid;",
        "INSERT INTO pgbench_history (tid, bid, aid, delta, mtime) VALUES (1, 1, :aid, :delta, CURRENT_TIMESTAMP);",
        "END;",
        "",
      ].join("\n"),
    );
    const env = { ...process.env, PGPASSWORD: "postgres" };
    const base = ["-n", "-h", "127.0.0.1", "-p", String(exportPort), "-U", "postgres"];
    const select = spawnSync("pgbench", [...base, "-f", script, "-M", "prepared", "-c", "4", "-j", "2", "-t", "250", "app"], { encoding: "utf8", env });
    assert.equal(select.status, 0, select.stderr + select.stdout);
    assert.match(select.stdout, /number of transactions actually processed: 1000\/1000/);
    const writes = spawnSync("pgbench", [...base, "-f", writeScript, "-M", "simple", "-c", "2", "-t", "50", "app"], { encoding: "utf8", env });
    assert.equal(writes.status, 0, writes.stderr + writes.stdout);
    assert.match(writes.stdout, /number of transactions actually processed: 100\/100/);
  });

  test("protocol fuzzing: random and mutated frames for a bounded time; the node stays up and other connections keep working", async () => {
    const seed = Number(process.env.FUZZ_SEED ?? Date.now() % 1_000_000);
    const next = seededRandom(seed);
    const int = (max: number) => Math.floor(next() * max);
    const valid = [
      encodeQuery("SELECT aid, abalance FROM pgbench_accounts WHERE aid < 10"),
      encodeParse({ statement: "s", sql: "SELECT aid FROM pgbench_accounts WHERE aid = $1", parameterTypes: [23] }),
      encodeBind({ portal: "", statement: "s", parameterFormats: [0], parameters: [Buffer.from("1")], resultFormats: [1] }),
      encodeDescribe({ kind: 0x50, name: "" }),
      encodeExecute({ portal: "", maxRows: 1 }),
      encodeSync(),
    ];
    const mutate = (message: Buffer): Buffer => {
      const copy = Buffer.from(message);
      switch (int(5)) {
        case 0: // flip bytes anywhere, length and code included
          for (let i = 0; i < 1 + int(4); i++) copy[int(copy.length)] = int(256);
          return copy;
        case 1: // truncate
          return copy.subarray(0, int(copy.length));
        case 2: // a length that lies
          copy.writeInt32BE([-1, 0, 3, 0x7fffffff, 1 << 28, copy.length + 100][int(6)]!, 1);
          return copy;
        case 3: // an unknown code
          copy[0] = [0x00, 0x01, 0x7a, 0xff, 0x41][int(5)]!;
          return copy;
        default: // random bytes
          return Buffer.from(Array.from({ length: int(64) }, () => int(256)));
      }
    };
    const attack = async (): Promise<void> => {
      const socket = connect({ host: "127.0.0.1", port: exportPort });
      socket.on("error", () => undefined);
      socket.on("data", () => undefined);
      await new Promise<void>((resolve) => {
        socket.once("connect", () => resolve());
        socket.once("close", () => resolve());
      });
      const startup = encodeStartup(
        new Map([
          ["user", roles.trusted.user],
          ["database", "app"],
        ]),
      );
      if (int(4) === 0) socket.write(mutate(Buffer.concat([Buffer.from([0]), startup])).subarray(1));
      else socket.write(startup);
      await new Promise((resolve) => setTimeout(resolve, 20));
      for (let i = 0; i < 1 + int(6); i++) {
        const pick = valid[int(valid.length)]!;
        socket.write(int(3) === 0 ? pick : mutate(pick));
      }
      await new Promise((resolve) => setTimeout(resolve, int(50)));
      socket.destroy();
    };
    let attacks = 0;
    let checks = 0;
    const until = Date.now() + 8_000;
    while (Date.now() < until) {
      await Promise.all(Array.from({ length: 8 }, () => attack()));
      attacks += 8;
      if (attacks % 40 === 0) {
        assert.ok(await works(), `a well-behaved client is served during the fuzzing (seed ${seed}): ${lastFailure}`);
        checks++;
      }
    }
    assert.ok(attacks >= 100, `${attacks} fuzzing connections`);
    assert.ok(checks >= 2);
    assert.ok(await works(), `the export still serves after ${attacks} fuzzing connections (seed ${seed})`);
    assert.equal((await call("GET", "/readyz")).status, 200, "the node is healthy");
    const listed = (await call("GET", "/export")).body.exports[0];
    assert.equal(listed.serving.port, exportPort);
  });

  test("a client that does not read gets backpressure: the node's memory stays bounded while 200 MB of allowed rows wait", async () => {
    const port = await freePort();
    assert.equal(
      (
        await call("PUT", "/export", {
          type: "postgres",
          endpoint: `127.0.0.1:${pg.port}`,
          resolverGroup: "big",
          metadata: { type: "platformUse", purposeId: "service" },
          port,
        })
      ).status,
      200,
    );
    let wire: WireClient | undefined;
    const deadline = Date.now() + 15_000;
    while (!wire) {
      wire = await WireClient.connect(port, roles.trusted.user, "app").catch(() => undefined);
      if (!wire && Date.now() > deadline) throw new Error("the export did not open");
      if (!wire) await new Promise((resolve) => setTimeout(resolve, 200));
    }
    const pid = node.child.pid!;
    const before = currentRss(pid);
    wire.socket.pause();
    wire.send(encodeQuery("SELECT uid, payload FROM big"));
    let highest = before;
    for (let i = 0; i < 25; i++) {
      await new Promise((resolve) => setTimeout(resolve, 200));
      highest = Math.max(highest, currentRss(pid));
    }
    console.log(
      `# node RSS ${Math.round(before / 2 ** 20)} MiB before, at most ${Math.round(highest / 2 ** 20)} MiB while the client read nothing (${bigRows * 2} KB of rows pending)`,
    );
    assert.ok(highest - before < 64 * 2 ** 20, `the node grew by ${Math.round((highest - before) / 2 ** 20)} MiB`);
    wire.socket.resume();
    const answer = await wire.until((m) => m.code === "Z", 1, 120_000);
    assert.equal(answer.filter((m) => m.code === "D").length, bigRows, "every row arrives once the client reads");
    wire.close();
  });
});
