import { test } from "node:test";
import assert from "node:assert/strict";
import { EndpointAllowList } from "../../exports/endpoint-allow-list";

test("an empty list is no list: every endpoint is allowed", () => {
  assert.equal(EndpointAllowList.parse(""), undefined);
  assert.equal(EndpointAllowList.parse(" , "), undefined);
});

test("hosts, ports, subdomains, IPv6 and URLs; names without case or final dot; nothing else passes", () => {
  const list = EndpointAllowList.parse("db.example.org:5432, *.stores.internal, 10.0.0.5:*, [fd00::1]:3306, fhir.example.org")!;
  for (const endpoint of [
    "db.example.org:5432",
    "DB.Example.org.:5432",
    "pg.stores.internal:5432",
    "a.b.stores.internal:1",
    "10.0.0.5:9000",
    "[fd00::1]:3306",
    "[FD00:0::1]:3306",
    "http://fhir.example.org/fhir",
    "https://s3.stores.internal:9000",
  ])
    assert.equal(list.problem(endpoint), undefined, endpoint);
  for (const endpoint of [
    "db.example.org:5433",
    "db.example.org.evil.com:5432",
    "evil-db.example.org:5432",
    "stores.internal:5432",
    "evilstores.internal:5432",
    "10.0.0.50:9000",
    "[fd00::2]:3306",
    "https://fhirexample.org/fhir",
    "http://user@evil.com/",
    "nowhere",
  ])
    assert.match(list.problem(endpoint)!, /is not in the allow-list|names no host/, endpoint);
  assert.equal(list.problem(undefined), undefined, "an export without a backing store (pipeline) has nothing to check");
});

test("IPv4 written another way is the same address, and matches (or not) as such", () => {
  const list = EndpointAllowList.parse("127.0.0.1:8080")!;
  assert.equal(list.problem("http://0x7f.1:8080/"), undefined);
  assert.match(list.problem("http://0x7f.2:8080/")!, /not in the allow-list/);
});

test("bad patterns are refused, naming the pattern", () => {
  for (const [raw, message] of [
    ["db.example.org:70000", /'db.example.org:70000': port 70000 is out of range/],
    ["http://db.example.org", /'http:\/\/db.example.org' is not a host pattern/],
    ["*", /'\*' is not a host pattern/],
    ["db.*.org", /is not a host pattern/],
    ["::1", /is not a host pattern/],
  ] as const)
    assert.throws(() => EndpointAllowList.parse(raw), message);
});
