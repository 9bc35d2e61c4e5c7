// Issue 27: "the adversarial suites of the postgres export still pass with pushdown on". The attacks
// of the row-by-row suites (test/fixtures/postgres-attacks.ts, postgres-catalog-attacks.ts and
// postgres-named-attacks.ts, one copy each, shared with postgres-export-soundness.test.ts,
// postgres-export-catalog-attacks.test.ts and postgres-export-named-attacks.test.ts)
// run against one pushdown export (PushdownHarness: LDAP, TLS, the export's credentials, proxy
// workers). An attack that reads passes if no forbidden value appears in any byte the client
// receives (rows, errors with their detail, hint and where, notices, command tags, ParameterStatus:
// a raw protocol client over TLS, or node-postgres with every byte of its stream kept); refusals
// count as not leaking. Each reading attack is run directly against PostgreSQL first in the same
// test, where it must expose the value it aims at, so no check here is vacuous because the world
// differs from the soundness suite's. Writes and what turns read-only off do not leak by
// themselves: their direct halves (they run straight against PostgreSQL) are asserted by the
// soundness suite with the same SQL; here they must be refused. And the export is not an export
// that answers nothing: wherever a reading attack answers without an error, the allowed values
// the row-by-row suite expects it to show must be in its rows (the self-join and the honest join
// at least, asserted by name).
//
// World: the ids (users.id, orders.user_id) are given the category identity, which the purpose
// allows for the allowed user. Without a category they are NULL in the derived tables, so every
// attack that picks rows by id (`WHERE a.id = 'accepted'`) would return nothing and pass vacuously.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import type { Client } from "pg";
import { encodeQuery } from "../../protocols/postgres/query";
import { decodeParameterStatus } from "../../protocols/postgres/parameter-status";
import { catalogAttacks, catalogAttackSetup, catalogVia } from "../fixtures/postgres-catalog-attacks";
import { namedAttacks, namedAttackSetup, runBatches } from "../fixtures/postgres-named-attacks";
import { ALLOWED, analyst, PushdownHarness } from "../fixtures/postgres-pushdown";
import * as attacks from "../fixtures/postgres-attacks";
import {
  type Answer,
  answerOf,
  ask,
  assertShows,
  AttackVerdicts,
  type Cell,
  droppedEmail,
  email,
  type OpenWire,
  runStatements,
  withWire,
} from "../fixtures/postgres-attacks";
import { roles } from "../fixtures/postgres-population";
import { WireClient } from "../helpers/pg-wire";

