import { test } from "node:test";
import assert from "node:assert/strict";
import { Authenticator } from "../../auth/authenticator";
import { component } from "../../auth/components";
import { parseSecurityConfig, type VerifierFactories } from "../../auth/security-config";
import { CredentialRejected, type VerifierFactory } from "../../auth/types";
import { verifierFactories } from "../../auth/verifier-factories";
import { MemoryReplayGuard } from "../helpers/memory-replay-guard";

/** A stand-in token verifier: the token "for-a" is good where the audience (resourceServerId, an export may override it) is "urn:a". */
const audienceTokens: VerifierFactory<Record<string, unknown>> = {
  type: "oauth",
  parse: (raw) => raw ?? {},
  describe: () => ({}),
  create: (profile) => ({
    type: "oauth",
    profile,
    async verify(credential, overrides) {
      if (credential.type !== "rawBearerToken") throw new CredentialRejected("not a token");
      if (credential.token === "for-a" && overrides?.resourceServerId === "urn:a") return { subject: "svc", assertions: [] };
      throw new CredentialRejected("the token's audience is not this export's");
    },
    checkEndpoints: async () => undefined,
    close: async () => undefined,
  }),
};

test("a token rejected at one export (its own audience) is not remembered as rejected at another export of the same component", async () => {
  const factories: VerifierFactories = { ...verifierFactories, oauth: audienceTokens };
  const config = parseSecurityConfig(
    {
      verifiers: [{ verifier: "oauth", profiles: [{ profile: "idp" }] }],
      credentials: [{ type: "rawBearerToken", verifiers: [{ verifier: "oauth", profile: "idp" }] }],
      enforcedComponents: [{ componentName: "pipeline" }],
    },
    factories,
  );
  const authenticator = await Authenticator.start(config, factories, { replayGuard: new MemoryReplayGuard() }, "inline");
  const token = { type: "rawBearerToken" as const, token: "for-a" };
  const atB = await authenticator.verify(component("pipeline"), token, { oauth: { resourceServerId: "urn:b" } });
  assert.equal(atB.kind, "rejected");
  const atA = await authenticator.verify(component("pipeline"), token, { oauth: { resourceServerId: "urn:a" } });
  assert.equal(atA.kind, "verified", "export A asks its own verifier, not the memory of export B's rejection");
  // And the other way round: good at A is not known good at B.
  assert.equal((await authenticator.verify(component("pipeline"), token, { oauth: { resourceServerId: "urn:b" } })).kind, "rejected");
});
