import { test } from "node:test";
import assert from "node:assert/strict";
import { auditSource, maxKindsPerSource, maxKindsPerWindow, RepeatedAudit } from "../../auth/repeated-audit";

test("a source that varies what makes a kind (user names, reasons) gets maxKindsPerSource records at once, the rest counted as one kind", () => {
  const written: Array<{ message: string; count: number }> = [];
  const audit = new RepeatedAudit((message, _details, count) => written.push({ message, count }));
  for (let i = 0; i < 1000; i++) audit.record(`config|198.51.100.7|user-${i}`, `refused user-${i}`, {}, "config|198.51.100.7");
  assert.equal(written.length, maxKindsPerSource + 1, "one record per kind up to the bound, then one for the rest");
  assert.match(written.at(-1)!.message, /and others from the same source/);
  // Another source is not held back by the first one's flood.
  audit.record("config|203.0.113.9|alice", "refused alice", {}, "config|203.0.113.9");
  assert.equal(written.length, maxKindsPerSource + 2);
  // Without a source (kinds the client cannot vary), nothing is folded.
  for (let i = 0; i < 30; i++) audit.record(`kind-${i}`, `k${i}`, {});
  assert.equal(written.length, maxKindsPerSource + 32);
});

test("IPv6 addresses count by their /64, IPv4 (and IPv4-mapped) by the address", () => {
  assert.equal(auditSource("192.0.2.1"), "192.0.2.1");
  assert.equal(auditSource("::ffff:192.0.2.1"), "::ffff:192.0.2.1");
  assert.equal(auditSource("2001:db8:1:2:aaaa::1"), "2001:db8:1:2::/64");
  assert.equal(auditSource("2001:db8:1:2:bbbb:cccc:dddd:eeee"), "2001:db8:1:2::/64");
  assert.equal(auditSource("2001:db8::1"), "2001:db8:0:0::/64");
  assert.equal(auditSource("::1"), "0:0:0:0::/64");
  assert.equal(auditSource("fe80::1%eth0"), "fe80:0:0:0::/64");
});

test("many sources together open at most maxKindsPerWindow kinds a minute: rotating addresses does not write a record per request", () => {
  const written: string[] = [];
  const audit = new RepeatedAudit((message) => written.push(message));
  // 5,000 addresses of one IPv6 /48, each its own /64 source, each refused once.
  for (let i = 0; i < 5000; i++) {
    const address = `2001:db8:1:${i.toString(16)}::1`;
    audit.record(`config|${address}|user-${i}`, `refused user-${i}`, {}, `config|${auditSource(address)}`);
  }
  assert.equal(written.length, maxKindsPerWindow + 1, `${written.length} records for 5,000 refusals`);
  assert.match(written.at(-1)!, /past 1000 kinds from all sources/);
});
