import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { settledCall } from "../../ports/settled-call";

const failing = (code: string) => Object.assign(new Error(code), { code });

describe("settledCall (ports/settled-call.ts)", () => {
  for (const code of ["DEADLINE_EXCEEDED", "OUTCOME_UNKNOWN", "EXPIRED_BEFORE_START"])
    test(`${code} is asked again until the call answers`, async () => {
      let calls = 0;
      const answer = await settledCall(async () => {
        if (++calls < 3) throw failing(code);
        return "done";
      }, 5000);
      assert.equal(answer, "done");
      assert.equal(calls, 3);
    });

  test("any other error is thrown at once", async () => {
    let calls = 0;
    await assert.rejects(
      settledCall(async () => {
        calls++;
        throw failing("NOT_FOUND");
      }, 5000),
      /NOT_FOUND/,
    );
    assert.equal(calls, 1);
  });

  test("an outcome still unknown after the settle time is thrown", async () => {
    let calls = 0;
    const started = Date.now();
    await assert.rejects(
      settledCall(async () => {
        calls++;
        throw failing("OUTCOME_UNKNOWN");
      }, 600),
      /OUTCOME_UNKNOWN/,
    );
    assert.ok(calls >= 2 && calls <= 3, `asked ${calls} times`);
    assert.ok(Date.now() - started < 1000);
  });
});
