import { CredentialRejected, VerifierUnavailable, type VerifierFactory } from "../../auth/types";

/** A stand-in for LDAP in inject tests: alice/wonderland is good, the password "outage" makes the directory unreachable. */
export const fakeDirectory: VerifierFactory<unknown> = {
  type: "ldap",
  parse: (raw) => raw ?? {},
  describe: () => ({}),
  create: (profile) => ({
    type: "ldap",
    profile,
    async verify(credential) {
      if (credential.type !== "namepwd") throw new CredentialRejected("not a password");
      if (credential.password === "outage") throw new VerifierUnavailable("directory unreachable");
      if (credential.user === "alice" && credential.password === "wonderland") return { subject: "alice", assertions: [] };
      throw new CredentialRejected("invalid credentials");
    },
    checkEndpoints: async () => undefined,
    close: async () => undefined,
  }),
};