describe("PostgreSQL exports with pushdown: attacks", () => {
  const harness = new PushdownHarness();
  const { run, call } = harness;
  let v: AttackVerdicts;
  /**
   * What the allowed values to show are computed from: users whose id the purpose may not use
   * (no identity) have NULL ids in the derived tables, so no predicate or join on an id matches
   * their rows; they are left out of what must be shown (what must not leak is still `v`).
   */
  let showing: AttackVerdicts;
  let writablePort: Promise<number> | undefined;

  before(async () => {
    await harness.start("pushdown-attacks", { setupSql: [attacks.attackSetupSql, catalogAttackSetup, namedAttackSetup].join("; "), idCategory: "identity" });
    v = new AttackVerdicts(harness.allowed);
    showing = new AttackVerdicts(new Map([...harness.allowed].map(([id, categories]) => [id, categories?.has("identity") ? categories : undefined])));
  });
  after(() => harness.stop());

  const startup = (user: string, extra: Record<string, string>) => new Map([["user", user], ["database", "app"], ...Object.entries(extra)]);
  /** Straight to PostgreSQL as the trusted role (no password). */
  const direct: OpenWire = (extra = {}) => WireClient.connectWith(harness.pg.port, startup(roles.trusted.user, extra));
  /** Through a pushdown export: TLS, the analyst's LDAP password. */
  const through =
    (port: number): OpenWire =>
    (extra = {}) =>
      WireClient.connectTls(port, startup(analyst.uid, extra), analyst.password);
  const exported: OpenWire = (extra) => through(harness.port)(extra);
  /** A pushdown export that allows writes, made when a test first needs it. */
  const writable = async () => through(await (writablePort ??= harness.openExport({ allowWrites: true }).then(({ port }) => port)));

  /** Directly, the statements expose `leaks`; through the export no forbidden byte crosses. The export's answers. */
  const leaksDirectlyNotThrough = async (statements: readonly string[], what: string, leaks = droppedEmail): Promise<Answer[]> => {
    const answers = await runStatements(direct, statements);
    assert.ok(
      answers.some((a) => v.leaksIn(a.text).includes(leaks)),
      `${what}: straight from PostgreSQL it exposes ${leaks}`,
    );
    const crossed = await runStatements(exported, statements);
    v.assertClean(crossed, what);
    return crossed;
  };

  /** A refusal: one error, SQLSTATE 25006 or 42501; nothing ran, nothing leaked; the connection still reads. */
  const assertRefused = async (wire: WireClient, answer: Answer, what: string) => {
    assert.equal(answer.errors.length, 1, `${what}: one error, got ${JSON.stringify(answer.errors)} ${JSON.stringify(answer.tags)}`);
    assert.match(answer.errors[0]!.code, /^(25006|42501)$/, `${what}: refused, got ${JSON.stringify(answer.errors[0])}`);
    assert.ok(!answer.messages.some((m) => m.code === "G" || m.code === "D"), `${what}: nothing ran (no COPY, no rows)`);
    assert.deepEqual(answer.tags, [], `${what}: nothing ran (no command tag)`);
    v.assertClean([answer], what);
    if (answer.status === "T" || answer.status === "E") await ask(wire, "ROLLBACK");
    const after = await ask(wire, `SELECT id, email FROM users WHERE id = '${ALLOWED}'`);
    assert.deepEqual(after.rows, [[ALLOWED, email(ALLOWED)]], `${what}: the connection works after the refusal`);
  };

  // ---------------------------------------------------------------------------------------------
  // Reads: attribution, cursors, settings, the extended protocol, fuzzed self-joins.
  // ---------------------------------------------------------------------------------------------

  const mustShow = ["self-join (issue 18)", "honest join orders JOIN users ON u.id = o.user_id: each instance decided by its own user"];
  /** Reading attacks that answer without an error but show less than row by row, and why (fail closed: fewer rows, never more). */
  const showsLess: Record<string, string> = {
    "SQL-level PREPARE and EXECUTE of the self-join":
      "EXECUTE in the Query that PREPAREs: the statement is not known yet when the Query is sent, so its rows are decided row by row, and none names a user",
  };
  assert.deepEqual(
    [...mustShow, ...Object.keys(showsLess)].filter((name) => !attacks.rowAttacks.some((a) => a.name === name)),
    [],
    "the attacks named here are in the list",
  );
  /** A refusal of pushdown's read rules: a view, a function of the database's own, a catalog relation that holds values. */
  const refusedReads = (answer: Answer) => answer.errors.every((e) => e.code === "42501");
  for (const attack of attacks.rowAttacks) {
    test(`row attack: ${attack.name}`, async () => {
      const [answer] = await leaksDirectlyNotThrough([attack.sql], attack.sql, attack.leaks);
      assert.ok(refusedReads(answer!), `${attack.sql}: only refusals (42501), got ${JSON.stringify(answer!.errors)}`);
      if (mustShow.includes(attack.name)) assert.deepEqual(answer!.errors, [], attack.sql);
      if (answer!.errors.length === 0 && !(attack.name in showsLess)) assertShows(answer!.rows, attack.columns, attack.shows(showing), attack.sql);
    });
  }

  test("PREPARE of the self-join, EXECUTE in the next Query: the allowed values cross, no forbidden one", async () => {
    const statements = [`PREPARE sj AS ${attacks.selfJoinSql}`, "EXECUTE sj"];
    const answers = await leaksDirectlyNotThrough(statements, "PREPARE, then EXECUTE");
    assert.deepEqual(
      answers.flatMap((a) => a.errors),
      [],
    );
    assertShows(answers[1]!.rows, [1], attacks.selfJoin(showing), "EXECUTE");
  });

  test("cursor over the self-join: BEGIN; DECLARE; FETCH 2; FETCH ALL", async () => {
    const answers = await leaksDirectlyNotThrough(attacks.cursorStatements, "cursor");
    assert.deepEqual(
      answers.flatMap((a) => a.errors),
      [],
    );
    assertShows(
      answers.flatMap((a) => a.rows),
      [1],
      attacks.selfJoin(showing),
      "cursor",
    );
  });

  test("set_config() of a value, then SHOW, current_setting() and pg_settings", async () => {
    await leaksDirectlyNotThrough(attacks.setConfigStatements, "set_config");
  });

  test("TimeZone chosen from another user's email: no ParameterStatus, SHOW or row carries it", async () => {
    const { statements, carries, word } = attacks.timeZoneAttack;
    assert.ok(
      (await runStatements(direct, statements)).some((a) => carries(a.text)),
      "straight from PostgreSQL the zone carries it",
    );
    const answers = await runStatements(exported, statements);
    for (const answer of answers) assert.ok(!carries(answer.text), `${word} reached the client`);
    v.assertClean(answers, "TimeZone");
    assert.deepEqual(answers[2]!.rows, [[ALLOWED, email(ALLOWED)]]);
  });

  test(`fuzzed self-joins (seed ${attacks.fuzzSeed})`, async () => {
    const answers = await leaksDirectlyNotThrough(attacks.fuzzedSelfJoins, "fuzzed");
    assert.ok(
      (await runStatements(direct, attacks.fuzzedSelfJoins)).every((a) => v.leaksIn(a.text).includes(droppedEmail)),
      "each leaks directly",
    );
    for (const [index, answer] of answers.entries()) {
      assert.ok(refusedReads(answer), `${attacks.fuzzedSelfJoins[index]}: only refusals (42501), got ${JSON.stringify(answer.errors)}`);
      if (answer.errors.length === 0) assertShows(answer.rows, [1], attacks.onlyAllowed(v), attacks.fuzzedSelfJoins[index]!);
    }
    assert.ok(
      answers.filter((a) => a.errors.length === 0).length >= attacks.fuzzedSelfJoins.length / 2,
      "most fuzzed self-joins answer (those over users_view, a view, are refused)",
    );
  });

  /** node-postgres through the export (or directly as the reader): each query run twice, every byte of the stream kept. */
  const preparedThrough = async (client: Client) => {
    await client.connect();
    const received: Buffer[] = [];
    client.connection.stream.on("data", (chunk: Buffer) => received.push(chunk));
    try {
      const rows: Cell[][][] = [];
      for (const query of attacks.preparedSelfJoins)
        for (let i = 0; i < 2; i++) rows.push((await client.query(query)).rows.map((row: Record<string, unknown>) => [row.id, row.email] as Cell[]));
      return { rows, bytes: Buffer.concat(received).toString("latin1") };
    } finally {
      await client.end().catch(() => undefined);
    }
  };
  test("node-postgres extended protocol: named prepared self-join, text and binary results", async () => {
    assert.ok(v.leaksIn((await preparedThrough(harness.client("direct"))).bytes).includes(droppedEmail), "directly it leaks");
    const got = await preparedThrough(harness.client("export"));
    assert.deepEqual(v.leaksIn(got.bytes), []);
    for (const [index, rows] of got.rows.entries()) assertShows(rows, [1], attacks.selfJoin(showing), `run ${index}`);
  });

  test("extended protocol, unnamed statement, Execute with a row limit over the self-join", async () => {
    const batch = (open: OpenWire) =>
      withWire(open, async (wire) => {
        wire.send(...attacks.rowLimitedSelfJoin());
        return answerOf(await wire.until((m) => m.code === "Z", 1, 15_000));
      });
    assert.ok(v.leaksIn((await batch(direct)).text).includes(droppedEmail), "directly it leaks");
    const answer = await batch(exported);
    assert.deepEqual(answer.errors, []);
    v.assertClean([answer], "row-limited self-join");
    assertShows(answer.rows, [1], attacks.selfJoin(showing), "row-limited self-join");
  });

  test("a value laundered into the allowed user's row by the client's own write: the writes are refused, nothing leaks", async () => {
    const answers = await leaksDirectlyNotThrough(attacks.launderStatements, "laundering");
    assert.deepEqual([answers[1]!.errors.map((e) => e.code), answers[2]!.errors.map((e) => e.code)], [["25006"], ["25006"]]);
  });

  // ---------------------------------------------------------------------------------------------
  // Catalog reads (issue 27, part 1, attacked).
  // ---------------------------------------------------------------------------------------------

  /** node-postgres sessions (the reader directly, the analyst through the export) and bare protocol batches. */
  const via = (where: "direct" | "export", open: OpenWire) =>
    catalogVia(
      () => harness.client(where),
      () => open(),
    );
  for (const [name, attack] of Object.entries(catalogAttacks)) {
    test(`catalog attack: ${name}`, async () => {
      const directly = via("direct", direct);
      const leaked = await attack(directly, directly);
      assert.ok(v.leaksIn(leaked).length > 0, `the attack is real: ${leaked.slice(-300)}`);
      const crossed = await attack(via("export", exported), directly);
      assert.deepEqual(v.leaksIn(crossed), [], crossed.slice(-300));
    });
  }

  for (const [name, batches] of Object.entries(namedAttacks)) {
    test(`named statement, portal or cursor attack: ${name}`, async () => {
      const leaked = await runBatches(direct, batches, false);
      assert.ok(v.leaksIn(leaked).length > 0, `the attack is real: ${leaked.slice(-300)}`);
      const crossed = await runBatches(exported, batches, true);
      assert.deepEqual(v.leaksIn(crossed), [], crossed.slice(-300));
    });
  }

  // ---------------------------------------------------------------------------------------------
  // Writes and what turns read-only off: refused (their direct halves: the soundness suite).
  // ---------------------------------------------------------------------------------------------

  const writeAttacks: Array<{ name: string; sql: string; setup?: readonly string[] }> = [
    { name: "DO block naming a CHECK constraint after a value, then a failing INSERT", sql: attacks.constraintAttack },
    { name: "INSERT ... generate_series(1, ascii(...)): a command tag counting a value", sql: attacks.countAttack },
    { name: "ALTER ROLE CURRENT_USER SET application_name from a DO block", sql: attacks.alterRoleAttack },
    ...attacks.refusals.map((refusal) => ({ name: refusal.name, sql: refusal.sql, setup: refusal.setup })),
    ...attacks.bypasses.map((bypass) => ({ name: `read-only turned off: ${bypass.name}`, sql: bypass.steps.at(-1)!, setup: bypass.steps.slice(0, -1) })),
  ];
  test("writes, server-side code and what turns read-only off are refused; the connection still reads", async () => {
    for (const attack of writeAttacks)
      await withWire(exported, async (wire) => {
        for (const sql of attack.setup ?? []) assert.deepEqual((await ask(wire, sql)).errors, [], sql);
        // A COPY that starts (CopyInResponse) would wait for data: stop at it, the check fails on it.
        wire.send(encodeQuery(attack.sql));
        const answer = answerOf(await wire.until((m) => m.code === "Z" || m.code === "G", 1, 5000));
        await assertRefused(wire, answer, attack.name);
      });
    const roleSettings = harness.pg.sql(
      `SELECT coalesce(string_agg(array_to_string(setconfig, ','), ';'), '') FROM pg_db_role_setting s JOIN pg_roles r ON r.oid = s.setrole WHERE r.rolname = '${roles.scram.user}'`,
      "app",
    );
    assert.ok(!roleSettings.includes(droppedEmail), "the role setting was not written");
  });

  test("writes in the extended protocol (node-postgres, unnamed and named) are refused", async () => {
    const client = harness.client("export");
    await client.connect();
    try {
      for (const query of attacks.extendedWrites) {
        await assert.rejects(client.query(query), (error: Error & { code?: string }) => /^(25006|42501)$/.test(error.code ?? ""), query.text);
        const after = await client.query({ text: `SELECT email FROM users WHERE id = '${ALLOWED}'`, rowMode: "array" });
        assert.deepEqual(after.rows, [[email(ALLOWED)]], "the connection still works");
      }
    } finally {
      await client.end().catch(() => undefined);
    }
  });

  // ---------------------------------------------------------------------------------------------
  // Side channels with writes allowed: integrity errors, labels, ParameterStatus at the next login.
  // ---------------------------------------------------------------------------------------------

  const raised = [
    ...attacks.integrityAttacks.map((attack) => ({ ...attack, what: "integrity error" })),
    ...attacks.serverCodeMessages.map((attack) => ({ ...attack, what: "server-side code's message" })),
  ];
  for (const attack of raised)
    test(`allowWrites: ${attack.what}, ${attack.name}: the SQLSTATE crosses, the value does not`, async () => {
      const codes = attack.code ? [attack.code] : [];
      const [leaked] = await runStatements(direct, [attack.sql]);
      assert.deepEqual(
        leaked!.errors.map((e) => e.code),
        codes,
      );
      assert.ok(v.leaksIn(leaked!.text).includes(droppedEmail), "directly the value crosses");
      const [answer] = await runStatements(await writable(), [attack.sql]);
      assert.deepEqual(
        answer!.errors.map((e) => e.code),
        codes,
        "the error itself crosses, with its SQLSTATE",
      );
      v.assertClean([answer!], attack.name);
    });

  test("allowWrites: column labels chosen by server-side code do not cross", async () => {
    const { label, statements } = attacks.labelAttack;
    const leaked = await runStatements(direct, statements);
    assert.equal(leaked[4]!.descriptions[0]?.[0]?.name, droppedEmail, "directly the label is the value");
    const answers = await runStatements(await writable(), statements);
    assert.deepEqual(
      answers.slice(0, 2).flatMap((a) => a.errors),
      [],
      "writes (DO) are allowed",
    );
    v.assertClean(answers, "label");
    const labels = answers.flatMap((a) => a.descriptions.flat().map((c) => c.name));
    assert.ok(!labels.includes(label) && !labels.includes(droppedEmail), `a label crossed: ${labels.join(", ")}`);
    assert.deepEqual(
      answers[2]!.descriptions[0]?.map((c) => c.name),
      ["nothing", "accepted", "example", "com"],
      "the client's own aliases cross",
    );
  });

  test("allowWrites: ALTER ROLE from a DO block, then the next login's ParameterStatus does not carry the value", async () => {
    // Through the export the backend role is the export's (credentials): its defaults are what a next login would get.
    const reset = () => harness.pg.sql(`ALTER ROLE ${roles.scram.user} RESET application_name; ALTER ROLE ${roles.scram.user} RESET TimeZone`, "app");
    try {
      const open = await writable();
      const answers = await runStatements(open, [attacks.alterRoleAttack, attacks.timeZoneAttack.alterRole]);
      assert.deepEqual(
        answers.flatMap((a) => a.errors),
        [],
        "writes are allowed",
      );
      v.assertClean(answers, "ALTER ROLE");
      const settings = harness.pg.sql(
        `SELECT array_to_string(setconfig, ',') FROM pg_db_role_setting s JOIN pg_roles r ON r.oid = s.setrole WHERE r.rolname = '${roles.scram.user}'`,
        "app",
      );
      assert.ok(settings.includes(droppedEmail) && attacks.timeZoneAttack.carries(settings), "the check can fail: the role's defaults hold the values");
      const login = await withWire(open, async (wire) => wire.startup);
      v.assertClean([answerOf(login)], "login after ALTER ROLE");
      assert.ok(!attacks.timeZoneAttack.carries(login.map((m) => m.body.toString("latin1")).join()), "TimeZone crossed at login");
      const parameters = new Map(login.filter((m) => m.code === "S").map((m) => Object.values(decodeParameterStatus(m.body)) as [string, string]));
      assert.ok([undefined, ""].includes(parameters.get("application_name")), "application_name crosses only as the client sent it");
    } finally {
      reset();
    }
  });

  // ---------------------------------------------------------------------------------------------
  // Pushdown's own: statements made before a user's change.
  // ---------------------------------------------------------------------------------------------

  test("a statement prepared, bound or declared before a user's erase returns nothing of that user after it (a transaction's snapshot keeps the old verdicts)", async () => {
    const victim = `${ALLOWED}@example.com`;
    const sql = `SELECT email FROM users WHERE email = '${victim}'`;
    assert.deepEqual(await run("direct", sql), [[victim]], "directly, the value is in users");
    const client = harness.client("export");
    await client.connect();
    try {
      const rows = async (query: string | { name: string; text: string }) =>
        JSON.stringify((await client.query(typeof query === "string" ? { text: query, rowMode: "array" } : { ...query, rowMode: "array" })).rows);
      // REPEATABLE READ: every statement of the transaction reads the verdict table as it was at the first.
      await client.query("BEGIN ISOLATION LEVEL REPEATABLE READ");
      await client.query(`PREPARE by_sql AS ${sql}`);
      assert.equal(await rows({ name: "by_protocol", text: sql }), JSON.stringify([[victim]]), "allowed before the erase");
      await client.query(`DECLARE declared CURSOR FOR ${sql}`);
      assert.equal((await call("DELETE", `/user/${ALLOWED}`)).status, 200);
      const after = [await rows("EXECUTE by_sql"), await rows({ name: "by_protocol", text: sql }), await rows("FETCH ALL FROM declared")];
      assert.deepEqual(
        after.filter((text) => text.includes(victim)),
        [],
        "nothing of the erased user after the erase",
      );
      await client.query("COMMIT");
      // A fresh statement reads the new verdicts; the statements made before the erase can be made again.
      assert.equal(await rows(sql), "[]");
    } finally {
      await client.end().catch(() => undefined);
    }
  });
});
