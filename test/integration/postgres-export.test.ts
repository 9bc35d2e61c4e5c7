import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { Client } from "pg";
import { compilePolicy } from "../../decision/compiled-policy";
import type { NatsServerProcess } from "../../service/nats-server";
import { realisticPolicy } from "../../testkit/policy";
import { createPopulation } from "../fixtures/population";
import { createAppDatabase, populationHba, roles, usersRows } from "../fixtures/postgres-population";
import { categoryOf, expectedUsers as expectedUsersOf, filtered, forbiddenValues, verdictsOf } from "../fixtures/postgres-verdicts";
import { call as request } from "../../testkit/http";
import { startNats } from "../../testkit/nats";
import { NodeProcess } from "../../testkit/node-process";
import { freePort } from "../../testkit/ports";
import { jdbcJar, PostgresServer } from "../../testkit/postgres";
import { join } from "node:path";
import { tempDir } from "../../testkit/temp";
import { connect } from "node:net";
import { errorsOf, rowsOf, WireClient } from "../helpers/pg-wire";
import { encodeCancelRequest } from "../../protocols/postgres/cancel-request";
import { encodeSSLRequest, encodeStartup } from "../../protocols/postgres/startup";
import { encodeBind } from "../../protocols/postgres/bind";
import { encodeExecute } from "../../protocols/postgres/execute";
import { encodeParse } from "../../protocols/postgres/parse";
import { encodeQuery } from "../../protocols/postgres/query";
import { encodeFlush, encodeSync } from "../../protocols/postgres/sync";
import { encodeDescribe } from "../../protocols/postgres/describe";

type Row = Record<string, unknown>;

