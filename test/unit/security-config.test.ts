import { test } from "node:test";
import assert from "node:assert/strict";
import { choicesFor, isEnforced, parseSecurityConfig } from "../../auth/security-config";
import { verifierFactories } from "../../auth/verifier-factories";
import { component } from "../../auth/components";
import { SecurityConfigError } from "../../auth/types";

const ldap = {
  verifier: "ldap",
  default: "corp",
  profiles: [
    { profile: "corp", configuration: { hostname: "ldap.example.org:389", rootComponents: "ou=people,dc=example,dc=org" } },
    { profile: "lab", configuration: { hostname: "10.0.0.9" } },
  ],
};
const oauth = {
  verifier: "oauth",
  profiles: [
    { profile: "idp", configuration: { serverMetadataUrl: "https://idp.example.org/.well-known/openid-configuration", resourceServerId: "urn:warden" } },
  ],
};
const cloud = { verifier: "cloud", profiles: [{ profile: "dev", configuration: { id: "AKIDWARDEN", key: "secret-key", region: "eu-west-1" } }] };

/** The spec's example (5.6) plus a cloud verifier: every REST API enforced. */
const good = {
  verifiers: [ldap, oauth, cloud],
  credentials: [
    {
      type: "namepwd",
      verifiers: [
        { verifier: "ldap", profile: "lab", selectors: { componentName: "config" } },
        { verifier: "ldap", default: true },
      ],
    },
    { type: "rawBearerToken", verifiers: [{ verifier: "oauth", profile: "idp" }] },
    {
      type: "cloudSigningCredentials",
      verifiers: [{ verifier: "cloud", profile: "dev", selectors: { componentType: "api", domainName: "Signed.Example.org" } }],
    },
  ],
  enforcedComponents: [{ componentType: "api" }],
};

// The cases edit arbitrary parts of the JSON document: typing each path would say nothing more.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
function withChange(change: (config: any) => void): unknown {
  const copy = structuredClone(good);
  change(copy);
  return copy;
}

function errorOf(value: unknown): SecurityConfigError {
  try {
    parseSecurityConfig(value, verifierFactories);
  } catch (error) {
    assert.ok(error instanceof SecurityConfigError, `expected a SecurityConfigError, got ${String(error)}`);
    return error;
  }
  assert.fail("the configuration was accepted");
}

test("the spec's shape is accepted: selection by precedence, the default verifier last, absent selectors select all", () => {
  const config = parseSecurityConfig(good, verifierFactories);
  const forConfig = choicesFor(config, component("config"));
  assert.equal(forConfig.get("namepwd")?.profile, "lab");
  const forRedact = choicesFor(config, component("redact"));
  assert.equal(forRedact.get("namepwd")?.profile, "corp", "the default verifier with the default profile");
  assert.equal(forRedact.get("rawBearerToken")?.profile, "idp");
  assert.equal(forRedact.has("cloudSigningCredentials"), false, "the cloud verifier selects one domain name");
  assert.equal(
    choicesFor(config, component("redact", "signed.example.org")).get("cloudSigningCredentials")?.profile,
    "dev",
    "domain names compare without case",
  );
  assert.equal(isEnforced(config, component("config")), true);
  assert.equal(isEnforced(config, component("postgres")), false);
});

test("the default verifier is tried last whatever its place in the list", () => {
  const config = parseSecurityConfig(
    withChange((c) => {
      c.credentials[0].verifiers.reverse();
    }),
    verifierFactories,
  );
  assert.equal(choicesFor(config, component("config")).get("namepwd")?.profile, "lab");
  assert.deepEqual(
    config.credentials.get("namepwd")?.map((choice) => choice.isDefault),
    [false, true],
  );
});

test("enforcement by selector: only config enforced leaves redact open", () => {
  const config = parseSecurityConfig(
    withChange((c) => (c.enforcedComponents = [{ componentName: "config" }])),
    verifierFactories,
  );
  assert.equal(isEnforced(config, component("config")), true);
  assert.equal(isEnforced(config, component("redact")), false);
  assert.equal(isEnforced(config, component("mapping")), false);
  const byDomain = parseSecurityConfig(
    withChange((c) => (c.enforcedComponents = [{ componentName: "config", domainName: "admin.example.org" }])),
    verifierFactories,
  );
  assert.equal(isEnforced(byDomain, component("config", "other.example.org")), false, "spec 5.2: a domain-scoped enforcement holds on its name only");
  assert.equal(isEnforced(byDomain, component("config", "Admin.Example.org")), true);
  assert.equal(isEnforced(byDomain, component("config")), true, "a connection whose name is unknown could be for that name: enforced");
  assert.equal(isEnforced(byDomain, component("user", "admin.example.org")), false);
  // The file's name is compared as requests' names are: case and a final dot do not matter; a port or scheme is refused, not left never to match.
  const withDot = parseSecurityConfig(
    withChange((c) => (c.enforcedComponents = [{ componentName: "config", domainName: "Admin.Example.org." }])),
    verifierFactories,
  );
  assert.equal(isEnforced(withDot, component("config", "admin.example.org")), true);
  for (const bad of ["admin.example.org:8890", "https://admin.example.org", "[::1]", "admin example.org", "admin.example.org/x", "-admin.example.org"]) {
    const error = errorOf(withChange((c) => (c.enforcedComponents = [{ componentName: "config", domainName: bad }])));
    assert.equal(error.path, "enforcedComponents[0].domainName", bad);
    assert.match(error.message, /is not a host name/, bad);
  }
  assert.equal(
    isEnforced(
      parseSecurityConfig(
        withChange((c) => (c.enforcedComponents = [{ componentName: "config", domainName: "::1" }])),
        verifierFactories,
      ),
      component("config", "::1"),
    ),
    true,
    "an address is a name too",
  );
  const none = parseSecurityConfig(
    withChange((c) => delete c.enforcedComponents),
    verifierFactories,
  );
  assert.equal(isEnforced(none, component("config")), false);
});

