import { test } from "node:test";
import assert from "node:assert/strict";
import { AuthorizationConfigError, Authorizer, fullRights, parseAuthorization, permits, seesJob } from "../../auth/authorization";

const profiles = new Set(["corp", "partners", "idp", "ci"]);

const rules = parseAuthorization(
  {
    rules: [
      { name: "admins", ldapGroups: ["warden-admins"], permissions: ["*:admin"] },
      { name: "auditors", ldapUsers: ["carol"], scopes: ["warden.read"], permissions: ["config:read", "mapping:read", "export:read"] },
      { name: "clinicians", claims: [{ name: "roles", values: ["clinician"] }], permissions: ["decision:query", "redact:own", "fhir:read"] },
      { name: "ci", cloudKeyIds: ["AKIDCI"], permissions: ["export:write", "pipeline:read"] },
      { name: "corp staff", ldapUsers: ["dave"], profiles: ["corp"], permissions: ["user:admin"] },
    ],
  },
  profiles,
);
const authorizer = new Authorizer(rules);

test("a group's *:admin grants every action of every component, query included", () => {
  const rights = authorizer.rightsOf({ identity: { subject: "alice", assertions: ["group:warden-admins"] }, verifier: "ldap", profile: "corp" });
  for (const [component, action] of [
    ["config", "admin"],
    ["config", "read"],
    ["user", "admin"],
    ["redact", "own"],
    ["redact", "admin"],
    ["decision", "query"],
    ["objectstore", "write"],
  ] as const)
    assert.equal(permits(rights, component, action), true, `${component}:${action}`);
  assert.deepEqual(rights.rules, ["admins"]);
});

test("read grants read only; names match only through their own verifier type", () => {
  const carol = authorizer.rightsOf({ identity: { subject: "carol", assertions: [] }, verifier: "ldap", profile: "corp" });
  assert.equal(permits(carol, "config", "read"), true);
  assert.equal(permits(carol, "config", "write"), false);
  assert.equal(permits(carol, "user", "read"), false);
  assert.equal(permits(carol, "decision", "query"), false);
  // A token or a signing key whose subject is 'carol' is not the LDAP user carol; a group assertion from a token is not an LDAP group.
  assert.equal(permits(authorizer.rightsOf({ identity: { subject: "carol", assertions: [] }, verifier: "oauth", profile: "idp" }), "config", "read"), false);
  assert.equal(
    permits(authorizer.rightsOf({ identity: { subject: "x", assertions: ["group:warden-admins"] }, verifier: "oauth", profile: "idp" }), "config", "read"),
    false,
  );
  const scoped = authorizer.rightsOf({ identity: { subject: "svc", assertions: ["scope:warden.read"] }, verifier: "oauth", profile: "idp" });
  assert.equal(permits(scoped, "mapping", "read"), true);
  assert.equal(permits(scoped, "mapping", "write"), false);
});

test("a named claim matches a string or an element of an array; claims named by rules become assertions", () => {
  const identity = { subject: "dr", assertions: ["scope:openid"], claims: { roles: ["nurse", "clinician"], other: "x" } };
  const rights = authorizer.rightsOf({ identity, verifier: "oauth", profile: "idp" });
  assert.equal(permits(rights, "decision", "query"), true);
  assert.equal(permits(rights, "redact", "own"), true);
  assert.equal(permits(rights, "redact", "admin"), false);
  assert.deepEqual(authorizer.assertionsOf(identity), ["scope:openid", "claim:roles=nurse", "claim:roles=clinician"]);
  assert.equal(
    permits(authorizer.rightsOf({ identity: { ...identity, claims: { roles: "nurse" } }, verifier: "oauth", profile: "idp" }), "decision", "query"),
    false,
  );
});

test("cloud key ids; no rule matched grants nothing; no rights at all is a denial", () => {
  const ci = authorizer.rightsOf({ identity: { subject: "AKIDCI", assertions: [] }, verifier: "cloud", profile: "ci" });
  assert.equal(permits(ci, "export", "write"), true);
  assert.equal(permits(ci, "export", "read"), true);
  assert.equal(permits(ci, "export", "admin"), false);
  const nobody = authorizer.rightsOf({ identity: { subject: "AKIDOTHER", assertions: [] }, verifier: "cloud", profile: "ci" });
  assert.equal(permits(nobody, "config", "read"), false);
  assert.equal(permits(undefined, "config", "read"), false);
});

