import { test } from "node:test";
import assert from "node:assert/strict";
import { addressOfStateKey, decodeId, desiredOwner, encodeId, hash32, partitionOf, stateKey } from "../../actors/runtime/addressing";

test("hash32 and placement are pinned: changing them would move every actor during a rolling upgrade", () => {
  assert.equal(hash32(""), 2872998923);
  assert.equal(hash32("counter\u0000a"), 1936051571);
  assert.equal(partitionOf("user", "u-42", 64), 16);
  assert.equal(partitionOf("counter", "x", 64), 15);
  assert.equal(desiredOwner(7, ["n1", "n2", "n3"]), "n2");
});

test("partitionOf stays in range and spreads ids evenly", () => {
  const counts = new Array<number>(64).fill(0);
  for (let i = 0; i < 64_000; i++) counts[partitionOf("user", `u${i}`, 64)]++;
  assert.ok(Math.min(...counts) > 800 && Math.max(...counts) < 1200, `per-partition counts ${Math.min(...counts)}..${Math.max(...counts)} around 1000`);
});

test("ids that are not plain key tokens are encoded one-to-one and decoded back", () => {
  for (const id of ["plain_id-1", "with.dot", "with space", "ünïcode", "=looks-encoded", "a/b", "*", ">", "x".repeat(300)]) {
    const encoded = encodeId(id);
    assert.match(encoded, /^[-/_=.A-Za-z0-9]+$/);
    assert.ok(!encoded.includes("."), "one key token");
    assert.equal(decodeId(encoded), id);
    assert.deepEqual(addressOfStateKey(stateKey("user", id)), { type: "user", id });
  }
  assert.equal(encodeId("plain_id-1"), "plain_id-1", "plain ids stay readable");
  assert.notEqual(encodeId("=looks-encoded"), "=looks-encoded");
});

test("rendezvous placement: every node computes the same owner, and a join moves only partitions to the newcomer", () => {
  const before = ["n1", "n2", "n3"];
  const after = ["n1", "n2", "n3", "n4"];
  let moved = 0;
  for (let p = 0; p < 256; p++) {
    const owner = desiredOwner(p, before)!;
    assert.equal(owner, desiredOwner(p, [...before].reverse()), "independent of the order nodes are listed in");
    const next = desiredOwner(p, after)!;
    if (next !== owner) {
      assert.equal(next, "n4", "a partition only ever moves to the node that joined");
      moved++;
    }
  }
  assert.ok(moved > 30 && moved < 100, `about a quarter moved (${moved} of 256)`);
  assert.equal(desiredOwner(0, []), undefined);
});

test("rendezvous placement gives every node a fair share", () => {
  const counts = new Map<string, number>();
  for (let p = 0; p < 64; p++) {
    const owner = desiredOwner(p, ["n1", "n2", "n3"])!;
    counts.set(owner, (counts.get(owner) ?? 0) + 1);
  }
  for (const [node, owned] of counts) assert.ok(owned >= 12 && owned <= 30, `${node} owns ${owned} of 64`);
});