// The whole suite runs twice: sessions on the node's own event loop, and in proxy worker processes (EXPORT_WORKERS).
for (const workers of [0, 2])
  describe(workers === 0 ? "PostgreSQL exports" : `PostgreSQL exports, sessions in ${workers} proxy worker processes`, () => {
    let nats: NatsServerProcess;
    let node: NodeProcess;
    let pg: PostgresServer;
    let exportPort: number;
    /** An export of the same purpose created with allowWrites: for the tests that change the schema through the export. */
    let writablePort: number;
    let compiled: ReturnType<typeof compilePolicy>;
    const call = (method: string, path: string, body?: unknown) => request(node, method, path, body);

    const client = (port = exportPort, role: { user: string; password: string } = roles.scram) =>
      new Client({ host: "127.0.0.1", port, user: role.user, password: role.password, database: "app" });

    const expectedUsers = (purposeId: string, columns: readonly string[]) => expectedUsersOf(call, compiled, purposeId, columns);
    const verdicts = (purposeId: string) => verdictsOf(call, compiled, purposeId);

    const withClient = async <T>(port: number, work: (c: Client) => Promise<T>, role: { user: string; password: string } = roles.scram): Promise<T> => {
      const c = client(port, role);
      await c.connect();
      try {
        return await work(c);
      } finally {
        await c.end().catch(() => undefined);
      }
    };
    const direct = <T>(work: (c: Client) => Promise<T>) => withClient(pg.port, work);
    const exported = <T>(work: (c: Client) => Promise<T>) => withClient(exportPort, work);
    const exportedWritable = <T>(work: (c: Client) => Promise<T>) => withClient(writablePort, work);

    const createExport = async (purposeId: string, port?: number, options: { allowWrites?: boolean } = {}) => {
      const created = await call("PUT", "/export", {
        type: "postgres",
        endpoint: `127.0.0.1:${pg.port}`,
        resolverGroup: "users-table",
        metadata: { type: "platformUse", purposeId },
        ...(port ? { port } : {}),
        ...options,
      });
      assert.equal(created.status, 200, JSON.stringify(created.body));
      return created.body;
    };

    /** Waits until the export's port accepts connections (or refuses them, for `open: false`). */
    const untilPort = async (port: number, open: boolean) => {
      const until = Date.now() + 15_000;
      for (;;) {
        const c = client(port);
        const ok = await c.connect().then(
          () => true,
          () => false,
        );
        await c.end().catch(() => undefined);
        if (ok === open) return;
        if (Date.now() > until) throw new Error(`port ${port} did not ${open ? "open" : "close"}`);
        await new Promise((resolve) => setTimeout(resolve, 200));
      }
    };

    before(async () => {
      pg = await PostgresServer.start({ hba: populationHba });
      createAppDatabase(pg);
      nats = await startNats();
      node = await NodeProcess.start({ nodeId: "pg-export-1", natsUrl: nats.url, env: { EXPORT_WORKERS: String(workers) } });
      assert.equal((await call("PUT", "/config", realisticPolicy())).status, 200);
      await createPopulation(call);
      const revision = Number((await fetch(`${node.url}/config`)).headers.get("x-config-revision"));
      compiled = compilePolicy(realisticPolicy(), revision);
      exportPort = await freePort();
      await createExport("service", exportPort);
      writablePort = await freePort();
      await createExport("service", writablePort, { allowWrites: true });
      await untilPort(exportPort, true);
      await untilPort(writablePort, true);
    });

    after(async () => {
      await node?.stop();
      await nats?.stop();
      await pg?.stop();
    });

    test("node-postgres, simple query: exactly the allowed rows and fields", async () => {
      const c = client();
      await c.connect();
      try {
        const result = await c.query("SELECT id, email, login, name, clicks, secret FROM users ORDER BY email");
        const expected = (await expectedUsers("service", ["id", "email", "login", "name", "clicks", "secret"])).sort((a, b) =>
          String(a.email ?? "").localeCompare(String(b.email ?? "")),
        );
        assert.deepEqual(
          result.rows.map((r: Row) => ({ ...r })),
          expected,
        );
        assert.equal(result.rowCount, expected.length);
      } finally {
        await c.end();
      }
    });

    test("psql: the same rows, and the command tag counts what the client received", async () => {
      const out = spawnSync(
        "psql",
        [
          "-h",
          "127.0.0.1",
          "-p",
          String(exportPort),
          "-U",
          roles.scram.user,
          "-d",
          "app",
          "-X",
          "-A",
          "-t",
          "--echo-errors",
          "-c",
          "SELECT id, email, name FROM users WHERE id IS NOT NULL ORDER BY email",
          "-c",
          "\\pset tuples_only off",
          "-c",
          "SELECT id, name FROM users",
        ],
        { encoding: "utf8", env: { ...process.env, PGPASSWORD: roles.scram.password } },
      );
      assert.equal(out.status, 0, out.stderr);
      const expected = (await expectedUsers("service", ["id", "email", "name"])).sort((a, b) => String(a.email).localeCompare(String(b.email)));
      const lines = out.stdout.trim().split("\n");
      assert.deepEqual(
        lines.slice(0, expected.length),
        expected.map((r) => [r.id ?? "", r.email ?? "", r.name ?? ""].join("|")),
      );
      assert.equal(lines[lines.length - 1], `(${expected.length} rows)`);
    });

    test("node-postgres extended protocol: parameters, named prepared statements, binary results", async () => {
      const allowed = await verdicts("service");
      const text = "SELECT id, email, login, name, clicks, secret FROM users WHERE clicks > $1 ORDER BY clicks";
      for (const query of [
        { text, values: [0] },
        { name: "by-clicks", text, values: [1] },
        { text, values: [0], binary: true },
      ]) {
        const expected = filtered((await direct((c) => c.query(query))).rows, allowed, categoryOf);
        const got = await exported(async (c) => {
          const first = await c.query(query);
          const again = await c.query(query); // a named statement runs prepared the second time
          assert.deepEqual(again.rows, first.rows);
          return first;
        });
        assert.deepEqual(got.rows, expected, JSON.stringify(query));
        assert.equal(got.rowCount, expected.length);
      }
    });

    test("cursors: DECLARE, FETCH in steps, MOVE, WITH HOLD after COMMIT", async () => {
      const allowed = await verdicts("service");
      const all = filtered((await direct((c) => c.query("SELECT id, email, login FROM users ORDER BY email"))).rows, allowed, categoryOf);
      await exported(async (c) => {
        await c.query("BEGIN");
        await c.query("DECLARE c CURSOR WITH HOLD FOR SELECT id, email, login FROM users ORDER BY email");
        await c.query("COMMIT");
        const fetched: Row[] = [];
        for (;;) {
          const step = await c.query("FETCH 3 FROM c");
          assert.equal(step.rowCount, step.rows.length, "FETCH's count is the rows the client received");
          fetched.push(...step.rows);
          if (step.rows.length === 0) {
            const moved = await c.query("MOVE BACKWARD ALL IN c");
            assert.equal(moved.command, "MOVE");
            break;
          }
        }
        assert.deepEqual(fetched, all);
        const again = await c.query("FETCH ALL FROM c");
        assert.deepEqual(again.rows, all);
        await c.query("CLOSE c");
      });
    });

    test("pipelined extended protocol without Describe, Execute with a row limit (counting rows received) and PortalSuspended", async () => {
      const allowed = await verdicts("service");
      const sql = "SELECT id, email, secret FROM users ORDER BY email";
      const expected = filtered((await direct((c) => c.query(sql))).rows, allowed, categoryOf).map((r) => [r.id, r.email, r.secret]);
      const wire = await WireClient.connect(exportPort, roles.trusted.user, "app");
      try {
        wire.send(
          encodeParse({ statement: "", sql, parameterTypes: [] }),
          encodeBind({ portal: "p", statement: "", parameterFormats: [], parameters: [], resultFormats: [] }),
          encodeExecute({ portal: "p", maxRows: 2 }),
          encodeExecute({ portal: "p", maxRows: 2 }),
          encodeExecute({ portal: "p", maxRows: 0 }),
          encodeSync(),
          encodeParse({ statement: "s2", sql: "SELECT id, login FROM users WHERE id = $1", parameterTypes: [] }),
          encodeBind({ portal: "", statement: "s2", parameterFormats: [], parameters: [Buffer.from("accepted")], resultFormats: [1] }),
          encodeExecute({ portal: "", maxRows: 0 }),
          encodeSync(),
        );
        const first = await wire.until((m) => m.code === "Z");
        assert.deepEqual(
          first.map((m) => m.code).filter((c) => c !== "D"),
          ["1", "2", "s", "s", "C", "Z"],
          "no RowDescription reaches a client that did not Describe",
        );
        assert.deepEqual(rowsOf(first), expected);
        // A row limit counts rows the client receives: dropped rows are made up for from the portal.
        const perExecute = first
          .map((m) => m.code)
          .join("")
          .replace(/[^Ds]/g, "")
          .split("s")
          .map((run) => run.length);
        assert.deepEqual(perExecute, [2, 2, expected.length - 4]);
        const second = await wire.until((m) => m.code === "Z");
        const login = allowed.get("accepted")?.has("credentials") ? "login-accepted" : null;
        assert.deepEqual(rowsOf(second), [[null, login]], "binary result format, one parameter");
        // No value comes from a table instance (an expression): no row can ever be sent, so a row-limited Execute ends the result at once.
        wire.send(
          encodeParse({ statement: "", sql: "SELECT upper(email) FROM users", parameterTypes: [] }),
          encodeBind({ portal: "", statement: "", parameterFormats: [], parameters: [], resultFormats: [] }),
          encodeExecute({ portal: "", maxRows: 1 }),
          encodeSync(),
        );
        const third = await wire.until((m) => m.code === "Z");
        assert.deepEqual(
          third.map((m) => m.code),
          ["1", "2", "C", "Z"],
        );
      } finally {
        wire.close();
      }
    });

    test("every password method passes through to the backing store: scram-sha-256, md5, cleartext; a wrong password fails there", async () => {
      for (const role of [roles.scram, roles.md5, roles.cleartext]) {
        const result = await withClient(exportPort, (c) => c.query("SELECT current_user AS who, id FROM users WHERE id = 'accepted'"), role);
        assert.deepEqual(result.rows, [{ who: null, id: null }], role.user);
      }
      await assert.rejects(
        withClient(exportPort, (c) => c.query("SELECT 1"), { user: roles.scram.user, password: "wrong" }),
        (error: Error & { code?: string }) => error.code === "28P01",
      );
    });

    test("adversarial queries: no masked value and no value of a dropped user reaches the client", async () => {
      const allowed = await verdicts("service");
      const forbidden = forbiddenValues(allowed);
      const queries = [
        "SELECT email AS id, login AS email, secret AS name FROM users",
        "SELECT id, upper(secret), email || login AS email, name::text FROM users",
        "SELECT id, u FROM users u",
        "SELECT id, row_to_json(u) FROM users u",
        "SELECT u.* FROM users u",
        "WITH x AS (SELECT * FROM users) SELECT * FROM x",
        "SELECT * FROM (SELECT id, login, secret FROM users) s",
        "SELECT id, email FROM users UNION ALL SELECT id, login FROM users",
        "SELECT id, secret FROM users UNION SELECT id, secret FROM users",
        "SELECT * FROM users_view",
        "SELECT id, (SELECT string_agg(secret, ',') FROM users) FROM users",
        "SELECT id, array_agg(login) FROM users GROUP BY id",
        "SELECT id, email FROM users; SELECT id, secret, login FROM users",
        "UPDATE users SET clicks = clicks RETURNING id, email, login, secret",
        "SELECT id, secret::int FROM users",
        "SELECT (SELECT secret FROM users WHERE id = 'not-accepted')::regclass",
        "SELECT (SELECT secret FROM users WHERE id = 'not-accepted')::regtype",
        "DO $$ BEGIN RAISE NOTICE '%', (SELECT string_agg(secret, ',') FROM users); END $$",
        "DO $$ BEGIN RAISE EXCEPTION '%', (SELECT string_agg(secret, ',') FROM users); END $$",
        "DO $$ BEGIN EXECUTE (SELECT secret FROM users WHERE id = 'not-accepted'); END $$",
        "SELECT set_config('application_name', (SELECT secret FROM users WHERE id = 'not-accepted'), false)",
        "INSERT INTO audit_notes (user_id, note) SELECT id, secret FROM users RETURNING user_id, note",
        "COPY users TO STDOUT",
        "COPY (SELECT * FROM users) TO STDOUT WITH (FORMAT csv)",
        "DO $$ BEGIN RAISE EXCEPTION USING MESSAGE = 'x', COLUMN = (SELECT secret FROM users WHERE id = 'not-accepted'), TABLE = (SELECT login FROM users WHERE id = 'not-accepted'); END $$",
        "SELECT to_tsquery(secret || ' &') FROM users WHERE id = 'not-accepted'",
        "SELECT set_config(replace(secret, '-', '') || '.x', 'v', false) FROM users WHERE id = 'not-accepted'",
        "SELECT pg_database_size(secret) FROM users WHERE id = 'not-accepted'",
        "SELECT has_column_privilege('users', secret, 'SELECT') FROM users WHERE id = 'not-accepted'",
        "DO $$ BEGIN EXECUTE format('PREPARE leak AS SELECT 1 AS %I', (SELECT secret FROM users WHERE id = 'not-accepted')); END $$",
        "EXECUTE leak",
        // Last: from here on the unqualified name users is the temporary table.
        "CREATE TEMP TABLE users AS SELECT id, secret AS email, secret AS login, secret AS name FROM public.users",
        "SELECT id, email, login, name FROM users",
        "SELECT id, email, login, name FROM pg_temp.users",
      ];
      // The check can fail: straight from the backing store, the same search finds the values.
      const straight = await WireClient.connect(pg.port, roles.trusted.user, "app");
      straight.send(encodeQuery("SELECT id, secret, login FROM users"));
      const leaked = Buffer.concat((await straight.until((m) => m.code === "Z")).map((m) => m.body)).toString("latin1");
      straight.close();
      assert.ok(forbidden.filter((value) => leaked.includes(value)).length >= 8);

      const seen: string[] = [];
      const wire = await WireClient.connect(exportPort, roles.trusted.user, "app");
      try {
        wire.send(encodeQuery("LISTEN leak"));
        await wire.until((m) => m.code === "Z");
        for (const sql of queries) {
          wire.send(encodeQuery(sql));
          const answer = await wire.until((m) => m.code === "Z");
          const bytes = Buffer.concat(answer.map((m) => m.body)).toString("latin1");
          for (const value of forbidden) assert.ok(!bytes.includes(value), `${sql}: ${value} reached the client`);
          seen.push(`${sql} -> ${answer.map((m) => m.code).join("")}`);
        }
        wire.send(encodeQuery("SELECT set_config('TimeZone', 'Europe/Paris', false), set_config('application_name', 'x', false)"));
        const reported = await wire.until((m) => m.code === "Z");
        assert.ok(!reported.some((m) => m.code === "S"), "set_config() reports no parameter value after startup");
        wire.send(encodeQuery("DO $$ BEGIN RAISE EXCEPTION 'x' USING ERRCODE = 'XY123'; END $$"));
        assert.deepEqual(
          errorsOf(await wire.until((m) => m.code === "Z")).map((e) => e.code),
          ["25006"],
          "server-side code does not run through a read-only export",
        );
        wire.send(encodeQuery("SELECT pg_notify('leak', secret) FROM public.users"));
        const notified = await wire.until((m) => m.code === "Z");
        assert.ok(!notified.some((m) => m.code === "A"), "notifications do not cross the export");
      } finally {
        wire.close();
      }
      // Through an export that allows writes, server-side code runs, but a SQLSTATE it chooses does not cross.
      const writable = await WireClient.connect(writablePort, roles.trusted.user, "app");
      try {
        writable.send(encodeQuery("DO $$ BEGIN RAISE EXCEPTION 'x' USING ERRCODE = 'XY123'; END $$"));
        assert.deepEqual(
          errorsOf(await writable.until((m) => m.code === "Z")).map((e) => e.code),
          ["P0001"],
          "a SQLSTATE chosen inside server-side code does not cross",
        );
      } finally {
        writable.close();
      }
      const copy = seen.filter((line) => line.startsWith("COPY"));
      for (const line of copy) assert.match(line, /-> EZ$/, "COPY TO STDOUT answers an error and no data");
      const errors = await exported(async (c) =>
        c.query("COPY users TO STDOUT").then(
          () => undefined,
          (error: Error & { code?: string }) => error.code,
        ),
      );
      assert.equal(errors, "42501");
    });

    test("CancelRequest with the proxy's keys cancels the backend's query; unknown keys cancel nothing", async () => {
      const wire = await WireClient.connect(exportPort, roles.trusted.user, "app");
      try {
        assert.ok(wire.keys, "the client got cancel keys");
        wire.send(encodeQuery("SELECT pg_sleep(30)"));
        await new Promise((resolve) => setTimeout(resolve, 300));
        const bogus = connect({ host: "127.0.0.1", port: exportPort }, () => bogus.end(encodeCancelRequest(wire.keys!.processId, wire.keys!.secretKey ^ 1)));
        await new Promise((resolve) => bogus.once("close", resolve));
        await new Promise((resolve) => setTimeout(resolve, 300));
        assert.equal(wire.messages.length, 0, "a wrong secret cancels nothing");
        const started = Date.now();
        const cancel = connect({ host: "127.0.0.1", port: exportPort }, () => cancel.end(encodeCancelRequest(wire.keys!.processId, wire.keys!.secretKey)));
        const answer = await wire.until((m) => m.code === "Z");
        assert.deepEqual(
          errorsOf(answer).map((e) => e.code),
          ["57014"],
        );
        assert.ok(Date.now() - started < 10_000);
      } finally {
        wire.close();
      }
    });

    test("refused with a SQLSTATE and the connection closed: FunctionCall, replication, protocol 4.0; SSLRequest and GSSENCRequest answered 'N'", async () => {
      const wire = await WireClient.connect(exportPort, roles.trusted.user, "app");
      wire.send(Buffer.from([0x46, 0, 0, 0, 12, 0, 0, 4, 0, 0, 0, 0, 0]));
      const refused = await wire.until(() => false, 1, 5000).catch(() => wire.messages);
      assert.deepEqual(
        errorsOf(refused).map((e) => e.code),
        ["0A000"],
      );
      assert.ok(wire.closed);

      const startupAnswer = async (packets: Buffer[]): Promise<Buffer> => {
        const socket = connect({ host: "127.0.0.1", port: exportPort });
        const chunks: Buffer[] = [];
        socket.on("data", (chunk: Buffer) => chunks.push(chunk));
        socket.on("error", () => undefined);
        await new Promise((resolve) => socket.once("connect", resolve));
        for (const packet of packets) socket.write(packet);
        await Promise.race([new Promise((resolve) => socket.once("close", resolve)), new Promise((resolve) => setTimeout(resolve, 1500))]);
        socket.destroy();
        return Buffer.concat(chunks);
      };
      const replication = await startupAnswer([
        encodeStartup(
          new Map([
            ["user", roles.trusted.user],
            ["database", "app"],
            ["replication", "database"],
          ]),
        ),
      ]);
      assert.equal(replication[0], 0x45);
      assert.ok(replication.includes(Buffer.from("0A000")));
      const version4 = await startupAnswer([encodeStartup(new Map([["user", roles.trusted.user]]), 4, 0)]);
      assert.ok(version4.includes(Buffer.from("0A000")));
      const ssl = await startupAnswer([encodeSSLRequest()]);
      assert.equal(ssl.toString("latin1"), "N");
      const gss = await startupAnswer([Buffer.from("0000000804d21630", "hex")]);
      assert.equal(gss.toString("latin1"), "N");
      const sslThenStartup = await startupAnswer([
        encodeSSLRequest(),
        encodeStartup(
          new Map([
            ["user", roles.trusted.user],
            ["database", "app"],
          ]),
        ),
      ]);
      assert.equal(sslThenStartup[0], 0x4e);
      assert.ok(sslThenStartup.includes(Buffer.from([0x5a, 0, 0, 0, 5])), "after 'N' the client goes on in the clear and gets ReadyForQuery");
      const healthy = await exported((c) => c.query("SELECT id FROM users WHERE id = 'accepted'"));
      assert.equal(healthy.rowCount, 1);
    });

    test("the catalog is looked up again when tables and the mapping change, on the same connection", async () => {
      const allowed = await verdicts("service");
      const group = realisticPolicy().mappingGroups.find((g) => g.name === "users-table")!;
      await exportedWritable(async (c) => {
        await c.query("CREATE TABLE later_users (id text, email text, note text)");
        await c.query("INSERT INTO later_users SELECT id, email, secret FROM users");
        assert.equal((await c.query("SELECT id, email FROM later_users")).rowCount, 0, "not in the mapping: no user, no row");
        const extended = {
          ...group,
          fieldMappings: [
            ...group.fieldMappings,
            { recordField: "later_users.id", resourceContext: true },
            { recordField: "public.later_users.email", categoryId: "contact" },
          ],
        };
        assert.equal((await call("PUT", "/mapping/groups/", extended)).status, 200);
        try {
          const expected = filtered((await direct((d) => d.query("SELECT id, email, note FROM later_users ORDER BY email"))).rows, allowed, {
            email: "contact",
          });
          const deadline = Date.now() + 10_000;
          let rows: Row[] = [];
          while (Date.now() < deadline) {
            rows = (await c.query("SELECT id, email, note FROM later_users ORDER BY email")).rows;
            if (rows.length === expected.length) break;
            await new Promise((resolve) => setTimeout(resolve, 200));
          }
          assert.deepEqual(rows, expected);
        } finally {
          assert.equal((await call("PUT", "/mapping/groups/", group)).status, 200);
          await c.query("DROP TABLE later_users");
        }
      });
    });

    test("messages pipelined behind the startup wait until the proxy knows the catalog: a forged catalog answer is impossible", async () => {
      const allowed = await verdicts("service");
      const forbidden = forbiddenValues(allowed);
      const socket = connect({ host: "127.0.0.1", port: exportPort });
      const received: Buffer[] = [];
      socket.on("data", (chunk: Buffer) => received.push(chunk));
      await new Promise((resolve) => socket.once("connect", resolve));
      const forged =
        "SELECT c.oid::int8, a.attnum::int4, 'public', 'users', CASE a.attname WHEN 'secret' THEN 'email' ELSE a.attname END FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid WHERE c.relname = 'users' AND a.attnum > 0; SELECT 4294967295::int8";
      socket.write(
        Buffer.concat([
          encodeStartup(
            new Map([
              ["user", roles.trusted.user],
              ["database", "app"],
            ]),
          ),
          encodeQuery(forged),
          encodeQuery("SELECT id, secret, email FROM users"),
        ]),
      );
      const deadline = Date.now() + 10_000;
      while (Buffer.concat(received).filter((byte) => byte === 0x5a).length < 3 && Date.now() < deadline)
        await new Promise((resolve) => setTimeout(resolve, 100));
      socket.destroy();
      const bytes = Buffer.concat(received).toString("latin1");
      for (const value of forbidden) assert.ok(!bytes.includes(value), `${value} reached the client`);
      assert.ok(bytes.includes("accepted@example.com"), "the pipelined query was answered, with the allowed values");
    });

    /** A raw connection to the export as the trusted role, with one more startup parameter. */
    const connectWithStartup = (parameter: [string, string]) =>
      WireClient.connectWith(exportPort, new Map([["user", roles.trusted.user], ["database", "app"], parameter]));

    test("client encodings other than UTF-8 are refused (user ids and names are read as UTF-8)", async () => {
      await assert.rejects(connectWithStartup(["client_encoding", "LATIN1"]), /not supported through this export/);
      const wire = await WireClient.connect(exportPort, roles.trusted.user, "app");
      wire.send(encodeQuery("SET client_encoding = 'LATIN1'"));
      const answer = await wire.until(() => false, 1, 3000).catch(() => wire.messages);
      assert.deepEqual(
        errorsOf(answer).map((e) => e.code),
        ["0A000"],
      );
      assert.ok(wire.closed);
    });

    test("standard_conforming_strings off: a backslash hides a query of users from the export's parser; directly it leaks, through the export SET, set_config and a startup option are refused", async () => {
      const forbidden = forbiddenValues(await verdicts("service"));
      // With the setting off the server reads '\' FROM ... --' as one string: the query goes on to users. The export (and libpg-query) read a catalog query and a comment.
      const hidden = "SELECT '\\' FROM pg_catalog.pg_class --', email, login, secret FROM users";
      const leaked = await direct(async (c) => {
        await c.query("SET standard_conforming_strings = off");
        return c.query(hidden);
      });
      const leakedText = JSON.stringify(leaked.rows);
      assert.ok(
        forbidden.some((value) => leakedText.includes(value)),
        "directly, the hidden query returns values of dropped users and unmapped columns",
      );
      for (const setting of [
        "SET standard_conforming_strings = off",
        "SET LOCAL standard_conforming_strings TO off",
        "SET SESSION standard_conforming_strings = on",
        "SELECT set_config('standard_conforming_strings', 'off', false)",
        "SELECT set_config('Standard_Conforming_Strings ', 'off', true)",
        "SELECT set_config(current_setting('application_name'), 'off', false)",
      ]) {
        const refused = await exported((c) => c.query(setting)).then(
          () => undefined,
          (error: Error & { code?: string }) => error,
        );
        assert.equal(refused?.code, "42501", setting);
      }
      // Allowed writes do not allow it either.
      await assert.rejects(
        exportedWritable((c) => c.query("SET standard_conforming_strings = off")),
        (error: Error & { code?: string }) => error.code === "42501",
      );
      // Set at startup (an options parameter): the backend reports it off, and the session ends before anything else crosses.
      await assert.rejects(
        connectWithStartup(["options", "-c standard_conforming_strings=off"]),
        /standard_conforming_strings off is not supported through this export/,
      );
      // The hidden query itself, as the export reads it, is harmless: a catalog query and a comment.
      const through = await exported((c) => c.query(hidden));
      for (const value of forbidden) assert.ok(!JSON.stringify(through.rows).includes(value), `${value} reached the client`);
    });

    test("JDBC (pgjdbc): a statement, a server-prepared statement in binary, a cursor read two rows at a time", async () => {
      const dir = tempDir("jdbc");
      const source = join(__dirname, "..", "..", "..", "test", "fixtures", "jdbc", "ExportClient.java");
      const compiled = spawnSync("javac", ["-cp", jdbcJar, "-d", dir, source], { encoding: "utf8" });
      assert.equal(compiled.status, 0, compiled.stderr);
      const run = spawnSync(
        "java",
        ["-cp", `${dir}:${jdbcJar}`, "ExportClient", `jdbc:postgresql://127.0.0.1:${exportPort}/app`, roles.scram.user, roles.scram.password],
        { encoding: "utf8", timeout: 60_000 },
      );
      assert.equal(run.status, 0, run.stderr);
      const expected = (await expectedUsers("service", ["id", "email", "login"])).sort((a, b) => String(a.email).localeCompare(String(b.email)));
      const lines = (label: string) => [...expected.map((r) => `${label}|${r.id ?? "null"}|${r.email ?? "null"}|${r.login ?? "null"}`), `${label}|end`];
      assert.deepEqual(run.stdout.trim().split("\n"), [...lines("statement"), ...lines("prepared1"), ...lines("prepared6"), ...lines("fetch")]);
    });

    test("psql, a hostile client: the self-join, the cross-table join, the DO block and the counting INSERT of issue 18 leak directly and not through the export", async () => {
      const allowed = await verdicts("service");
      const forbidden = forbiddenValues(allowed);
      const attacks = [
        "SELECT a.id, b.email FROM users a, users b WHERE a.id = 'accepted'",
        "SELECT a.id, b.email, b.login, b.name FROM users a JOIN users b ON true WHERE a.id = 'accepted'",
        "SELECT n.user_id, u.email FROM audit_notes n RIGHT JOIN users u ON u.id <> n.user_id",
        "DO $$ BEGIN EXECUTE format('CREATE TEMP TABLE t(x int CONSTRAINT %I CHECK (x > 0))', (SELECT string_agg(email, '/') FROM users)); END $$; INSERT INTO t VALUES (0)",
        "CREATE TEMP TABLE tmp (n int); INSERT INTO tmp SELECT generate_series(1, ascii(substr((SELECT email FROM users WHERE id = 'not-accepted'), 1, 1)))",
      ];
      const psql = (port: number) =>
        spawnSync(
          "psql",
          ["-h", "127.0.0.1", "-p", String(port), "-U", roles.scram.user, "-d", "app", "-X", "-A", "--echo-errors", ...attacks.flatMap((sql) => ["-c", sql])],
          { encoding: "utf8", env: { ...process.env, PGPASSWORD: roles.scram.password } },
        );
      const straight = psql(pg.port);
      const leaked = `${straight.stdout}${straight.stderr}`;
      assert.ok(forbidden.filter((value) => leaked.includes(value)).length >= 3, "the check can fail: directly, psql shows other users' values");
      assert.ok(leaked.includes("INSERT 0 110"), "the check can fail: directly, the command tag counts a value ('n' is 110)");
      const through = psql(exportPort);
      const shown = `${through.stdout}${through.stderr}`;
      for (const value of forbidden) assert.ok(!shown.includes(value), `${value} reached psql`);
      assert.ok(!shown.includes("INSERT 0 110"));
      assert.ok(shown.includes("accepted@example.com"), "each instance's own allowed values still show");
      assert.equal((shown.match(/is not allowed: this export is read-only/g) ?? []).length, 2, "the DO block and the CREATE are refused");
    });

    test("JDBC, a hostile client: a self-join shows each email under its own user's decision, in text and in binary; a write is refused", async () => {
      const allowed = await verdicts("service");
      const forbidden = forbiddenValues(allowed);
      const dir = tempDir("jdbc-self-join");
      const source = join(__dirname, "..", "..", "..", "test", "fixtures", "jdbc", "SelfJoinClient.java");
      const compiled = spawnSync("javac", ["-cp", jdbcJar, "-d", dir, source], { encoding: "utf8" });
      assert.equal(compiled.status, 0, compiled.stderr);
      const run = (port: number) =>
        spawnSync(
          "java",
          ["-cp", `${dir}:${jdbcJar}`, "SelfJoinClient", `jdbc:postgresql://127.0.0.1:${port}/app`, roles.scram.user, roles.scram.password, "accepted"],
          { encoding: "utf8", timeout: 60_000 },
        );
      const straight = run(pg.port);
      assert.equal(straight.status, 0, straight.stderr);
      assert.ok(
        forbidden.some((value) => straight.stdout.includes(value)),
        "the check can fail: directly, the self-join pairs the allowed id with every email",
      );
      const through = run(exportPort);
      assert.equal(through.status, 0, through.stderr);
      for (const value of forbidden) assert.ok(!through.stdout.includes(value), `${value} reached the JDBC client`);
      // a.id is the resource context without a category (NULL); b.email is b's, kept when b's decision allows 'contact'.
      const emails = usersRows()
        .filter((r) => r.id !== null && r.id !== "" && allowed.get(r.id) !== undefined)
        .sort((x, y) => (x.email < y.email ? -1 : 1))
        .map((r) => `null|${allowed.get(r.id!)!.has("contact") ? r.email : "null"}`);
      assert.ok(
        emails.some((line) => line !== "null|null"),
        "the check can fail: some email crosses",
      );
      assert.deepEqual(through.stdout.trim().split("\n"), [
        ...emails.map((e) => `statement|${e}`),
        "statement|end",
        ...emails.map((e) => `prepared6|${e}`),
        "prepared6|end",
        "write|25006",
      ]);
    });

    test("an Execute's rows are decided with its portal's columns of now: from the client's Describe just before it, or the proxy's own (re-Parse, DEALLOCATE, DISCARD ALL, a schema change)", async () => {
      const allowed = await verdicts("service");
      const forbidden = forbiddenValues(allowed);
      const parse = (statement: string, sql: string) => encodeParse({ statement, sql, parameterTypes: [] });
      const bind = (portal: string, statement: string) => encodeBind({ portal, statement, parameterFormats: [], parameters: [], resultFormats: [] });
      const describePortal = (name: string) => encodeDescribe({ kind: 0x50, name });
      const execute = (portal: string) => encodeExecute({ portal, maxRows: 0 });
      const closeStatement = (name: string) => {
        const message = Buffer.concat([Buffer.from([0x43, 0, 0, 0, 0, 0x53]), Buffer.from(`${name}\0`)]);
        message.writeInt32BE(message.length - 1, 1);
        return message;
      };
      const expected = async (sql: string) => filtered((await direct((c) => c.query(sql))).rows, allowed, categoryOf).map((r) => Object.values(r));
      const emailSql = "SELECT id, email FROM users ORDER BY id";
      const secretSql = "SELECT id, secret FROM users ORDER BY id";
      const loginSql = "SELECT id, login FROM users ORDER BY id";
      const wire = await WireClient.connect(exportPort, roles.trusted.user, "app");
      /** Sends one batch and checks its answer: no forbidden value, the rows expected, `descriptions` RowDescriptions. */
      const check = async (what: string, messages: Buffer[], rows: unknown[][], descriptions: number) => {
        wire.send(...messages, encodeSync());
        const answer = await wire.until((m) => m.code === "Z", 1, 5000);
        const bytes = Buffer.concat(answer.map((m) => m.body)).toString("latin1");
        for (const value of forbidden) assert.ok(!bytes.includes(value), `${what}: ${value} reached the client`);
        assert.deepEqual(rowsOf(answer), rows, what);
        assert.equal(answer.filter((m) => m.code === "T").length, descriptions, `${what}: RowDescriptions the client asked for`);
      };
      try {
        const emailRows = await expected(emailSql);
        const secretRows = await expected(secretSql);
        assert.ok(emailRows.some((r) => r[1] !== null) && secretRows.length > 0, "the check can fail: some emails cross");
        await check(
          "Describe of the portal just before its Execute (libpq)",
          [parse("s", emailSql), bind("", "s"), describePortal(""), execute("")],
          emailRows,
          1,
        );
        await check(
          "Describe of another portal before the Execute",
          [parse("s2", secretSql), bind("a", "s"), bind("b", "s2"), describePortal("a"), execute("b")],
          secretRows,
          1,
        );
        await check("the described portal bound again before the Execute", [bind("", "s"), describePortal(""), bind("", "s2"), execute("")], secretRows, 1);
        await check(
          "a named statement parsed again with another query, no Describe",
          [closeStatement("s"), parse("s", secretSql), bind("", "s"), execute("")],
          secretRows,
          0,
        );
        await check(
          "the unnamed statement parsed again, with Describe",
          [parse("", emailSql), bind("", ""), describePortal(""), execute(""), parse("", secretSql), bind("", ""), describePortal(""), execute("")],
          [...emailRows, ...secretRows],
          2,
        );
        wire.send(encodeQuery(`DEALLOCATE s; PREPARE s AS ${loginSql}`));
        await wire.until((m) => m.code === "Z", 1, 5000);
        await check("after DEALLOCATE and PREPARE of the same name", [bind("", "s"), describePortal(""), execute("")], await expected(loginSql), 1);
        wire.send(encodeQuery("DISCARD ALL"));
        await wire.until((m) => m.code === "Z", 1, 5000);
        await check("after DISCARD ALL", [parse("s", secretSql), bind("", "s"), execute("")], secretRows, 0);

        // Another connection puts a table of the same name first in the search path: the backend plans
        // the prepared statement again against it, with the same result type. Its rows are not the
        // mapped table's: they must not be decided with the columns the statement had before.
        await check("before the schema change", [parse("p", emailSql), bind("", "p"), describePortal(""), execute("")], emailRows, 1);
        pg.sql(
          `CREATE SCHEMA shadow; CREATE TABLE shadow.users AS SELECT id, secret AS email FROM public.users; GRANT USAGE ON SCHEMA shadow TO ${roles.trusted.user}; GRANT SELECT ON shadow.users TO ${roles.trusted.user}`,
          "app",
        );
        wire.send(encodeQuery("SET search_path = shadow, public"));
        await wire.until((m) => m.code === "Z", 1, 5000);
        const straight = await WireClient.connect(pg.port, roles.trusted.user, "app");
        try {
          straight.send(parse("p", emailSql), encodeQuery("SET search_path = shadow, public"), bind("", "p"), execute(""), encodeSync());
          const replanned = Buffer.concat((await straight.until((m) => m.code === "Z", 2, 5000)).map((m) => m.body)).toString("latin1");
          assert.ok(
            forbidden.some((value) => replanned.includes(value)),
            "the check can fail: straight from the backing store, the statement now reads secrets",
          );
        } finally {
          straight.close();
        }
        await check("after the schema change, with Describe", [bind("", "p"), describePortal(""), execute("")], [], 1);
        await check("after the schema change, no Describe", [bind("", "p"), execute("")], [], 0);
      } finally {
        wire.close();
        pg.sql("DROP SCHEMA IF EXISTS shadow CASCADE", "app");
      }
    });

    test("the extended protocol's bookkeeping stays in step through errors, COPY and row limits: no hang, no row decided with another statement's columns", async () => {
      const allowed = await verdicts("service");
      const forbidden = forbiddenValues(allowed);
      const wire = await WireClient.connect(writablePort, roles.trusted.user, "app");
      const z = () => wire.until((m) => m.code === "Z", 1, 5000);
      const parse = (statement: string, sql: string) => encodeParse({ statement, sql, parameterTypes: [] });
      const bind = (statement: string) => encodeBind({ portal: "", statement, parameterFormats: [], parameters: [], resultFormats: [] });
      const copyData = Buffer.concat([Buffer.from([0x64]), Buffer.alloc(4), Buffer.from("x\tnote\n")]);
      copyData.writeInt32BE(copyData.length - 1, 1);
      const copyDone = Buffer.from([0x63, 0, 0, 0, 4]);
      try {
        // An error in Parse while a Query waits behind it: the backend skips the Query.
        wire.send(parse("", "SELEC bad"), encodeQuery("SELECT id FROM users WHERE false"), encodeSync());
        assert.deepEqual(
          (await z()).map((m) => m.code),
          ["E", "Z"],
        );
        wire.send(encodeQuery("SELECT 1/0"));
        assert.deepEqual(
          (await z()).map((m) => m.code),
          ["E", "Z"],
        );
        // A statement Describe's columns must never decide the rows of another statement.
        wire.send(
          parse("wide", "SELECT id, email FROM users"),
          encodeDescribe({ kind: 0x53, name: "wide" }),
          parse("s2", "SELECT id, secret FROM users"),
          bind("s2"),
          encodeExecute({ portal: "", maxRows: 0 }),
          encodeSync(),
        );
        const answer = await z();
        const bytes = Buffer.concat(answer.map((m) => m.body)).toString("latin1");
        for (const value of forbidden) assert.ok(!bytes.includes(value), `${value} reached the client`);
        assert.ok(rowsOf(answer).length > 0 && rowsOf(answer).every((row) => row[1] === null));
        // A row-limited Execute after an error in the same batch: the backend skips it, the client still gets its ReadyForQuery.
        wire.send(parse("", "SELEC bad"), encodeFlush());
        await wire.until((m) => m.code === "E", 1, 5000);
        wire.send(bind("s2"), encodeExecute({ portal: "", maxRows: 1 }), encodeSync());
        assert.deepEqual(
          (await z()).map((m) => m.code),
          ["Z"],
        );
        // COPY FROM STDIN run by a row-limited Execute: the copy data flows, then CommandComplete.
        wire.send(parse("", "COPY audit_notes (user_id, note) FROM STDIN"), bind(""), encodeExecute({ portal: "", maxRows: 5 }), encodeSync());
        await wire.until((m) => m.code === "G", 1, 5000);
        wire.send(copyData, copyDone, encodeSync());
        assert.deepEqual(
          (await z()).map((m) => m.code),
          ["C", "Z"],
        );
        // COPY data pipelined behind its Query.
        wire.send(encodeQuery("COPY audit_notes (user_id, note) FROM STDIN"), copyData, copyDone);
        assert.deepEqual(
          (await z()).map((m) => m.code),
          ["G", "C", "Z"],
        );
        // A count of rows the client never sees does not cross.
        wire.send(encodeQuery("CREATE TEMP TABLE counted AS SELECT generate_series(1, 7) AS n"));
        const created = (await z()).find((m) => m.code === "C")!;
        assert.equal(created.body.toString("latin1", 0, created.body.length - 1), "SELECT 0");
        wire.send(encodeQuery("SELECT id FROM users WHERE id = 'accepted'"));
        assert.equal(rowsOf(await z()).length, 1, "the connection still works");
      } finally {
        wire.close();
      }
    });
  });
