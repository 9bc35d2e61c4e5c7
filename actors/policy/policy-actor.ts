import { isDeepStrictEqual } from "node:util";
import { actor, exclusive, shared } from "../runtime/define";
import { HandlerError } from "../runtime/errors";
import type { ExclusiveContext, SharedContext } from "../runtime/types";
import { checkPolicyConfig } from "../../policy/check";
import { emptyPolicyConfig, type PolicyConfig } from "../../policy/model";
import { policyRevision } from "./revision-actor";
import { applySectionWrite, duplicatesInWrite, removeItem, type ItemKind, type SectionWrite } from "../../policy/sections";
import { validatePolicy } from "../../policy/validate";

export interface PolicyState {
  /** 0 before the first write; every write that changes something adds one. */
  revision: number;
  config: PolicyConfig;
  updatedAt: string | null;
  updatedBy: string | null;
  change: string | null;
}

export interface PolicyWriteResult {
  revision: number;
  /** false when the write asked for what was already there: no new revision. */
  changed: boolean;
}

interface WriteOptions {
  /** Optimistic concurrency (If-Match): refused with REVISION_MISMATCH unless this is the current revision. */
  expectedRevision?: number;
  /** Who asks (the authenticated identity, or "anonymous"); kept in the history and the audit. */
  by: string;
}

type Exclusive = ExclusiveContext<PolicyState>;

function checkExpectedRevision(ctx: Exclusive, options: WriteOptions): void {
  if (options.expectedRevision !== undefined && options.expectedRevision !== ctx.state.revision) {
    throw new HandlerError("REVISION_MISMATCH", `the configuration is at revision ${ctx.state.revision}, not ${options.expectedRevision}`, {
      details: { expected: options.expectedRevision, current: ctx.state.revision },
    });
  }
}

/** Validates the whole candidate, records the revision in the history, then commits. */
async function commit(ctx: Exclusive, options: WriteOptions, change: string, candidate: unknown): Promise<PolicyWriteResult> {
  const checked = checkPolicyConfig(candidate);
  if (!checked.ok) {
    throw new HandlerError("CONFIG_INVALID", `the configuration has ${checked.problems.length} problem(s); nothing was changed`, { details: checked.problems });
  }
  if (isDeepStrictEqual(checked.config, ctx.state.config)) return { revision: ctx.state.revision, changed: false };
  const revision = ctx.state.revision + 1;
  const at = new Date().toISOString();
  await ctx.actors
    .ref(policyRevision, `${ctx.id}.${revision}`)
    .record({ revision, at, by: options.by, change, config: checked.config }, { timeoutMs: ctx.remainingMs() });
  ctx.setState({ revision, config: checked.config, updatedAt: at, updatedBy: options.by, change });
  return { revision, changed: true };
}

/**
 * The policy configuration of the cluster (id "default"): every write is validated as a whole,
 * checked against the expected revision, recorded in the history and committed, or refused
 * with every problem listed and nothing changed.
 */
export const policy = actor({
  type: "policy",
  initialState: (): PolicyState => ({ revision: 0, config: emptyPolicyConfig(), updatedAt: null, updatedBy: null, change: null }),
  handlers: {
    get: shared((ctx: SharedContext<PolicyState>) => ctx.state),

    replace: exclusive(async (ctx: Exclusive, arg: WriteOptions & { config: unknown; mappingGroupsFixed?: boolean }) => {
      checkExpectedRevision(ctx, arg);
      // Compared with the current groups here, under the exclusive write: a check before the call could miss a write between.
      if (arg.mappingGroupsFixed) {
        const checked = checkPolicyConfig(arg.config);
        if (checked.ok && !isDeepStrictEqual(checked.config.mappingGroups, ctx.state.config.mappingGroups))
          throw new HandlerError(
            "MAPPING_WRITE_FORBIDDEN",
            "this configuration changes mapping groups, which needs mapping:write: send the current mapping groups unchanged",
          );
      }
      return commit(ctx, arg, "replaced the whole configuration", arg.config);
    }),

    write: exclusive(async (ctx: Exclusive, arg: WriteOptions & { write: SectionWrite }) => {
      checkExpectedRevision(ctx, arg);
      const duplicates = duplicatesInWrite(arg.write);
      if (duplicates.length)
        throw new HandlerError("CONFIG_INVALID", `the write has ${duplicates.length} problem(s); nothing was changed`, { details: duplicates });
      return commit(ctx, arg, `wrote ${arg.write.section}`, applySectionWrite(ctx.state.config, arg.write));
    }),

    remove: exclusive(async (ctx: Exclusive, arg: WriteOptions & { kind: ItemKind; id: string }) => {
      checkExpectedRevision(ctx, arg);
      const candidate = removeItem(ctx.state.config, arg.kind, arg.id);
      if (!candidate) throw new HandlerError("NOT_FOUND", `no ${arg.kind} '${arg.id}'`);
      const dangling = validatePolicy(candidate);
      if (dangling.length) {
        throw new HandlerError("CONFIG_REFERENCED", `${arg.kind} '${arg.id}' is still referenced; remove the references first`, { details: dangling });
      }
      return commit(ctx, arg, `removed ${arg.kind} '${arg.id}'`, candidate);
    }),
  },
});
