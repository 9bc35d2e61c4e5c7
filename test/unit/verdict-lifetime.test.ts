import { describe, test } from "node:test";
import assert from "node:assert/strict";
import type { KV, KvWatchEntry } from "@nats-io/kv";
import pino from "pino";
import { verdictBackstopMs, verdictExpiry } from "../../decision/verdict-lifetime";
import { VerdictInterner } from "../../decision/verdicts";
import { StateCache } from "../../actors/runtime/state-cache";
import { RemoteDecider } from "../../proxies/postgres/remote-decider";
import { VerdictMemo } from "../../decision/verdict-memo";
import type { DecideAnswer } from "../../proxies/postgres/worker-messages";

const at = (iso: string) => Date.parse(iso);

describe("how long an export keeps a verdict", () => {
  test("the backstop, spread over a tenth more, but never past the end of the UTC day (age overrides change with the day)", () => {
    const morning = at("2026-11-22T08:00:00Z");
    assert.equal(verdictExpiry(morning, 0), morning + verdictBackstopMs);
    assert.equal(verdictExpiry(morning, 0.999), morning + verdictBackstopMs + Math.floor(0.999 * (verdictBackstopMs / 10)));
    const spread = new Set(Array.from({ length: 50 }, () => verdictExpiry(morning)));
    assert.ok(spread.size > 1 && [...spread].every((expiry) => expiry >= morning + verdictBackstopMs && expiry < morning + verdictBackstopMs * 1.1));
    assert.equal(verdictExpiry(at("2026-11-22T23:55:00Z"), 0), at("2026-11-23T00:00:00Z"));
    assert.equal(verdictExpiry(at("2026-11-22T23:59:59.999Z"), 0.5), at("2026-11-23T00:00:00Z"));
  });

  test("a proxy worker keeps a verdict no longer than the node said, and forgets all when told changes may have been missed", async () => {
    const expiresAt = Date.now() + 900;
    const answer: DecideAnswer = {
      mapping: { key: "m1", fields: new Map() },
      verdicts: [
        { userId: "u1", allowed: true, reason: "T", categories: ["contact"], expiresAt },
        { userId: "u2", allowed: false, reason: "N", categories: [], expiresAt: Date.now() + 60_000 },
      ],
    };
    const decider = new RemoteDecider(answer.mapping, new VerdictInterner(), () => Promise.resolve(answer));
    await decider.load(["u1", "u2"]);
    assert.equal(decider.verdict("u1")?.allowed, true);
    assert.equal(decider.expiresAt("u1"), expiresAt);
    // The clock is read twice a second: past the node's expiry (and a tick), the verdict is gone.
    await new Promise((resolve) => setTimeout(resolve, 1600));
    assert.equal(decider.verdict("u1"), undefined);
    assert.equal(decider.expiresAt("u1"), undefined);
    assert.equal(decider.verdict("u2")?.allowed, false);
    decider.forgetAll();
    assert.equal(decider.verdict("u2"), undefined);
  });

  test("the verdict memo: a verdict made under another revision is stale, the bound starts over, and a failed decision forgets only its own entry", () => {
    const memo = new VerdictMemo<{ madeUnder: number; expiresAt: number; allowed: boolean }>(3);
    memo.set("u1", { madeUnder: 7, expiresAt: Infinity, allowed: true });
    assert.equal(memo.get("u1", 7)?.allowed, true);
    assert.equal(memo.get("u1", 8), undefined, "made under revision 7, asked under 8");
    assert.equal(memo.peek("u1"), undefined, "a stale entry is dropped when found");
    memo.set("u1", { madeUnder: 8, expiresAt: Date.now() - 10_000, allowed: true });
    assert.equal(memo.get("u1", 8), undefined, "past its lifetime");
    for (const user of ["a", "b", "c"]) memo.set(user, { madeUnder: 8, expiresAt: Infinity, allowed: false });
    assert.equal(memo.size, 3);
    memo.set("d", { madeUnder: 8, expiresAt: Infinity, allowed: false });
    assert.deepEqual([memo.has("a"), memo.has("d"), memo.size], [false, true, 1], "past the bound the memo starts over");
    const older = memo.peek("d")!;
    const newer = { madeUnder: 8, expiresAt: Infinity, allowed: true };
    memo.set("d", newer);
    memo.forget("d", older);
    assert.equal(memo.get("d", 8), newer, "forgetting an older entry leaves the newer decision");
    memo.forget("d", newer);
    assert.equal(memo.has("d"), false);
  });
});

describe("StateCache", () => {
  test("a watch that ends empties the cache and tells listeners to forget what they derived (reset), then watches again", async () => {
    let watches = 0;
    // A watch that delivers one change, then ends as a lost watch does.
    const kv = {
      watch: async () => {
        watches++;
        const entries = (async function* (): AsyncGenerator<Partial<KvWatchEntry>> {
          if (watches === 1) yield { key: "user.u1", operation: "PUT", revision: 2, json: <T>() => ({ name: "changed" }) as T };
        })();
        return Object.assign(entries, { stop: () => undefined });
      },
      get: async () => null,
    } as unknown as KV;
    const cache = new StateCache<{ name: string } | null>(kv, { type: "user", initialState: () => null, handlers: {} }, pino({ level: "silent" }));
    const events: string[] = [];
    cache.on("change", (id: string) => events.push(`change ${id}`));
    cache.on("reset", () => events.push("reset"));
    await cache.start();
    const deadline = Date.now() + 5000;
    while (watches < 2 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));
    cache.stop();
    assert.deepEqual(events.slice(0, 2), ["change u1", "reset"]);
    assert.ok(watches >= 2, "the watch was started again");
    assert.equal(cache.peek("u1"), undefined, "nothing from before the reset is kept");
  });
});
