import { test } from "node:test";
import assert from "node:assert/strict";
import { rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { rootCertificates } from "node:tls";
import { bindDn, escapeDnValue, isAttributeType, isDistinguishedName } from "../../auth/dn";
import { SecurityConfigError } from "../../auth/types";
import { filterValue, ldapVerifierFactory } from "../../auth/verifiers/ldap-verifier";
import { tempDir } from "../../testkit/temp";

test("escapeDnValue escapes exactly the RFC 4514 specials, '=', edge spaces, a leading '#' and NUL", () => {
  const cases: Array<[string, string]> = [
    ["alice", "alice"],
    ["", ""],
    ["a,b+c", "a\\,b\\+c"],
    ['"<>;\\=', '\\"\\<\\>\\;\\\\\\='],
    [" a b ", "\\ a b\\ "],
    [" ", "\\ "],
    ["  ", "\\ \\ "],
    ["#a#", "\\#a#"],
    ["a\u0000b", "a\\00b"],
    ["*()!&|", "*()!&|"],
    ["Jürgen 😀", "Jürgen 😀"],
    ["x,uid=alice", "x\\,uid\\=alice"],
  ];
  for (const [value, escaped] of cases) assert.equal(escapeDnValue(value), escaped, JSON.stringify(value));
});

test("every escaped value is one well-formed RDN value that unescapes to the original", () => {
  const alphabet = [" ", "#", ",", "+", '"', "\\", "<", ">", ";", "=", "\u0000", "a"];
  const unescaped = (text: string) => text.replace(/\\(00|.)/g, (_, c: string) => (c === "00" ? "\u0000" : c));
  let values = [""];
  for (let length = 1; length <= 3; length++) {
    values = values.flatMap((prefix) => alphabet.map((char) => prefix + char));
    for (const value of values) {
      const escaped = escapeDnValue(value);
      assert.ok(isDistinguishedName(`uid=${escaped},dc=example`), JSON.stringify(value));
      assert.equal(unescaped(escaped), value);
    }
  }
});

test("isAttributeType takes descriptors and numeric OIDs only", () => {
  for (const name of ["uid", "cn", "sAMAccountName", "x-custom-1", "2.5.4.3", "0.9.2342.19200300.100.1.1"]) assert.ok(isAttributeType(name), name);
  for (const name of ["", "1uid", "uid ", " uid", "u_id", "uid=", "-uid", "1", "01.2", "1..2", "1.2.", "uid;binary"]) assert.ok(!isAttributeType(name), name);
});

test("isDistinguishedName checks RFC 4514 syntax", () => {
  const good = [
    "",
    "dc=org",
    "ou=people,dc=example,dc=org",
    "cn=a\\,b,dc=x",
    "cn=a+sn=b,dc=x",
    "cn=#04024869",
    "2.5.4.3=x",
    "cn=",
    "cn=\\ a\\ ",
    "cn=a\\2Cb",
    "cn=x=y",
    "cn=a b",
    "cn=a#",
    "cn=Jürgen",
  ];
  const bad = [
    "dc=example;dc=org",
    "dc=example, dc=org",
    "dc=example,",
    ",dc=org",
    "example",
    "dc=a\\zz",
    "dc=a\\",
    "cn= a",
    "cn=a ",
    "cn=#zz",
    "cn=#",
    "cn=#a",
    'cn=a"b',
    "=x",
    "cn=a\u0000",
    "cn=a<b",
    "cn=a+",
    "1uid=x",
  ];
  for (const dn of good) assert.ok(isDistinguishedName(dn), dn);
  for (const dn of bad) assert.ok(!isDistinguishedName(dn), dn);
});

test("bindDn escapes only the user name and joins with ','", () => {
  assert.equal(bindDn("uid", "alice", "ou=people,dc=example,dc=org"), "uid=alice,ou=people,dc=example,dc=org");
  assert.equal(bindDn("uid", "x,uid=alice", "ou=people,dc=example,dc=org"), "uid=x\\,uid\\=alice,ou=people,dc=example,dc=org");
  assert.equal(bindDn("cn", "admin,dc=example", ""), "cn=admin\\,dc\\=example");
  assert.equal(bindDn("2.5.4.3", "#1 ", "dc=org"), "2.5.4.3=\\#1\\ ,dc=org");
});

const path = "verifiers[0].profiles[1].configuration";

function configError(raw: Record<string, unknown> | undefined, property: string): void {
  assert.throws(
    () => ldapVerifierFactory.parse(raw, path),
    (error: unknown) => error instanceof SecurityConfigError && error.path === `${path}.${property}` && error.message.startsWith(`${path}.${property}: `),
    JSON.stringify(raw),
  );
}

test("parse: defaults, and accepted host names", () => {
  assert.deepEqual(ldapVerifierFactory.parse({ hostname: "ldap.example.org" }, path), {
    hostname: "ldap.example.org",
    useTLS: false,
    nameComponent: "uid",
    rootComponents: "",
  });
  assert.deepEqual(
    ldapVerifierFactory.parse({ hostname: "10.0.0.1:636", useTLS: true, nameComponent: "cn", rootComponents: "ou=people,dc=example,dc=org" }, path),
    {
      hostname: "10.0.0.1:636",
      useTLS: true,
      nameComponent: "cn",
      rootComponents: "ou=people,dc=example,dc=org",
    },
  );
  for (const hostname of ["localhost", "ldap:389", "ldap.example.org:65535", "127.0.0.1", "[::1]", "[::1]:3389", "[2001:db8::7]:1", "1host.example"]) {
    assert.equal(ldapVerifierFactory.parse({ hostname }, path).hostname, hostname);
  }
});

test("parse: each bad property names its path", () => {
  configError(undefined, "hostname");
  configError({}, "hostname");
  configError({ hostname: "ldap", bindPassword: "x" }, "bindPassword");
  for (const hostname of [
    42,
    "",
    "ldap://ldap",
    "ldap:0",
    "ldap:65536",
    "ldap:",
    "ldap:abc",
    "ldap:+1",
    "::1",
    "[::1",
    "[::1]389",
    "[zz]:389",
    "-ldap",
    "ld_ap",
    "10.0.0.300",
    "a..b",
    "ldap:389:1",
    "ldap.",
    "a b",
  ]) {
    configError({ hostname }, "hostname");
  }
  configError({ hostname: "ldap", useTLS: "true" }, "useTLS");
  for (const nameComponent of ["", "u id", "uid=", 5]) configError({ hostname: "ldap", nameComponent }, "nameComponent");
  for (const rootComponents of ["dc=example; dc=org", "dc=example, dc=org", "example.org", "dc=a;;dc=b", 7])
    configError({ hostname: "ldap", rootComponents }, "rootComponents");
  // Spec 5.5's form: ';' between components, read as RFC 4514's ','; an escaped ';' stays in its value.
  assert.equal(
    ldapVerifierFactory.parse({ hostname: "ldap", rootComponents: "ou=people;dc=example;dc=org" }, path).rootComponents,
    "ou=people,dc=example,dc=org",
  );
  assert.equal(ldapVerifierFactory.parse({ hostname: "ldap", rootComponents: "o=a\\;b;dc=org" }, path).rootComponents, "o=a\\;b,dc=org");
});

test("parse: caFile must be readable PEM and only goes with useTLS; describe shows the path, not the certificates", () => {
  const dir = tempDir("ldap-ca");
  const good = join(dir, "ca.pem");
  writeFileSync(good, rootCertificates[0]);
  const notPem = join(dir, "not.pem");
  writeFileSync(notPem, "hello\n");
  configError({ hostname: "ldap", useTLS: true, caFile: join(dir, "missing.pem") }, "caFile");
  configError({ hostname: "ldap", useTLS: true, caFile: notPem }, "caFile");
  configError({ hostname: "ldap", useTLS: true, caFile: 1 }, "caFile");
  configError({ hostname: "ldap", caFile: good }, "caFile");
  const configuration = ldapVerifierFactory.parse({ hostname: "ldap", useTLS: true, caFile: good }, path);
  assert.equal(configuration.caCertificates, rootCertificates[0]);
  assert.deepEqual(ldapVerifierFactory.describe(configuration), { hostname: "ldap", useTLS: true, nameComponent: "uid", rootComponents: "", caFile: good });
  rmSync(dir, { recursive: true, force: true });
});

test("group search filters: a user name or DN is escaped as an RFC 4515 value, so it cannot change the filter", () => {
  assert.equal(filterValue("alice"), "alice");
  assert.equal(filterValue("*"), "\\2a");
  assert.equal(filterValue("a)(uid=*"), "a\\29\\28uid=\\2a");
  assert.equal(filterValue("back\\slash"), "back\\5cslash");
  assert.equal(filterValue("nul\0"), "nul\\00");
  assert.equal(filterValue("é"), "\\c3\\a9");
  assert.equal(filterValue("uid=alice,ou=people,dc=example,dc=org"), "uid=alice,ou=people,dc=example,dc=org");
});
