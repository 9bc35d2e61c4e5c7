import { test } from "node:test";
import assert from "node:assert/strict";
import { msPastCallerDeadline, runDeadline } from "../../actors/runtime/call-deadline";

const skewMs = 250;
const callerDeadline = 1_700_000_000_000;

test("a call is refused only once its caller's deadline and the skew margin have both passed", () => {
  assert.ok(msPastCallerDeadline(callerDeadline, callerDeadline - 1000, skewMs) < 0, "before the deadline: it runs");
  assert.ok(msPastCallerDeadline(callerDeadline, callerDeadline + skewMs - 1, skewMs) < 0, "within the margin: a clock ahead is forgiven");
  assert.equal(msPastCallerDeadline(callerDeadline, callerDeadline + skewMs, skewMs), 0, "at the margin's end: refused");
  assert.equal(msPastCallerDeadline(callerDeadline, callerDeadline + 5000, skewMs), 5000 - skewMs, "held in transit for seconds: refused, and by how much");
});

test("a call without the caller's deadline (an older node's) is never refused and keeps the time it was sent with", () => {
  const past = msPastCallerDeadline(undefined, callerDeadline + 60_000, skewMs);
  assert.ok(past < 0, "not refused");
  assert.equal(runDeadline(100, 5000, past), 5100, "its full time left, counted from arrival, as before the field existed");
});

test("a late call that may still start gets only the time its caller has left, not its full timeout from arrival", () => {
  // Sent with 5 s left, held 4.5 s in transit: 0.5 s left by the caller's clock, plus the margin.
  const past = msPastCallerDeadline(callerDeadline, callerDeadline - 500, skewMs);
  assert.equal(runDeadline(100, 5000, past), 100 + 500 + skewMs);
  // Arrived at once: the time left when sent is the tighter bound (a clock behind gains the call nothing).
  const prompt = msPastCallerDeadline(callerDeadline, callerDeadline - 5000, skewMs);
  assert.equal(runDeadline(100, 5000, prompt), 5100);
});
