import { actor, exclusive, shared } from "../runtime/define";
import type { ExclusiveContext, SharedContext } from "../runtime/types";
import type { PolicyConfig } from "../../policy/model";

/** One configuration revision as it was written: what, when, by whom, and the whole configuration. */
export interface PolicyRevisionRecord {
  revision: number;
  at: string;
  by: string;
  change: string;
  config: PolicyConfig;
}

type State = PolicyRevisionRecord | null;

/**
 * The history of a policy, one actor per revision (id `<policy id>.<revision>`), written by the
 * policy actor before it commits that revision. A record left by a commit that then failed is
 * overwritten when that revision number is written again.
 */
export const policyRevision = actor({
  type: "policy-revision",
  initialState: (): State => null,
  handlers: {
    record: exclusive((ctx: ExclusiveContext<State>, record: PolicyRevisionRecord) => ctx.setState(record)),
    get: shared((ctx: SharedContext<State>) => ctx.state),
  },
});
