import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { createServer, type Server } from "node:net";
import { CredentialRejected, VerifierUnavailable, type Credential, type Verifier } from "../../auth/types";
import { ldapVerifierFactory } from "../../auth/verifiers/ldap-verifier";
import { freePort } from "../../testkit/ports";
import { SlapdServer } from "../../testkit/slapd";

const suffix = "dc=example,dc=org";
const people = `ou=people,${suffix}`;
const alice = { uid: "alice", password: "alice-secret" };
/** Real entries whose names need escaping: a wrong escape makes their right password fail. */
const commaPlus = { uid: "smith, j+r", password: "comma-plus-secret" };
const specials = { uid: '#hash "quoted" <angle>;back\\slash=equals', password: "specials-secret" };
const dependencies = { replayGuard: { firstUse: async () => true } };

function ldapVerifier(configuration: Record<string, unknown>): Verifier {
  return ldapVerifierFactory.create("corp", ldapVerifierFactory.parse(configuration, "verifiers[0].profiles[0].configuration"), dependencies);
}

function namepwd(user: string, password: string): Credential {
  return { type: "namepwd", user, password };
}

async function assertRejected(verifier: Verifier, credential: Credential): Promise<void> {
  await assert.rejects(verifier.verify(credential), CredentialRejected, JSON.stringify(credential));
}

describe("LDAP verifier against OpenLDAP slapd", () => {
  let slapd: SlapdServer;
  let verifier: Verifier;
  let closedPort: number;

  before(async () => {
    slapd = await SlapdServer.start({ suffix, users: [alice, commaPlus, specials], tls: true });
    verifier = ldapVerifier({ hostname: `127.0.0.1:${slapd.port}`, rootComponents: people });
    closedPort = await freePort();
  });

  after(async () => {
    await slapd?.stop();
  });

  test("the right password binds: the subject is the user name as given, with no assertions", async () => {
    for (const user of [alice, commaPlus, specials]) {
      assert.deepEqual(await verifier.verify(namepwd(user.uid, user.password)), { subject: user.uid, assertions: [] }, user.uid);
    }
  });

  test("a name the directory matches in another case binds as the stored entry, and its subject is the stored name, never the typed one", async () => {
    // slapd matches uid case-insensitively: "ALICE" binds as alice's entry. Reported as "ALICE" it was another user id (and rule subject) than alice's.
    for (const typed of ["ALICE", "Alice", "aLiCe"])
      assert.deepEqual(await verifier.verify(namepwd(typed, alice.password)), { subject: alice.uid, assertions: [] }, typed);
    assert.deepEqual(await verifier.verify(namepwd(commaPlus.uid.toUpperCase(), commaPlus.password)), { subject: commaPlus.uid, assertions: [] });
    await assertRejected(verifier, namepwd("ALICE", "wrong"));
  });

  test("a wrong password, an unknown user, an empty password or another credential type is CredentialRejected", async () => {
    await assertRejected(verifier, namepwd(alice.uid, "wrong"));
    await assertRejected(verifier, namepwd(alice.uid, commaPlus.password));
    await assertRejected(verifier, namepwd("bob", alice.password));
    await assertRejected(verifier, namepwd(alice.uid, ""));
    await assertRejected(verifier, namepwd("", alice.password));
    await assertRejected(verifier, { type: "rawBearerToken", token: alice.password });
  });

  test("user names that try to change the bind DN are CredentialRejected, whichever known password comes with them", async () => {
    const attempts = [
      "*",
      `admin,${people}`,
      "x,uid=alice",
      `alice,${people}`,
      "alice)(uid=*",
      "\\",
      "#alice",
      " alice",
      "alice ",
      "alice\u0000",
      "alice\u0000x",
      "smith",
      "smith, j",
      "j+r",
      "smith\\, j\\+r",
      "smith\\2C j\\2Br",
      "cn=admin",
      "x,cn=admin",
      "#hash",
      '"quoted"',
    ];
    for (const user of attempts) {
      for (const password of [alice.password, commaPlus.password, specials.password, "admin"]) await assertRejected(verifier, namepwd(user, password));
    }
  });

  test("refused names and empty passwords are decided without the server: a closed port still gives CredentialRejected", async () => {
    const nowhere = ldapVerifier({ hostname: `127.0.0.1:${closedPort}`, rootComponents: people });
    await assertRejected(nowhere, namepwd(alice.uid, ""));
    await assertRejected(nowhere, namepwd("", alice.password));
    await assertRejected(nowhere, namepwd("alice\u0000", alice.password));
    await assertRejected(nowhere, namepwd(" alice", alice.password));
    await assertRejected(nowhere, namepwd("\uFF41lice", alice.password));
    await assertRejected(nowhere, namepwd("a".repeat(257), alice.password));
    await assertRejected(nowhere, { type: "rawBearerToken", token: "t" });
  });

  test("a server that is down or hangs up is VerifierUnavailable", async () => {
    const nowhere = ldapVerifier({ hostname: `127.0.0.1:${closedPort}`, rootComponents: people });
    await assert.rejects(nowhere.verify(namepwd(alice.uid, alice.password)), VerifierUnavailable);
    const hangUp: Server = createServer((socket) => socket.destroy());
    const port = await freePort();
    await new Promise<void>((resolve) => hangUp.listen(port, "127.0.0.1", resolve));
    try {
      const rude = ldapVerifier({ hostname: `127.0.0.1:${port}`, rootComponents: people });
      await assert.rejects(rude.verify(namepwd(alice.uid, alice.password)), VerifierUnavailable);
    } finally {
      await new Promise((resolve) => hangUp.close(resolve));
    }
  });

  test("useTLS: ldaps with the server's CA in caFile verifies; without it the certificate is refused (VerifierUnavailable)", async () => {
    const trusted = ldapVerifier({ hostname: `127.0.0.1:${slapd.tlsPort}`, useTLS: true, caFile: slapd.caFile, rootComponents: people });
    assert.deepEqual(await trusted.verify(namepwd(commaPlus.uid, commaPlus.password)), { subject: commaPlus.uid, assertions: [] });
    await assertRejected(trusted, namepwd(commaPlus.uid, alice.password));
    const untrusting = ldapVerifier({ hostname: `127.0.0.1:${slapd.tlsPort}`, useTLS: true, rootComponents: people });
    await assert.rejects(untrusting.verify(namepwd(alice.uid, alice.password)), VerifierUnavailable);
  });

  test("checkEndpoints passes against the live server (plain and TLS) and names the endpoint it cannot reach", async () => {
    await verifier.checkEndpoints();
    await ldapVerifier({ hostname: `127.0.0.1:${slapd.tlsPort}`, useTLS: true, caFile: slapd.caFile }).checkEndpoints();
    await assert.rejects(ldapVerifier({ hostname: `127.0.0.1:${closedPort}` }).checkEndpoints(), new RegExp(`ldap://127\\.0\\.0\\.1:${closedPort}`));
    // TLS is checked too: a certificate the verifier does not trust fails the startup check.
    await assert.rejects(
      ldapVerifier({ hostname: `127.0.0.1:${slapd.tlsPort}`, useTLS: true }).checkEndpoints(),
      new RegExp(`ldaps://127\\.0\\.0\\.1:${slapd.tlsPort}`),
    );
    await verifier.close();
  });
});
