import type { VerifierFactories } from "./security-config";
import type { VerifierFactory } from "./types";
import { cloudVerifierFactory } from "./verifiers/cloud-verifier";
import { ldapVerifierFactory } from "./verifiers/ldap-verifier";
import { oauthVerifierFactory } from "./verifiers/oauth-verifier";

/** Every verifier type of spec 5.5. */
export const verifierFactories: VerifierFactories = {
  ldap: ldapVerifierFactory as VerifierFactory<unknown>,
  oauth: oauthVerifierFactory as VerifierFactory<unknown>,
  cloud: cloudVerifierFactory as VerifierFactory<unknown>,
};
