// Issue 18: a PostgreSQL export must decide every value under the user whose row it came from,
// refuse writes unless the export allows them, and close the side channels (errors, notices,
// command tags, ParameterStatus, RowDescription). Each attack runs twice with the same SQL:
// straight against PostgreSQL, where it must expose a forbidden value (so the attack is real and
// the check can fail), and through an export, where no forbidden value may reach the client while
// the allowed user's allowed values still appear where the query shows them (so the check is not
// vacuous: an export that answers nothing would fail it). Where both apply they are separate tests,
// so a failure says whether the export leaked or hid what it may show. Through an export a
// resource-context column without a category (users.id, orders.user_id) is always NULL, so the
// "still shows" checks look at the value columns. Refusals (read-only by default) are checked by
// SQLSTATE (25006 or 42501), by a message naming what is refused, and by a read on the same
// connection afterwards. Exports with `allowWrites` or `strict` are created when a test first needs
// them. Leaks are searched in every byte the client receives, as written, in any case, or hex.
//
// The world is the one of postgres-export.test.ts (test/fixtures/postgres-population.ts, the
// realistic policy, the mixed population), purpose "service", plus a second mapped table
// orders(id, user_id, item) whose resource context is user_id. Two users matter most:
//   - "accepted" (population fixture: adult, accepted the terms): allowed, every users category
//     (contact, credentials, identity, usage) may cross;
//   - "not-accepted" (adult, never accepted the terms): every row of theirs must be dropped; their
//     email not-accepted@example.com is the value most attacks try to read.
// The others (third-party: contract only; guardian; child; overridden; unknown-user: no record;
// the empty and NULL ids) are decided by the engine and fill the forbidden list.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { Client } from "pg";
import { decodeParameterStatus } from "../../protocols/postgres/parameter-status";
import { encodeQuery } from "../../protocols/postgres/query";
import type { NatsServerProcess } from "../../service/nats-server";
import { ordersRows, configureOrdersWorld } from "../fixtures/orders-policy";
import {
  ALLOWED,
  alterRoleAttack,
  type Answer,
  answerOf,
  ask,
  assertShows,
  attackSetupSql,
  AttackVerdicts,
  bypasses,
  type Cell,
  constraintAttack,
  countAttack,
  cursorStatements,
  DROPPED,
  droppedEmail,
  droppedItem,
  email,
  extendedWrites,
  fuzzedSelfJoins,
  fuzzSeed,
  integrityAttacks,
  item,
  labelAttack,
  launderStatements,
  onlyAllowed,
  preparedSelfJoins,
  readOnlyProbe,
  refusals,
  rowAttacks,
  rowLimitedSelfJoin,
  runStatements,
  selfJoin,
  serverCodeMessages,
  setConfigStatements,
  timeZoneAttack,
  withWire as withOpenWire,
} from "../fixtures/postgres-attacks";
import { createAppDatabase, populationHba, roles } from "../fixtures/postgres-population";
import { call as request } from "../../testkit/http";
import { startNats } from "../../testkit/nats";
import { NodeProcess } from "../../testkit/node-process";
import { errorsOf, WireClient, type WireMessage } from "../helpers/pg-wire";
import { freePort } from "../../testkit/ports";
import { PostgresServer } from "../../testkit/postgres";

/** Opens a bare protocol connection as the trusted role (extra startup parameters: options, application_name). */
function openWire(port: number, extra: Record<string, string> = {}): Promise<WireClient> {
  return WireClient.connectWith(port, new Map([["user", roles.trusted.user], ["database", "app"], ...Object.entries(extra)]));
}

const withWire = <T>(port: number, work: (wire: WireClient) => Promise<T>, extra: Record<string, string> = {}): Promise<T> =>
  withOpenWire((more) => openWire(port, more), work, extra);

/** Runs statements one Query each on a fresh connection; answers in order. */
const run = (port: number, statements: readonly string[], extra: Record<string, string> = {}) =>
  runStatements((more) => openWire(port, more), statements, extra);

const parameterStatus = (messages: readonly WireMessage[]) =>
  new Map(messages.filter((m) => m.code === "S").map((m) => Object.values(decodeParameterStatus(m.body)) as [string, string]));

