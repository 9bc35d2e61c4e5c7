import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { Client } from "pg";
import { realisticPolicy } from "../../testkit/policy";
import { roles } from "../fixtures/postgres-population";
import { call as request } from "../../testkit/http";
import { NodeProcess } from "../../testkit/node-process";
import { freePort } from "../../testkit/ports";
import { PostgresServer } from "../../testkit/postgres";
import { eventually } from "../helpers/client";
import { startUsersExport, type UsersExportStack } from "../helpers/users-export";
import { errorsOf, WireClient } from "../helpers/pg-wire";
import { connect } from "node:net";
import { encodeCancelRequest } from "../../protocols/postgres/cancel-request";
import { encodeQuery } from "../../protocols/postgres/query";
import { currentRss } from "../../testkit/memory";

// What only proxy worker processes (EXPORT_WORKERS) have to get right: the rest of the export's
// behaviour runs through workers in postgres-export.test.ts.
const workers = 2;
const bigRows = 100_000;

/** The realistic policy, with a mapping group for the slow client's 200 MB table. */
function policy(): ReturnType<typeof realisticPolicy> {
  const config = realisticPolicy();
  config.mappingGroups.push({
    name: "big",
    fieldMappings: [
      { recordField: "public.big.uid", resourceContext: true },
      { recordField: "public.big.payload", categoryId: "contact" },
    ],
  });
  return config;
}

/** Pids of a process's running children whose command line names the proxy worker. */
function workerPids(parent: number): number[] {
  const found = spawnSync("pgrep", ["-P", String(parent), "-f", "proxy-worker.js"], { encoding: "utf8" });
  return found.stdout.split("\n").filter(Boolean).map(Number);
}

const until = (what: string, check: () => Promise<boolean>, timeoutMs?: number) => eventually(what, check, timeoutMs);

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** The pid owning each established connection accepted on `port` (ss: users:(("node",pid=N,fd=M))). */
function acceptingPids(port: number): number[] {
  const listed = spawnSync("ss", ["-tnpH", "state", "established", `( sport = :${port} )`], { encoding: "utf8" });
  return [...listed.stdout.matchAll(/pid=(\d+)/g)].map((match) => Number(match[1]));
}

