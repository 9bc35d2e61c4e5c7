// Issue 27, part 3: "restart and failover rebuild or verify the table". The verdict table of a
// pushdown export is tampered with directly in PostgreSQL (the allowed user's row renamed to the
// dropped user's: the dropped user gets every category, the allowed user none; the version row
// raised so the guard passes). The serving node trusts its table while it runs (shown: the
// tampered table answers), so the check can fail. Then the serving node is SIGKILLed and a second
// node takes the export over (failover), and, tampered again, that node is SIGKILLed and a new
// node started (restart): each time the first statement answered through the export reads rebuilt
// verdicts (the dropped user's values absent, the allowed user's present), never the tampered ones.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { until } from "../../testkit/wait";
import { ALLOWED, DROPPED, PushdownHarness } from "../fixtures/postgres-pushdown";

describe("PostgreSQL exports with pushdown: restart and failover rebuild the verdict table", () => {
  const harness = new PushdownHarness();
  const { run } = harness;
  const allowedEmail = `${ALLOWED}@example.com`;
  const droppedEmail = `${DROPPED}@example.com`;
  const check = `SELECT email FROM users WHERE email IN ('${allowedEmail}', '${droppedEmail}') ORDER BY 1`;
  const rebuilt = [[allowedEmail]];

  before(() => harness.start("pushdown-restart"));
  after(() => harness.stop());

  /** Renames the allowed user's verdict row to the dropped user and raises the version, as the table's owner could directly. */
  const tamper = async () => {
    const [[table]] = (await run(
      "direct",
      "SELECT relname FROM pg_catalog.pg_class WHERE relnamespace = 'warden'::regnamespace AND relname LIKE 'verdicts%'",
    )) as [[string]];
    harness.pg.sql(
      `UPDATE warden."${table}" SET user_id = '${DROPPED}' WHERE user_id = '${ALLOWED}'; UPDATE warden.verdict_versions SET version = version + 1`,
      "app",
    );
    const users = (await run("direct", `SELECT user_id FROM warden."${table}"`)).flat();
    assert.ok(users.includes(DROPPED) && !users.includes(ALLOWED), "the table is tampered with");
  };

  /**
   * Every answer through the export while the serving node is replaced: connections refused until
   * a node serves it again, then the first answer is the one checked (no probe statement before it).
   */
  const firstAnswers: unknown[][][] = [];
  const answersAfterKill = async () => {
    const rows = await run("export", check).catch(() => undefined);
    if (rows === undefined) return false;
    firstAnswers.push(rows);
    return true;
  };
  const answers = (sql: string) =>
    run("export", sql).then(
      () => true,
      () => false,
    );

  test("a second node taking over after SIGKILL, then a new node after SIGKILL of that one, answer from rebuilt verdicts", async () => {
    const started = Date.now();
    // The export opens asynchronously after PUT /export: wait until it answers before the first check.
    await until("the export answers", () => answers(check), 30_000);
    assert.deepEqual(await run("export", check), rebuilt, "before tampering: the allowed user's email only");
    // A second node joins: partitions are rebalanced (the export may move); wait until that is done.
    const second = await harness.startNode("pushdown-restart-2");
    await until("the second node owns partitions", async () => ((await second.readiness()).body.checks?.partitions?.detail?.ownedHere ?? 0) > 0, 30_000);
    await until("the export answers with two nodes", () => answers(check), 30_000);
    // Partitions may move more than once while the second node joins: tamper only once the export stays where it is.
    let servedBefore: string | undefined;
    let steady = 0;
    await until(
      "the export stays on one node for 3 s",
      async () => {
        const serving = (await harness.call("GET", `/export?id=${harness.exportId}`)).body.serving?.nodeId as string | undefined;
        steady = serving !== undefined && serving === servedBefore && (await answers(check)) ? steady + 1 : 0;
        servedBefore = serving;
        if (steady < 3) await new Promise((resolve) => setTimeout(resolve, 1000));
        return steady >= 3;
      },
      60_000,
    );

    await tamper();
    assert.deepEqual(await run("export", check), [[droppedEmail]], "the serving node reads the tampered table (the check can fail)");
    // Failover: the node serving the export is killed; the other takes it over.
    const servedBy = (await harness.call("GET", `/export?id=${harness.exportId}`)).body.serving?.nodeId;
    const victim = harness.nodes.find((node) => node.options.nodeId === servedBy);
    assert.ok(victim, `a node reports serving the export (${servedBy})`);
    harness.node = harness.nodes.find((node) => node !== victim)!;
    await victim.kill();
    await until("the export answers after failover", answersAfterKill, 30_000);
    assert.deepEqual(firstAnswers, [rebuilt], "the first answer after failover is from rebuilt verdicts");
    assert.equal((await harness.call("GET", `/export?id=${harness.exportId}`)).body.serving?.nodeId, harness.node.options.nodeId);

    await tamper();
    assert.deepEqual(await run("export", check), [[droppedEmail]], "the surviving node reads the tampered table (the check can fail)");
    await harness.node.kill();
    harness.node = await harness.startNode("pushdown-restart-3");
    firstAnswers.length = 0;
    await until("the export answers after a restart", answersAfterKill, 30_000);
    assert.deepEqual(firstAnswers, [rebuilt], "the first answer after a restart is from rebuilt verdicts");
    console.log(`# failover and restart with tampered verdict tables: ${Date.now() - started} ms`);
  });
});