describe("PostgreSQL export soundness (issue 18): attacks that leak straight from PostgreSQL do not leak through the export", () => {
  let nats: NatsServerProcess;
  let node: NodeProcess;
  let pg: PostgresServer;
  let readOnlyPort: number;
  /** What the node decided, and what must never cross. */
  let v: AttackVerdicts;
  const call = (method: string, path: string, body?: unknown) => request(node, method, path, body);

  const leaksIn = (text: string) => v.leaksIn(text);
  const assertClean = (answers: readonly Answer[], what: string) => v.assertClean(answers, what);

  /** Creates an export of purpose "service" over the users-table group on a fresh port and waits until it answers. */
  const createExport = async (extra: Record<string, unknown> = {}): Promise<number> => {
    const port = await freePort();
    const created = await call("PUT", "/export", {
      type: "postgres",
      endpoint: `127.0.0.1:${pg.port}`,
      resolverGroup: "users-table",
      metadata: { type: "platformUse", purposeId: "service" },
      port,
      ...extra,
    });
    assert.equal(created.status, 200, `PUT /export ${JSON.stringify(extra)}: ${JSON.stringify(created.body)}`);
    const until = Date.now() + 15_000;
    for (;;) {
      const wire = await openWire(port).catch(() => undefined);
      if (wire) {
        wire.close();
        return port;
      }
      if (Date.now() > until) throw new Error(`export on port ${port} did not open`);
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  };
  // Exports with the fields issue 18 adds, made when a test first needs them (a node that does not
  // know the fields refuses them: only the tests that need them fail).
  const lazyExports = new Map<string, Promise<number>>();
  const exportWith = (fields: Record<string, unknown>) => {
    const key = JSON.stringify(fields);
    if (!lazyExports.has(key)) lazyExports.set(key, createExport(fields));
    return lazyExports.get(key)!;
  };
  const writablePort = () => exportWith({ allowWrites: true });
  const strictPort = () => exportWith({ strict: true });

  /** After an answer, the same connection still answers a plain read with the allowed user's email. */
  const assertStillWorks = async (wire: WireClient, last: Answer, what: string) => {
    if (last.status === "T" || last.status === "E") await ask(wire, "ROLLBACK");
    const after = await ask(wire, `SELECT id, email FROM users WHERE id = '${ALLOWED}'`);
    assert.deepEqual(after.errors, [], `${what}: the connection works after the refusal`);
    assert.deepEqual(
      after.rows,
      [[null, email(ALLOWED)]],
      `${what}: the connection works after the refusal (the id, a resource context without a category, is NULL)`,
    );
  };

  /** A refusal: one error, SQLSTATE 25006 or 42501, a message naming what is refused; nothing ran, nothing leaked. */
  const assertRefused = (answer: Answer, what: string, names: RegExp, howToAllow = true) => {
    assert.equal(answer.errors.length, 1, `${what}: one error, got ${JSON.stringify(answer.errors)} ${JSON.stringify(answer.tags)}`);
    const [error] = answer.errors;
    assert.match(error!.code, /^(25006|42501)$/, `${what}: refused with 25006 or 42501, got ${error!.code} ${error!.message}`);
    assert.match(error!.message, names, `${what}: the message says what is refused`);
    if (howToAllow) assert.match(error!.message, /allowWrites/, `${what}: the message says how to allow writes`);
    assert.ok(!answer.messages.some((m) => m.code === "G" || m.code === "D"), `${what}: nothing ran (no COPY, no rows)`);
    assert.deepEqual(answer.tags, [], `${what}: nothing ran (no command tag)`);
    assertClean([answer], what);
  };

  before(async () => {
    pg = await PostgresServer.start({ hba: populationHba });
    createAppDatabase(pg);
    const orders = ordersRows()
      .map((o) => `('${o.userId}', '${o.item}')`)
      .join(", ");
    pg.sql(
      [
        "CREATE TABLE orders (id serial PRIMARY KEY, user_id text, item text)",
        `INSERT INTO orders (user_id, item) VALUES ${orders}`,
        `GRANT ALL ON orders, orders_id_seq TO ${roles.scram.user}, ${roles.trusted.user}`,
        attackSetupSql,
      ].join("; "),
      "app",
    );
    nats = await startNats();
    // The node's defaults (sessions in proxy worker processes): what a hostile client faces.
    node = await NodeProcess.start({ nodeId: "pg-soundness-1", natsUrl: nats.url });
    v = new AttackVerdicts(await configureOrdersWorld(call, node.url));
    readOnlyPort = await createExport();
  });

  after(async () => {
    await node?.stop();
    await nats?.stop();
    await pg?.stop();
  });

  // Attribution (the attacks: test/fixtures/postgres-attacks.ts): each leaks directly, not through the export.

  for (const attack of rowAttacks) {
    describe(attack.name, () => {
      test("leaks on a direct connection", async () => {
        const [answer] = await run(pg.port, [attack.sql]);
        assert.deepEqual(answer!.errors, []);
        assert.ok(leaksIn(answer!.text).includes(attack.leaks ?? droppedEmail), `straight from PostgreSQL the query exposes ${attack.leaks ?? droppedEmail}`);
      });
      // Two checks of the same answer, so a failure says which: a leak, or an export that hides what it may show.
      const exported = () => run(readOnlyPort, [attack.sql]).then(([answer]) => answer!);
      test("does not leak through the export", async () => {
        const answer = await exported();
        assert.deepEqual(answer.errors, [], attack.sql);
        assertClean([answer], attack.sql);
      });
      if (attack.unattributed)
        test(`shows no protected value it cannot attribute (${attack.unattributed}: emptied or dropped)`, async () => {
          const { rows } = await exported();
          assert.deepEqual(
            rows.flatMap((row) => attack.columns.map((c) => row[c] ?? null)).filter((cell) => cell !== null),
            [],
            attack.sql,
          );
        });
      else
        test("still shows the allowed values through the export (each instance decided by its own user)", async () => {
          assertShows((await exported()).rows, attack.columns, attack.shows(v), attack.sql);
        });
    });
  }

  describe("cursor over the self-join: BEGIN; DECLARE c CURSOR FOR ...; FETCH ALL FROM c", () => {
    const statements = cursorStatements;
    test("leaks on a direct connection", async () => {
      const answers = await run(pg.port, statements);
      assert.ok(answers.some((a) => leaksIn(a.text).includes(droppedEmail)));
    });
    test("does not leak through the export, and still shows the allowed values", async () => {
      const answers = await run(readOnlyPort, statements);
      assert.deepEqual(
        answers.flatMap((a) => a.errors),
        [],
      );
      assertClean(answers, "cursor");
      assertShows(
        answers.flatMap((a) => a.rows),
        [1],
        selfJoin(v),
        "cursor",
      );
    });
  });

  describe("set_config() of a value, then SHOW, current_setting() and ParameterStatus (not in the issue: session settings hold data)", () => {
    const statements = setConfigStatements;
    test("leaks on a direct connection", async () => {
      const answers = await run(pg.port, statements);
      assert.ok(answers.filter((a) => leaksIn(a.text).includes(droppedEmail)).length >= 3, "SHOW, current_setting() and pg_settings all return it");
    });
    test("does not leak through the export", async () => {
      const answers = await run(readOnlyPort, [...statements, `SELECT id, email FROM users WHERE id = '${ALLOWED}'`]);
      assertClean(answers, "set_config");
      assert.deepEqual(answers.at(-1)!.rows, [[null, email(ALLOWED)]]);
    });
  });

  // node-postgres, extended protocol: a named prepared statement, then the same in binary results.
  describe("node-postgres extended protocol: named prepared self-join, text and binary results", () => {
    const queries = preparedSelfJoins;
    /** Runs each query twice on one connection (a named statement runs prepared the second time); every byte received is kept. */
    const through = async (port: number) => {
      const c = new Client({ host: "127.0.0.1", port, user: roles.scram.user, password: roles.scram.password, database: "app" });
      await c.connect();
      const received: Buffer[] = [];
      c.connection.stream.on("data", (chunk: Buffer) => received.push(chunk));
      try {
        const results: Array<{ rows: Array<Record<string, unknown>> }> = [];
        for (const query of queries) for (let i = 0; i < 2; i++) results.push(await c.query(query));
        return {
          rows: results.map((r) => r.rows.map((row: Record<string, unknown>) => [row.id, row.email] as Cell[])),
          bytes: Buffer.concat(received).toString("latin1"),
        };
      } finally {
        await c.end().catch(() => undefined);
      }
    };
    test("leaks on a direct connection", async () => {
      const got = await through(pg.port);
      assert.ok(leaksIn(got.bytes).includes(droppedEmail));
      for (const rows of got.rows) assert.ok(rows.some((r) => r[1] === droppedEmail));
    });
    test("does not leak through the export, and still shows the allowed values", async () => {
      const got = await through(readOnlyPort);
      assert.deepEqual(leaksIn(got.bytes), []);
      for (const [index, rows] of got.rows.entries()) {
        for (const row of rows) assert.ok(!v.droppedIds.includes(String(row[0])) && !v.droppedIds.includes(String(row[1])));
        assertShows(rows, [1], selfJoin(v), `run ${index} (${index < 2 ? "text" : "binary"})`);
      }
    });
  });

  describe("extended protocol, unnamed statement, Execute with a row limit over the self-join (portal suspended and resumed)", () => {
    const through = (port: number) =>
      withWire(port, async (wire) => {
        wire.send(...rowLimitedSelfJoin());
        return answerOf(await wire.until((m) => m.code === "Z", 1, 15_000));
      });
    test("leaks on a direct connection", async () => {
      assert.ok(leaksIn((await through(pg.port)).text).includes(droppedEmail));
    });
    test("does not leak through the export, and still shows the allowed values", async () => {
      const answer = await through(readOnlyPort);
      assert.deepEqual(answer.errors, []);
      assertClean([answer], "row-limited self-join");
      assertShows(answer.rows, [1], selfJoin(v), "row-limited self-join");
    });
  });

  describe("TimeZone chosen from another user's email (not in the issue: a reported parameter that takes free text)", () => {
    const { word, statements, carries, alterRole } = timeZoneAttack;
    const reset = () => pg.sql(`ALTER ROLE ${roles.trusted.user} RESET TimeZone`, "app");
    test("leaks on a direct connection: ParameterStatus after set_config(), SHOW, and at the next login after ALTER ROLE", async () => {
      const answers = await run(pg.port, statements);
      assert.ok(
        carries(
          answers[0]!.messages
            .filter((m) => m.code === "S")
            .map((m) => m.body.toString("latin1"))
            .join(),
        ),
        "ParameterStatus TimeZone carries it",
      );
      assert.ok(carries(answers[1]!.text), "SHOW carries it");
      try {
        await run(pg.port, [alterRole]);
        const login = await withWire(pg.port, async (wire) => wire.startup);
        assert.ok(carries(parameterStatus(login).get("TimeZone") ?? ""));
      } finally {
        reset();
      }
    });
    test("through a read-only export: no ParameterStatus, SHOW or row carries it", async () => {
      const answers = await run(readOnlyPort, statements);
      for (const answer of answers) assert.ok(!carries(answer.text), `${word} reached the client`);
      assertClean(answers, "TimeZone");
      assert.deepEqual(answers[2]!.rows, [[null, email(ALLOWED)]]);
    });
    test("through an allowWrites export: the next login's ParameterStatus does not carry it", async () => {
      const port = await writablePort();
      try {
        const [answer] = await run(port, [alterRole]);
        assert.deepEqual(answer!.errors, [], "writes are allowed");
        assert.ok(
          pg
            .sql(
              `SELECT array_to_string(setconfig, ',') FROM pg_db_role_setting s JOIN pg_roles r ON r.oid = s.setrole WHERE r.rolname = '${roles.trusted.user}'`,
              "app",
            )
            .toLowerCase()
            .includes(word),
          "the check can fail: the role's default holds it",
        );
        const login = await withWire(port, async (wire) => wire.startup);
        assert.ok(!carries(login.map((m) => m.body.toString("latin1")).join()), `${word} crossed at login`);
      } finally {
        reset();
      }
    });
  });

  // A small seeded fuzzer (test/fixtures/postgres-attacks.ts): the seed is in the test name, a failure repeats.
  describe(`fuzzed self-joins (seed ${fuzzSeed})`, () => {
    const fuzzed = fuzzedSelfJoins;
    test("each leaks on a direct connection", async () => {
      const answers = await run(pg.port, fuzzed);
      for (const [index, answer] of answers.entries()) assert.ok(leaksIn(answer.text).includes(droppedEmail), fuzzed[index]);
    });
    test("none leaks through the export; the allowed user's own email still crosses", async () => {
      const answers = await run(readOnlyPort, fuzzed);
      for (const [index, answer] of answers.entries()) {
        assert.deepEqual(answer.errors, [], fuzzed[index]);
        assertClean([answer], fuzzed[index]!);
        assertShows(answer.rows, [1], onlyAllowed(v), fuzzed[index]!);
      }
    });
  });

  // ---------------------------------------------------------------------------------------------
  // Read-only by default: writes and what turns read-only off are refused, the connection lives on.
  // ---------------------------------------------------------------------------------------------

  describe("DO block naming a CHECK constraint after a value, then a failing INSERT (issue 18)", () => {
    test("leaks on a direct connection: the constraint name crosses in the error", async () => {
      const [answer] = await run(pg.port, [constraintAttack]);
      assert.equal(answer!.errors[0]?.code, "23514");
      assert.ok(leaksIn(answer!.text).includes(droppedEmail));
    });
    test("refused through a read-only export", async () => {
      await withWire(readOnlyPort, async (wire) => {
        const answer = await ask(wire, constraintAttack);
        assertRefused(answer, "DO", /\bDO\b/i);
        await assertStillWorks(wire, answer, "DO");
      });
    });
  });

  describe("INSERT ... generate_series(1, ascii(...)): the command tag counts a value (issue 18)", () => {
    test("leaks on a direct connection: INSERT 0 <ascii code>", async () => {
      const answers = await run(pg.port, ["CREATE TEMP TABLE tmp (n int)", countAttack]);
      assert.equal(answers[1]!.tags[0], `INSERT 0 ${droppedEmail.charCodeAt(0)}`);
    });
    test("refused through a read-only export (before the backend: tmp does not even exist)", async () => {
      await withWire(readOnlyPort, async (wire) => {
        const answer = await ask(wire, countAttack);
        assertRefused(answer, "INSERT", /INSERT/i);
        assert.ok(!answer.tags.some((t) => t.startsWith("INSERT")));
        await assertStillWorks(wire, answer, "INSERT");
      });
    });
  });

  describe("ALTER ROLE CURRENT_USER SET application_name from a DO block: ParameterStatus at the next login (issue 18)", () => {
    const reset = () => pg.sql(`ALTER ROLE ${roles.trusted.user} RESET application_name`, "app");
    const roleSettings = () =>
      pg.sql(
        `SELECT coalesce(string_agg(array_to_string(setconfig, ','), ';'), '') FROM pg_db_role_setting s JOIN pg_roles r ON r.oid = s.setrole WHERE r.rolname = '${roles.trusted.user}'`,
        "app",
      );
    test("leaks on a direct connection", async () => {
      try {
        await run(pg.port, [alterRoleAttack]);
        const login = await withWire(pg.port, async (wire) => wire.startup);
        assert.equal(parameterStatus(login).get("application_name"), droppedEmail);
      } finally {
        reset();
      }
    });
    test("refused through a read-only export", async () => {
      try {
        await withWire(readOnlyPort, async (wire) => {
          const answer = await ask(wire, alterRoleAttack);
          assertRefused(answer, "DO", /\bDO\b/i);
          await assertStillWorks(wire, answer, "DO");
        });
        assert.ok(!roleSettings().includes(droppedEmail), "the role setting was not written");
      } finally {
        reset();
      }
    });
    test("through an allowWrites export the write happens, and the next login's ParameterStatus does not carry the value", async () => {
      const port = await writablePort();
      try {
        const [answer] = await run(port, [alterRoleAttack]);
        assert.deepEqual(answer!.errors, [], "writes are allowed");
        assertClean([answer!], "ALTER ROLE");
        assert.ok(roleSettings().includes(droppedEmail), "the check can fail: the role's default now holds the value");
        const login = await withWire(port, async (wire) => wire.startup);
        assertClean([answerOf(login)], "login after ALTER ROLE");
        assert.ok(
          [undefined, ""].includes(parameterStatus(login).get("application_name")),
          "application_name crosses only as the client sent it (it sent none)",
        );
        // Not vacuous: what the client sends itself comes back.
        const named = await withWire(port, async (wire) => wire.startup, { application_name: "soundness-client" });
        assert.equal(parameterStatus(named).get("application_name"), "soundness-client");
      } finally {
        reset();
      }
    });
  });

  for (const refusal of refusals) {
    describe(`refused: ${refusal.name}`, () => {
      test(refusal.passesReadOnlySession ? "runs on a direct connection started read-only" : "runs on a direct connection", async () => {
        await withWire(
          pg.port,
          async (wire) => {
            if (refusal.passesReadOnlySession) assert.equal((await ask(wire, "SHOW default_transaction_read_only")).rows[0]?.[0], "on");
            for (const sql of refusal.setup ?? []) assert.deepEqual((await ask(wire, sql)).errors, []);
            wire.send(encodeQuery(refusal.sql));
            const messages = await wire.until((m) => m.code === "Z" || m.code === "G");
            if (messages.at(-1)!.code === "G") {
              // COPY FROM STDIN started: the backend waits for data. End it (CopyFail).
              wire.send(Buffer.from([0x66, 0, 0, 0, 7, 0x6e, 0x6f, 0]));
              await wire.until((m) => m.code === "Z");
              return;
            }
            assert.deepEqual(errorsOf(messages), [], `${refusal.sql} runs straight against PostgreSQL`);
          },
          refusal.passesReadOnlySession ? { options: "-c default_transaction_read_only=on" } : {},
        );
      });
      test("refused through a read-only export; the connection still works", async () => {
        await withWire(readOnlyPort, async (wire) => {
          for (const sql of refusal.setup ?? []) assert.deepEqual((await ask(wire, sql)).errors, [], sql);
          // A COPY that starts (CopyInResponse) would wait for data: stop at it, the check fails on it.
          wire.send(encodeQuery(refusal.sql));
          const answer = answerOf(await wire.until((m) => m.code === "Z" || m.code === "G", 1, 5000));
          assertRefused(answer, refusal.name, refusal.names, !refusal.backendMayRefuse);
          await assertStillWorks(wire, answer, refusal.name);
        });
      });
    });
  }

  describe("refused in the extended protocol: a write sent as Parse/Bind/Execute by node-postgres (unnamed and named)", () => {
    const writes = extendedWrites;
    const attempt = async (port: number) => {
      const c = new Client({ host: "127.0.0.1", port, user: roles.scram.user, password: roles.scram.password, database: "app" });
      await c.connect();
      try {
        const outcomes: Array<{ command?: string; code?: string; message?: string }> = [];
        for (const query of writes) {
          outcomes.push(
            await c.query(query).then(
              (r) => ({ command: r.command }),
              (error: Error & { code?: string }) => ({ code: error.code, message: error.message }),
            ),
          );
          const after = await c.query(`SELECT id, email FROM users WHERE id = '${ALLOWED}'`);
          assert.deepEqual(
            after.rows.map((r: Record<string, unknown>) => r.email),
            [email(ALLOWED)],
            "the connection still works",
          );
        }
        return outcomes;
      } finally {
        await c.end().catch(() => undefined);
      }
    };
    test("runs on a direct connection", async () => {
      assert.deepEqual(await attempt(pg.port), [{ command: "INSERT" }, { command: "UPDATE" }]);
    });
    test("refused through a read-only export; the connection still works", async () => {
      for (const [index, outcome] of (await attempt(readOnlyPort)).entries()) {
        assert.ok("code" in outcome, `${writes[index]!.text}: refused, got ${JSON.stringify(outcome)}`);
        assert.match(outcome.code ?? "", /^(25006|42501)$/);
        assert.match(outcome.message ?? "", index === 0 ? /INSERT/i : /UPDATE/i);
        assert.match(outcome.message ?? "", /allowWrites/);
      }
    });
  });

  describe("refused: SET SESSION AUTHORIZATION (as a superuser, whom PostgreSQL lets do it)", () => {
    const superuser = { user: "postgres", password: "postgres" };
    const attempt = async (port: number) => {
      const c = new Client({ host: "127.0.0.1", port, ...superuser, database: "app" });
      await c.connect();
      try {
        const outcome = await c.query(`SET SESSION AUTHORIZATION ${roles.scram.user}`).then(
          async () => ({ who: (await c.query("SELECT current_user AS who")).rows[0]?.who as string | undefined }),
          (error: Error & { code?: string }) => ({ code: error.code, message: error.message }),
        );
        const after = await c.query(`SELECT id, email FROM users WHERE id = '${ALLOWED}'`);
        return { outcome, after: after.rows.map((r: Record<string, unknown>) => [r.id, r.email]) };
      } finally {
        await c.end().catch(() => undefined);
      }
    };
    test("runs on a direct connection", async () => {
      assert.deepEqual((await attempt(pg.port)).outcome, { who: roles.scram.user });
    });
    test("refused through a read-only export; the connection still works", async () => {
      const { outcome, after } = await attempt(readOnlyPort);
      assert.ok("code" in outcome, `refused, got ${JSON.stringify(outcome)}`);
      assert.match(outcome.code ?? "", /^(25006|42501)$/);
      assert.match(outcome.message ?? "", /SESSION AUTHORIZATION/i);
      assert.deepEqual(after, [[null, email(ALLOWED)]]);
    });
  });

  // Turning read-only off (test/fixtures/postgres-attacks.ts, bypasses): each works on a direct session started read-only.
  for (const bypass of bypasses) {
    describe(`read-only turned off: ${bypass.name}`, () => {
      test("on a direct connection started read-only, it lets a write through", async () => {
        const options = { options: "-c default_transaction_read_only=on" };
        const [blocked] = await run(pg.port, [readOnlyProbe], options);
        assert.equal(blocked!.errors[0]?.code, "25006", "the session starts read-only");
        const answers = await run(pg.port, [...bypass.steps, readOnlyProbe, "ROLLBACK"], options);
        assert.deepEqual(
          answers.slice(0, -1).flatMap((a) => a.errors),
          [],
          bypass.name,
        );
        assert.equal(answers.at(-2)!.tags[0], "INSERT 0 1");
      });
      test("refused through a read-only export; the connection still works", async () => {
        await withWire(readOnlyPort, async (wire) => {
          for (const sql of bypass.steps.slice(0, -1)) assert.deepEqual((await ask(wire, sql)).errors, [], sql);
          const answer = await ask(wire, bypass.steps.at(-1)!);
          assertRefused(answer, bypass.name, /read[_ -]?only|read write/i);
          await assertStillWorks(wire, answer, bypass.name);
        });
      });
    });
  }

  // ---------------------------------------------------------------------------------------------
  // Side channels with writes allowed: integrity errors, labels.
  // ---------------------------------------------------------------------------------------------

  // Integrity errors whose names server-side code chose from data, and messages it raised with a value.
  const raised = [
    ...integrityAttacks.map((attack) => ({ ...attack, what: "integrity error" })),
    ...serverCodeMessages.map((attack) => ({ ...attack, what: "server-side code's message" })),
  ];
  for (const attack of raised) {
    describe(`${attack.what}: ${attack.name}`, () => {
      const codes = attack.code ? [attack.code] : [];
      test("leaks on a direct connection", async () => {
        const [answer] = await run(pg.port, [attack.sql]);
        assert.deepEqual(
          answer!.errors.map((e) => e.code),
          codes,
        );
        assert.ok(leaksIn(answer!.text).includes(droppedEmail));
      });
      test("through an allowWrites export: the SQLSTATE crosses, the value does not", async () => {
        await withWire(await writablePort(), async (wire) => {
          const answer = await ask(wire, attack.sql);
          assert.deepEqual(
            answer.errors.map((e) => e.code),
            codes,
            "the error itself crosses, with its SQLSTATE",
          );
          assertClean([answer], attack.name);
          await assertStillWorks(wire, answer, attack.name);
        });
      });
    });
  }

  describe("column labels chosen by server-side code, matching client-written words only in part", () => {
    // Two labels from the dropped user's email, matching client-written words in part (test/fixtures/postgres-attacks.ts).
    const { label, statements } = labelAttack;
    test("leaks on a direct connection", async () => {
      const answers = await run(pg.port, statements);
      assert.equal(answers[3]!.descriptions[0]?.[0]?.name, label);
      assert.equal(answers[4]!.descriptions[0]?.[0]?.name, droppedEmail);
    });
    test("through an allowWrites export the labels do not cross: whole labels matched against whole client-written tokens", async () => {
      const answers = await run(await writablePort(), statements);
      assert.deepEqual(
        answers.slice(0, 2).flatMap((a) => a.errors),
        [],
        "writes (DO) are allowed",
      );
      for (const answer of answers) assertClean([answer], "label");
      const labels = answers.flatMap((a) => a.descriptions.flat().map((c) => c.name));
      assert.deepEqual(
        answers[2]!.descriptions[0]?.map((c) => c.name),
        ["nothing", "accepted", "example", "com"],
        "the client's own aliases cross",
      );
      assert.ok(!labels.includes(label), `the label ${label} crossed`);
    });
  });

  // Not in the issue: with writes allowed, the client's own UPDATE or INSERT can copy a dropped
  // user's value into a row of the allowed user, where per-instance attribution then releases it.
  // allowWrites is not a read boundary (docs/postgres-export.md, "What the proxy cannot stop"); a
  // read-only export, the default, refuses the writes. Each attempt is rolled back.
  describe("allowWrites: a value laundered into the allowed user's row by the client's own write", () => {
    const launder = launderStatements;
    test("leaks on a direct connection", async () => {
      const answers = await run(pg.port, launder);
      assert.ok(leaksIn(answers[3]!.text).includes(droppedEmail) && leaksIn(answers[4]!.text).includes(droppedItem));
    });
    test("through a read-only export the writes are refused and nothing leaks", async () => {
      const answers = await run(readOnlyPort, launder);
      assertClean(answers, "laundering");
      assert.deepEqual([answers[1]!.errors.map((e) => e.code), answers[2]!.errors.map((e) => e.code)], [["25006"], ["25006"]]);
    });
  });

  // ---------------------------------------------------------------------------------------------
  // RowDescription: the data cannot choose metadata.
  // ---------------------------------------------------------------------------------------------

  describe("RowDescription of unmapped columns and expressions", () => {
    const sql = `SELECT u.id, u.email, u.secret, upper(u.email) AS shout, length(u.email) AS size, o.id AS order_id FROM users u JOIN orders o ON o.user_id = u.id WHERE u.id = '${ALLOWED}'`;
    test("on a direct connection they keep their table, attribute and type", async () => {
      const [answer] = await run(pg.port, [sql]);
      const [columns] = answer!.descriptions;
      assert.ok(columns![2]!.tableOid !== 0 && columns![2]!.attributeNumber === 6, "secret: users' OID, attribute 6");
      assert.deepEqual([columns![4]!.typeOid, columns![4]!.typeSize], [23, 4], "length(): int4");
      assert.ok(columns![5]!.tableOid !== 0 && columns![5]!.typeOid === 23, "orders.id: orders' OID, int4");
    });
    test("through the export they are text, size -1, table 0, attribute 0; the mapped ones keep their values", async () => {
      const [answer] = await run(readOnlyPort, [sql]);
      assert.deepEqual(answer!.errors, []);
      assertClean([answer!], "RowDescription");
      const [columns] = answer!.descriptions;
      for (const index of [2, 3, 4, 5]) {
        const c = columns![index]!;
        assert.deepEqual(
          { typeOid: c.typeOid, typeSize: c.typeSize, tableOid: c.tableOid, attributeNumber: c.attributeNumber, typeModifier: c.typeModifier },
          { typeOid: 25, typeSize: -1, tableOid: 0, attributeNumber: 0, typeModifier: -1 },
          c.name,
        );
      }
      assert.deepEqual(answer!.rows, [[null, email(ALLOWED), null, null, null, null]]);
    });
  });

  // ---------------------------------------------------------------------------------------------
  // strict: predicates on other columns (inference) are refused; resource-context joins are not.
  // ---------------------------------------------------------------------------------------------

  describe("strict export: predicates, grouping and ordering on other columns answer questions about values", () => {
    const probe = (prefix: string) => `SELECT a.id FROM users a, users b WHERE a.id = '${ALLOWED}' AND b.id = '${DROPPED}' AND b.email LIKE '${prefix}%'`;
    /** Each references a column other than a resource context where strict forbids it (issue 18, item 5). */
    const probes = [
      { where: "WHERE", sql: probe("n") },
      { where: "JOIN ON", sql: `SELECT a.email FROM users a JOIN users b ON b.email LIKE 'n%' AND b.id = '${DROPPED}' WHERE a.id = '${ALLOWED}'` },
      { where: "GROUP BY", sql: "SELECT count(*), min(id) FROM users GROUP BY left(secret, 8)" },
      { where: "HAVING", sql: `SELECT id FROM users GROUP BY id HAVING max(secret) LIKE 'secret-n%'` },
      { where: "ORDER BY", sql: "SELECT email FROM users ORDER BY secret" },
      { where: "a window", sql: "SELECT email, row_number() OVER (ORDER BY secret) FROM users" },
      { where: "DISTINCT ON", sql: "SELECT DISTINCT ON (left(secret, 8)) email FROM users" },
      // ORDER BY takes an output column's name before an input column's: `id` here is the secret's test.
      { where: "ORDER BY through an output column's name", sql: "SELECT id AS uid, (secret LIKE 'secret-a%')::int AS id FROM users ORDER BY id DESC LIMIT 1" },
    ];
    test("on a direct connection the answer depends on the dropped user's email, and every probe runs", async () => {
      const answers = await run(pg.port, [probe("n"), probe("x"), ...probes.map((p) => p.sql)]);
      assert.deepEqual(
        answers.slice(0, 2).map((a) => a.rows.length),
        [1, 0],
      );
      for (const [index, answer] of answers.slice(2).entries()) assert.deepEqual(answer.errors, [], probes[index]!.sql);
    });
    test("a strict export refuses each probe and still answers joins and filters on resource-context columns", async () => {
      const port = await strictPort();
      await withWire(port, async (wire) => {
        for (const p of probes) {
          const answer = await ask(wire, p.sql);
          assertRefused(answer, `strict, ${p.where}`, /strict|WHERE|JOIN|GROUP|HAVING|ORDER|window|DISTINCT|predicate|column/i, false);
          await assertStillWorks(wire, answer, `strict, ${p.where}`);
        }
        const honest = await ask(wire, "SELECT u.id, u.email, o.item FROM orders o JOIN users u ON u.id = o.user_id ORDER BY u.id");
        assert.deepEqual(honest.errors, []);
        assertClean([honest], "strict honest join");
        assertShows(honest.rows, [1, 2], [[email(ALLOWED), item(ALLOWED)]], "strict honest join");
      });
    });
    test("the same probes are answered by a default (not strict) export: what strict closes is real there", async () => {
      const answers = await run(readOnlyPort, [probe("n"), probe("x")]);
      assert.deepEqual(
        answers.map((a) => a.errors),
        [[], []],
      );
      assertClean(answers, "non-strict probes");
    });
  });
});