test("without an authorization section every verified subject holds everything", () => {
  const open = new Authorizer(undefined);
  const rights = open.rightsOf({ identity: { subject: "anyone", assertions: [] }, verifier: "ldap", profile: "corp" });
  assert.equal(permits(rights, "user", "admin"), true);
  assert.equal(permits(fullRights(null), "config", "admin"), true);
});

test("every problem of the section is listed at once, each naming its entry", () => {
  let caught: unknown;
  try {
    parseAuthorization(
      {
        rules: [
          { name: "a", ldapGroups: ["g"], permissions: ["config:query", "nosuch:read", "decision"] },
          { name: "a", permissions: ["config:read"] },
          { ldapUsers: "bob", claims: [{ name: "roles" }], extra: 1, permissions: [] },
        ],
        other: true,
      },
      profiles,
    );
  } catch (error) {
    caught = error;
  }
  assert.ok(caught instanceof AuthorizationConfigError);
  const paths = caught.problems.map((problem) => problem.path);
  assert.deepEqual(paths, [
    "authorization.other",
    "authorization.rules[0].permissions[0]",
    "authorization.rules[0].permissions[1]",
    "authorization.rules[0].permissions[2]",
    "authorization.rules[1].name",
    "authorization.rules[1]",
    "authorization.rules[2].extra",
    "authorization.rules[2].ldapUsers",
    "authorization.rules[2].claims[0].values",
    "authorization.rules[2].permissions",
  ]);
  for (const path of paths) assert.match(caught.message, new RegExp(path.replace(/[[\].]/g, "\\$&")));
  assert.match(caught.message, /'config' takes no action 'query'/);
});

test("a rule with profiles grants only to callers verified by one of them", () => {
  assert.equal(permits(authorizer.rightsOf({ identity: { subject: "dave", assertions: [] }, verifier: "ldap", profile: "corp" }), "user", "admin"), true);
  // The partners' directory has a 'dave' too: not corp's dave.
  assert.equal(permits(authorizer.rightsOf({ identity: { subject: "dave", assertions: [] }, verifier: "ldap", profile: "partners" }), "user", "admin"), false);
  const problemsOf = (profileList: unknown): string[] => {
    try {
      parseAuthorization({ rules: [{ name: "x", ldapUsers: ["a"], profiles: profileList, permissions: ["config:read"] }] }, profiles);
    } catch (error) {
      if (error instanceof AuthorizationConfigError) return error.problems.map((problem) => `${problem.path}: ${problem.message}`);
      throw error;
    }
    return [];
  };
  assert.deepEqual(problemsOf(["corp", "partners"]), []);
  assert.match(problemsOf(["corp", "nosuch"]).join(), /^authorization\.rules\[0\]\.profiles\[1\]: .*'nosuch' is no verifier's profile/);
  assert.match(problemsOf([""]).join(), /^authorization\.rules\[0\]\.profiles: .*non-empty strings/);
});

test("a job's owner names the verifier profile: one user name in two directories, or one subject from two issuers, are two owners", () => {
  const caller = (verifier: "ldap" | "oauth", profile: string, subject: string) =>
    authorizer.rightsOf({ identity: { subject, assertions: ["claim:roles=clinician"], claims: { roles: "clinician" } }, verifier, profile });
  const corpAlice = caller("ldap", "corp", "alice");
  const partnerAlice = caller("ldap", "partners", "alice");
  assert.notEqual(corpAlice.owner, partnerAlice.owner);
  assert.equal(seesJob(partnerAlice, corpAlice.owner), false);
  assert.equal(seesJob(caller("ldap", "corp", "alice"), corpAlice.owner), true, "the same caller again sees its job");
  const idpSub = caller("oauth", "idp", "u1");
  const otherIssuerSub = caller("oauth", "partners", "u1");
  assert.equal(permits(idpSub, "redact", "own"), true);
  assert.equal(seesJob(otherIssuerSub, idpSub.owner), false);
  // A profile name with the separator cannot make another caller's owner.
  assert.notEqual(caller("ldap", "a:b", "c").owner, caller("ldap", "a", "b:c").owner);
});
