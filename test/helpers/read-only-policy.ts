import type { PolicyPort } from "../../api/types";
import { realisticPolicy } from "../../testkit/policy";

/** What a gateway test never calls: failing loudly if it does. */
export const unused = async (): Promise<never> => {
  throw new Error("not used by these tests");
};

/** A policy port whose reads answer with the realistic policy (revision 3); the tests that use it write nothing. */
export const readOnlyPolicy: PolicyPort = {
  read: async () => ({ revision: 3, config: realisticPolicy() }),
  replace: unused,
  write: unused,
  remove: unused,
  history: unused,
  revision: unused,
};