describe(`PostgreSQL exports served by ${workers} proxy worker processes`, () => {
  let node: NodeProcess;
  let pg: PostgresServer;
  let exportPort: number;
  let exportId: string;
  const call = (method: string, path: string, body?: unknown) => request(node, method, path, body);
  const connected = async (): Promise<Client> => {
    const c = new Client({ host: "127.0.0.1", port: exportPort, user: roles.scram.user, password: roles.scram.password, database: "app" });
    c.on("error", () => undefined);
    await c.connect();
    return c;
  };
  /** Whether the export lets a user's row through (the id column itself has no category: its value is NULL). */
  const seen = async (c: Client, userId: string): Promise<boolean> => (await c.query("SELECT id FROM users WHERE id = $1", [userId])).rowCount === 1;
  const rowsReceived = async (c: Client): Promise<number> => (await c.query("SELECT id, email FROM users")).rowCount ?? -1;

  let stack: UsersExportStack | undefined;
  before(async () => {
    stack = await startUsersExport({
      nodeId: "pg-workers-1",
      env: { EXPORT_WORKERS: String(workers) },
      policy: policy(),
      prepare: (server) => {
        server.sql(`CREATE TABLE big AS SELECT 'accepted'::text AS uid, repeat('x', 2000) AS payload FROM generate_series(1, ${bigRows})`, "app");
        server.sql(`GRANT SELECT ON big TO ${roles.trusted.user}`, "app");
      },
      connect: (port) => {
        exportPort = port;
        return connected();
      },
    });
    ({ pg, node, exportPort, exportId } = stack);
  });

  after(async () => {
    await stack?.stop();
  });

  test("connections are spread over the workers, not served by the node; GET /export counts them and their rows", async () => {
    const pids = workerPids(node.child.pid!);
    assert.equal(pids.length, workers, "the node runs its proxy workers");
    const clients = await Promise.all([0, 1, 2, 3].map(() => connected()));
    try {
      const owners = acceptingPids(exportPort);
      assert.equal(owners.length, 4, `ss shows the 4 accepted connections: ${owners}`);
      assert.ok(
        owners.every((pid) => pids.includes(pid)),
        `every connection is held by a worker (${owners}), none by the node (${node.child.pid})`,
      );
      assert.equal(new Set(owners).size, workers, "each worker holds some");
      const received = await Promise.all(clients.map((c) => rowsReceived(c)));
      assert.ok(received[0]! > 0 && received.every((n) => n === received[0]), `every worker lets the same rows through: ${received}`);
      await until("GET /export reports the workers' connections and rows", async () => {
        const serving = (await call("GET", `/export?id=${exportId}`)).body.serving;
        return serving.connections.open === 4 && serving.rows.in === 4 * 9 && serving.rows.kept === 4 * received[0]!;
      });
    } finally {
      await Promise.all(clients.map((c) => c.end().catch(() => undefined)));
    }
    await until("ended connections leave the open count", async () => (await call("GET", `/export?id=${exportId}`)).body.serving.connections.open === 0);
  });

  test("a client that does not read gets backpressure from its worker: neither the worker nor the node grows while 200 MB of allowed rows wait", async () => {
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
    await until("the export opens", async () => (wire = await WireClient.connect(port, roles.trusted.user, "app").catch(() => undefined)) !== undefined);
    const client = wire!;
    try {
      const [worker] = acceptingPids(port);
      assert.ok(worker !== undefined && workerPids(node.child.pid!).includes(worker), `a worker holds the connection (${worker})`);
      const watched = { worker, node: node.child.pid! };
      const before = { worker: currentRss(watched.worker), node: currentRss(watched.node) };
      const highest = { ...before };
      client.socket.pause();
      client.send(encodeQuery("SELECT uid, payload FROM big"));
      for (let i = 0; i < 25; i++) {
        await new Promise((resolve) => setTimeout(resolve, 200));
        highest.worker = Math.max(highest.worker, currentRss(watched.worker));
        highest.node = Math.max(highest.node, currentRss(watched.node));
      }
      const mib = (bytes: number) => Math.round(bytes / 2 ** 20);
      console.log(
        `# worker RSS ${mib(before.worker)} MiB before, at most ${mib(highest.worker)} MiB; node ${mib(before.node)} -> ${mib(highest.node)} MiB, while the client read nothing (${bigRows * 2} KB of rows pending)`,
      );
      assert.ok(highest.worker - before.worker < 64 * 2 ** 20, `the worker grew by ${mib(highest.worker - before.worker)} MiB`);
      assert.ok(highest.node - before.node < 64 * 2 ** 20, `the node grew by ${mib(highest.node - before.node)} MiB`);
      client.socket.resume();
      const answer = await client.until((m) => m.code === "Z", 1, 120_000);
      assert.equal(answer.filter((m) => m.code === "D").length, bigRows, "every row arrives once the client reads");
    } finally {
      client.close();
    }
  });

  test("a user's change reaches the workers: an open connection's next query decides the user again", async () => {
    const c = await connected();
    try {
      assert.ok(!(await seen(c, "not-accepted")), "no terms accepted: the user's rows are dropped (and that verdict is remembered)");
      assert.equal((await call("PUT", "/user/terms?userId=not-accepted")).status, 200);
      await until(
        "the newly accepting user's rows appear on the open connection, not a verdict's minute later",
        async () => await seen(c, "not-accepted"),
        5000,
      );
    } finally {
      await c.end();
    }
  });

  test("a CancelRequest reaching either worker cancels the query on the worker that holds it", async () => {
    // The node hands connections to the workers in turn: of two CancelRequests in a row, one reaches another worker than the query's.
    for (let attempt = 0; attempt < workers; attempt++) {
      const wire = await WireClient.connect(exportPort, roles.trusted.user, "app");
      try {
        wire.send(encodeQuery("SELECT pg_sleep(30)"));
        await new Promise((resolve) => setTimeout(resolve, 300));
        for (let hop = 0; hop < attempt; hop++) await connected().then((c) => c.end());
        const started = Date.now();
        const cancel = connect({ host: "127.0.0.1", port: exportPort }, () => cancel.end(encodeCancelRequest(wire.keys!.processId, wire.keys!.secretKey)));
        const answer = await wire.until((m) => m.code === "Z");
        assert.deepEqual(
          errorsOf(answer).map((e) => e.code),
          ["57014"],
          `attempt ${attempt}`,
        );
        assert.ok(Date.now() - started < 10_000);
      } finally {
        wire.close();
      }
    }
  });

  test("a worker killed with SIGKILL takes only its connections; the node starts it again and serves new ones", async () => {
    const clients = await Promise.all([0, 1].map(() => connected()));
    const owners = acceptingPids(exportPort);
    assert.equal(new Set(owners).size, 2, `the two connections are on different workers: ${owners}`);
    const victim = owners[0]!;
    const ended = clients.map((c) => {
      let gone = false;
      c.once("end", () => (gone = true));
      return () => gone;
    });
    process.kill(victim, "SIGKILL");
    await until("a new worker replaces the killed one", async () => {
      const now = workerPids(node.child.pid!);
      return now.length === workers && !now.includes(victim);
    });
    await until("the killed worker's connection ended", async () => ended.some((gone) => gone()));
    assert.equal(ended.filter((gone) => gone()).length, 1, "the other worker's connection lives on");
    const survivor = clients[ended.findIndex((gone) => !gone())]!;
    assert.ok(await seen(survivor, "guardian"));
    await until(
      "GET /export counts only the surviving connection",
      async () => (await call("GET", `/export?id=${exportId}`)).body.serving.connections.open === 1,
    );
    const fresh = await Promise.all([0, 1].map(() => connected()));
    for (const c of fresh) assert.ok(await seen(c, "guardian"));
    await Promise.all([...fresh, ...clients].map((c) => c.end().catch(() => undefined)));
  });

  test("a new configuration reaches the workers: verdicts of the old revision are not used on an open connection", async () => {
    // The id column must be in the result: it names the row's user (without it the row is dropped).
    const email = async (c: Client) => (await c.query("SELECT id, email FROM users WHERE id = 'guardian'")).rows.map((r: { email: string | null }) => r.email);
    const clients = await Promise.all([0, 1].map(() => connected()));
    try {
      for (const c of clients) assert.deepEqual(await email(c), ["guardian@example.com"]);
      const narrowed = policy();
      const service = narrowed.platformUse.purposes.find((p) => p.stableId === "service")!;
      service.categoryIds = service.categoryIds.filter((id) => id !== "contact");
      assert.equal((await call("PUT", "/config", narrowed)).status, 200);
      // Dropped (if the change asks for new acceptance) or emptied: either way the address is gone on both workers.
      for (const c of clients) await until("the email is no longer released", async () => !(await email(c)).includes("guardian@example.com"), 5000);
    } finally {
      await Promise.all(clients.map((c) => c.end().catch(() => undefined)));
    }
  });

  test("the node's death ends its workers: none is left behind", async () => {
    const pids = workerPids(node.child.pid!);
    assert.equal(pids.length, workers);
    await node.kill();
    await until("the workers exit with their node", async () => pids.every((pid) => !alive(pid)), 5000);
  });
});
