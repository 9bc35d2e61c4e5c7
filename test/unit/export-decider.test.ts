import { test } from "node:test";
import assert from "node:assert/strict";
import type { EventLog } from "../../actors/runtime/event-log";
import { compilePolicy } from "../../decision/compiled-policy";
import { ExportDecider } from "../../exports/export-decider";
import type { DecisionService } from "../../ports/decision-service";
import { realisticPolicy } from "../../testkit/policy";

const after = <T>(ms: number, value: T) => new Promise<T>((resolve) => setTimeout(() => resolve(value), ms));

// The real race is bench/mysql-export.ts's (8 mysql2 connections whose first rows name the same user at once, against MariaDB):
// 7 of its 8 first point selects came back empty. Here the same interleaving is set by timers, so it happens every run.
test("loads of one user at once (8 connections' first rows): one decision, traced once, and each caller finds the verdict when its load returns", async () => {
  const compiled = compilePolicy(realisticPolicy(), 1);
  const traced: Array<Record<string, unknown>> = [];
  let reads = 0;
  const decisions = {
    currentPolicy: () => compiled,
    policy: async () => compiled,
    onUserChange: () => () => undefined,
    onUsersReset: () => () => undefined,
    // Each read of the user's state answers later than the one before: a load decides while an earlier load's record is still on its way.
    userState: () => after(++reads * 2, null),
  } as unknown as DecisionService;
  const events = {
    trace: (_door: string, _flow: string, record: Record<string, unknown>) => {
      traced.push(record);
      return after(20, undefined);
    },
  } as unknown as EventLog;
  const decider = new ExportDecider(decisions, events, "node-1", "export-1", { type: "platformUse", purposeId: "service" }, "users-table");
  try {
    const found = await Promise.all(Array.from({ length: 8 }, () => decider.load(["alice"]).then(() => decider.verdict("alice"))));
    assert.equal(
      found.filter((verdict) => verdict === undefined).length,
      0,
      "no caller finds the user undecided once its load returned (its row would be dropped)",
    );
    assert.equal(traced.length, 1, "the user is decided and traced once, not once per load");
    assert.equal(traced[0]!.userId, "alice");
    assert.equal(reads, 8, "every load read the state: they all began before any decided");
  } finally {
    decider.close();
  }
});