test("every error case of spec 7 is refused, naming the entry", () => {
  const cases: Array<[string, unknown, string, RegExp]> = [
    ["default profile not defined", withChange((c) => (c.verifiers[0].default = "nope")), "verifiers[0].default", /default profile 'nope' is not defined/],
    [
      "duplicate profile names",
      withChange((c) => c.verifiers[0].profiles.push({ profile: "corp", configuration: { hostname: "x" } })),
      "verifiers[0].profiles[2].profile",
      /duplicate profile name 'corp'/,
    ],
    [
      "more than one default verifier",
      withChange((c) => c.credentials[0].verifiers.push({ verifier: "ldap", profile: "lab", default: true })),
      "credentials[0].verifiers[2]",
      /more than one default verifier/,
    ],
    ["unknown verifier type", withChange((c) => (c.verifiers[0].verifier = "kerberos")), "verifiers[0].verifier", /'kerberos' is not a verifier type/],
    ["unconfigured verifier type", withChange((c) => c.verifiers.splice(2, 1)), "credentials[2].verifiers[0].verifier", /verifier 'cloud' is not configured/],
    [
      "unknown verifier in a credential",
      withChange((c) => (c.credentials[1].verifiers[0].verifier = "saml")),
      "credentials[1].verifiers[0].verifier",
      /'saml' is not a verifier type/,
    ],
    ["unknown profile", withChange((c) => (c.credentials[1].verifiers[0].profile = "other")), "credentials[1].verifiers[0].profile", /unknown profile 'other'/],
    [
      "empty profile without a default profile",
      withChange((c) => (c.credentials[1].verifiers[0].profile = "")),
      "credentials[1].verifiers[0].profile",
      /has no default profile/,
    ],
    [
      "a verifier for another credential type",
      withChange((c) => (c.credentials[1].verifiers[0] = { verifier: "ldap", profile: "corp" })),
      "credentials[1].verifiers[0].verifier",
      /verifies 'namepwd', not 'rawBearerToken'/,
    ],
    ["unknown credential type", withChange((c) => (c.credentials[0].type = "kerberosTicket")), "credentials[0].type", /not a credential type/],
    ["a credential type listed twice", withChange((c) => c.credentials.push({ type: "namepwd", verifiers: [] })), "credentials[3].type", /listed twice/],
    [
      "unknown component",
      withChange((c) => (c.enforcedComponents = [{ componentName: "billing" }])),
      "enforcedComponents[0].componentName",
      /'billing' is not a component/,
    ],
    [
      "unknown component type",
      withChange((c) => (c.enforcedComponents = [{ componentType: "ui" }])),
      "enforcedComponents[0].componentType",
      /not a component type/,
    ],
    [
      "invalid ldap property",
      withChange((c) => (c.verifiers[0].profiles[1].configuration.useTLS = "yes")),
      "verifiers[0].profiles[1].configuration.useTLS",
      /./,
    ],
    ["unknown ldap property", withChange((c) => (c.verifiers[0].profiles[1].configuration.port = 389)), "verifiers[0].profiles[1].configuration.port", /./],
    [
      "oauth alg none",
      withChange((c) => (c.verifiers[1].profiles[0].configuration.allowedSigningAlgorithms = ["none"])),
      "verifiers[1].profiles[0].configuration.allowedSigningAlgorithms",
      /./,
    ],
    ["a verifier type defined twice", withChange((c) => c.verifiers.push({ verifier: "ldap", profiles: [] })), "verifiers[3].verifier", /defined twice/],
    [
      "a default verifier with selectors",
      withChange((c) => (c.credentials[0].verifiers[1].selectors = { componentName: "user" })),
      "credentials[0].verifiers[1].selectors",
      /selects every component/,
    ],
    ["an unknown root property", withChange((c) => (c.verifier = [])), "(root).verifier", /not a known property/],
    ["not an object", [], "(root)", /must be an object/],
  ];
  for (const [what, value, path, message] of cases) {
    const error = errorOf(value);
    assert.equal(error.path, path, `${what}: ${error.message}`);
    assert.match(error.message, message, what);
    assert.ok(error.message.startsWith(`${path}: `), what);
  }
});
