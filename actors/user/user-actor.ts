import { compiledFor } from "../../decision/compile-cache";
import { termsKey, type CompiledPolicy } from "../../decision/compiled-policy";
import { guardianProblem, isChild, isKnownAdult } from "../../decision/children";
import { ageOn } from "../../decision/overrides";
import { regionCode } from "../../policy/region-code";
import { grantsExceed, personalizedTerms, type PersonalizedTerms } from "../../decision/terms";
import { own, type UserPolicyState } from "../../decision/types";
import { policy } from "../policy/policy-actor";
import { actor, exclusive, shared } from "../runtime/define";
import { HandlerError } from "../runtime/errors";
import type { ActorCaller, ExclusiveContext, SharedContext } from "../runtime/types";

/** A user as stored: what decisions read, plus links and history. */
export interface UserRecord extends UserPolicyState {
  createdAt: string;
  /** Guardians acting for this user (a child). */
  guardians: string[];
  /** Children this user is guardian of. */
  children: string[];
  /** Every consent and opt-in change: what, when, by whom (null categories: revoked). */
  consentHistory: Array<{ at: string; purposeId: string; termsId?: string; categoryIds: string[] | null; by: string }>;
}

type State = UserRecord | null;
type Exclusive = ExclusiveContext<State>;

export interface ConsentEntry {
  purposeId: string;
  termsId?: string;
  categoryIds?: string[];
}

async function currentPolicy(actors: ActorCaller, remainingMs: number): Promise<CompiledPolicy> {
  const { config, revision } = await actors.ref(policy, "default").get(undefined, { timeoutMs: remainingMs });
  return compiledFor(config, revision);
}

function existing(ctx: { state: Readonly<State>; id: string }): UserRecord {
  if (!ctx.state) throw new HandlerError("NOT_FOUND", `no user '${ctx.id}'`);
  return ctx.state as UserRecord;
}

function termsFor(compiled: CompiledPolicy, user: UserRecord, now: Date): PersonalizedTerms {
  return personalizedTerms(compiled, { attributes: user.attributes, contractualRelationship: user.contractualRelationship }, now);
}

/**
 * Who acts: a child's consents and flows are set by one of their guardians, which the guardian's
 * own record must confirm (a link half-removed by an erasure confers nothing); an adult acts for
 * themselves.
 */
async function actingFor(
  ctx: { actors: ActorCaller; remainingMs(): number },
  compiled: CompiledPolicy,
  record: UserRecord,
  actingId: string | undefined,
  what: string,
  now: Date,
): Promise<string> {
  if (!isChild(compiled, record, now)) {
    if (actingId !== undefined && actingId !== record.userId)
      throw new HandlerError("GUARDIAN_INVALID", `${record.userId} is not a child: they act for themselves`);
    return record.userId;
  }
  if (!actingId) throw new HandlerError("GUARDIAN_REQUIRED", `${record.userId} is a child: ${what} needs a guardian (grantorId)`);
  await confirmGuardian(compiled, record, actingId, now, () => ctx.actors.ref(user, actingId).get(undefined, { timeoutMs: ctx.remainingMs() }));
  return actingId;
}

/**
 * Refuses (NOT_A_GUARDIAN) unless `guardianId` may act for the child `record` now (decision/children.ts, `guardianProblem`):
 * the guardian's own record, read with `read` only when the child names them, must confirm the link.
 */
export async function confirmGuardian(
  compiled: CompiledPolicy,
  record: UserRecord,
  guardianId: string,
  now: Date,
  read: () => Promise<UserRecord>,
): Promise<void> {
  const guardian = record.guardians.includes(guardianId)
    ? await read().catch((error: { code?: string }) => {
        if (error.code === "NOT_FOUND") return undefined;
        throw error;
      })
    : undefined;
  const problem = guardianProblem(compiled, record, guardianId, guardian, now);
  if (problem) throw new HandlerError("NOT_A_GUARDIAN", problem);
}

/** Categories a guardian may not act on (policy: guardian rights cover `guardian.categoryIds` only); empty when `by` is the user themself. */
function outsideGuardianCategories(compiled: CompiledPolicy, record: UserRecord, by: string, categoryIds: readonly string[]): string[] {
  if (by === record.userId) return [];
  const covered = compiled.guardian?.categoryIds ?? [];
  return categoryIds.filter((c) => !covered.includes(c));
}

function guardianOutside(by: string, record: UserRecord, details: Array<{ path: string; problem: string }>): HandlerError {
  return new HandlerError("GUARDIAN_CATEGORIES", `${by} acts for ${record.userId} only on the guardian categories; nothing was changed`, { details });
}

/** The categories an opt-in or a consent of this user covers now. */
function consentCategories(compiled: CompiledPolicy, record: UserRecord, purposeId: string, termsId: string | undefined): string[] {
  if (termsId !== undefined) return own(record.consents, termsKey(purposeId, termsId))?.categoryIds ?? [];
  return own(record.optIns, purposeId)?.categoryIds ?? compiled.platformUse.get(purposeId)?.categoryIds ?? [];
}

const maxConsentHistory = 500;

/** The ids of every purpose the configuration names, of any type. */
function configuredPurposeIds(compiled: CompiledPolicy): Set<string> {
  const { platformUse, platformSharing, contractualExchange, consentedSharing } = compiled.config;
  return new Set([platformUse, platformSharing, contractualExchange, consentedSharing].flatMap((section) => section.purposes.map((p) => p.stableId)));
}

/**
 * A user (spec 2.10, 3.3): attributes, contract, accepted terms, opt-ins, consents, guardian
 * links and flows a guardian turned off. Rules that depend on the configuration read the
 * policy actor; every change is revision-checked like any actor state.
 */
export const user = actor({
  type: "user",
  initialState: (): State => null,
  handlers: {
    get: shared((ctx: SharedContext<State>) => existing(ctx)),

    create: exclusive(
      async (ctx: Exclusive, arg: { attributes?: Record<string, string>; contractualRelationship?: { purposeId: string; termsId: string } }) => {
        if (ctx.state) throw new HandlerError("USER_EXISTS", `user '${ctx.id}' already exists`);
        const attributes = arg.attributes ?? {};
        if (attributes.dob !== undefined && ageOn(attributes.dob, new Date()) === undefined)
          throw new HandlerError("USER_INVALID", `dob '${attributes.dob}' is not a date (YYYY-MM-DD)`);
        if (attributes.location !== undefined && !regionCode.test(attributes.location.trim()))
          throw new HandlerError("USER_INVALID", `location '${attributes.location}' is not a region code (ISO 3166: DE, or US-CA)`);
        if (arg.contractualRelationship) {
          const compiled = await currentPolicy(ctx.actors, ctx.remainingMs());
          const { purposeId, termsId } = arg.contractualRelationship;
          if (!compiled.contracts.has(termsKey(purposeId, termsId)))
            throw new HandlerError("USER_INVALID", `no contractual exchange terms '${purposeId}/${termsId}'`);
        }
        const record: UserRecord = {
          userId: ctx.id,
          attributes,
          ...(arg.contractualRelationship ? { contractualRelationship: arg.contractualRelationship } : {}),
          optIns: {},
          consents: {},
          disabledFlows: [],
          createdAt: new Date().toISOString(),
          guardians: [],
          children: [],
          consentHistory: [],
        };
        ctx.setState(record);
        return record;
      },
    ),

    /** The user's current personalized terms, and whether they grant more than what the user accepted. */
    terms: shared(async (ctx: SharedContext<State>) => {
      const record = existing(ctx);
      const compiled = await currentPolicy(ctx.actors, ctx.remainingMs());
      const now = new Date();
      const terms = termsFor(compiled, record, now);
      const child = isChild(compiled, record, now);
      // A child's own acceptance (given before they were a child under the policy) counts for nothing in decisions: a guardian must accept again.
      const ownAcceptanceOfAChild = child && record.acceptance !== undefined && record.acceptance.acceptorId === undefined;
      return {
        terms,
        acceptedTermsHash: record.acceptance?.termsHash ?? null,
        reacceptRequired: record.acceptance ? ownAcceptanceOfAChild || grantsExceed(terms.grants, record.acceptance.grants) : false,
        child,
      };
    }),

    /** Records acceptance of the user's current personalized terms (for a child, by a guardian). */
    accept: exclusive(async (ctx: Exclusive, arg: { acceptorId?: string; termsHash?: string }) => {
      const record = existing(ctx);
      const now = new Date();
      const compiled = await currentPolicy(ctx.actors, ctx.remainingMs());
      const child = isChild(compiled, record, now);
      const terms = termsFor(compiled, record, now);
      // Acceptance is of a version of the terms (policy-semantics 2): the version the user was shown, when the caller names it.
      // Checked before a guardian's side of a link is written: a refused acceptance changes nothing, on either side.
      const checkVersionShown = () => {
        if (arg.termsHash !== undefined && arg.termsHash !== terms.hash)
          throw new HandlerError(
            "TERMS_CHANGED",
            `the terms shown (${arg.termsHash.slice(0, 12)}…) are no longer ${record.userId}'s current ones (${terms.hash.slice(0, 12)}…): read them again`,
          );
      };
      let guardians = record.guardians;
      if (child) {
        if (!arg.acceptorId) throw new HandlerError("GUARDIAN_REQUIRED", `${record.userId} is a child: terms must be accepted by a guardian (acceptorId)`);
        if (arg.acceptorId === record.userId) throw new HandlerError("GUARDIAN_INVALID", "a child cannot be their own guardian");
        const acceptor = await ctx.actors
          .ref(user, arg.acceptorId)
          .get(undefined, { timeoutMs: ctx.remainingMs() })
          .catch((error: { code?: string }) => {
            throw error.code === "NOT_FOUND" ? new HandlerError("GUARDIAN_INVALID", `acceptor '${arg.acceptorId}' is not a user`) : error;
          });
        if (isChild(compiled, acceptor, now)) throw new HandlerError("GUARDIAN_INVALID", `acceptor '${arg.acceptorId}' is a child`);
        if (!isKnownAdult(compiled, acceptor, now))
          throw new HandlerError("GUARDIAN_INVALID", `acceptor '${arg.acceptorId}' has no date of birth showing an adult: a guardian must be one`);
        // The acceptance creates the link only when the child has none yet (policy-semantics 5): else only a guardian accepts.
        if (guardians.length > 0 && !guardians.includes(arg.acceptorId))
          throw new HandlerError("NOT_A_GUARDIAN", `${arg.acceptorId} is not a guardian of ${record.userId}`);
        checkVersionShown();
        // Idempotent, and repairs a link one side lost. Guardians' handlers never call a child's exclusive ones: no cycle.
        await ctx.actors.ref(user, arg.acceptorId).linkChild(record.userId, { timeoutMs: ctx.remainingMs() });
        if (!guardians.includes(arg.acceptorId)) guardians = [...guardians, arg.acceptorId];
      } else if (arg.acceptorId && arg.acceptorId !== record.userId) {
        throw new HandlerError("GUARDIAN_INVALID", `${record.userId} is not a child: they accept their own terms`);
      }
      checkVersionShown();
      const acceptance = { termsHash: terms.hash, grants: terms.grants, acceptedAt: now.toISOString(), ...(child ? { acceptorId: arg.acceptorId } : {}) };
      ctx.setState({ ...record, guardians, acceptance });
      return { termsHash: terms.hash, revision: compiled.revision, acceptedAt: acceptance.acceptedAt, acceptorId: acceptance.acceptorId ?? null };
    }),

    /** Makes `guardianId` a guardian of this (child) user; the guardian records the link too. */
    addGuardian: exclusive(async (ctx: Exclusive, arg: { guardianId: string; grantorId?: string }) => {
      const { guardianId } = arg;
      const record = existing(ctx);
      const now = new Date();
      const compiled = await currentPolicy(ctx.actors, ctx.remainingMs());
      if (!isChild(compiled, record, now)) throw new HandlerError("GUARDIAN_INVALID", `${record.userId} is not a child`);
      if (guardianId === record.userId) throw new HandlerError("GUARDIAN_INVALID", "a child cannot be their own guardian");
      const guardian = await ctx.actors
        .ref(user, guardianId)
        .get(undefined, { timeoutMs: ctx.remainingMs() })
        .catch((error: { code?: string }) => {
          throw error.code === "NOT_FOUND" ? new HandlerError("GUARDIAN_INVALID", `guardian '${guardianId}' is not a user`) : error;
        });
      if (isChild(compiled, guardian, now)) throw new HandlerError("GUARDIAN_INVALID", `guardian '${guardianId}' is a child`);
      if (!isKnownAdult(compiled, guardian, now))
        throw new HandlerError("GUARDIAN_INVALID", `guardian '${guardianId}' has no date of birth showing an adult: a guardian must be one`);
      if (record.guardians.includes(guardianId)) return { guardians: record.guardians };
      // A child with a guardian gets another only from one of them (grantorId), as acceptance makes only the first link:
      // anyone could otherwise add a stranger, who would then accept, consent and read the child's report.
      if (record.guardians.length > 0) await actingFor(ctx, compiled, record, arg.grantorId, "adding a guardian", now);
      await ctx.actors.ref(user, guardianId).linkChild(record.userId, { timeoutMs: ctx.remainingMs() });
      const guardians = [...record.guardians, guardianId];
      ctx.setState({ ...record, guardians });
      return { guardians };
    }),

    /** The guardian's side of a guardian link. */
    linkChild: exclusive((ctx: Exclusive, childId: string) => {
      const record = existing(ctx);
      if (!record.children.includes(childId)) ctx.setState({ ...record, children: [...record.children, childId] });
    }),

    unlink: exclusive((ctx: Exclusive, otherId: string) => {
      const record = existing(ctx);
      ctx.setState({ ...record, children: record.children.filter((id) => id !== otherId), guardians: record.guardians.filter((id) => id !== otherId) });
    }),

    /**
     * Affirmative consents (spec 2.11). A consent naming an opt-in platform use purpose opts in
     * (its categories may only narrow the purpose's); any other names consented sharing terms
     * (categories within the terms' requested ones). A child's need a guardian as grantor.
     */
    consent: exclusive(async (ctx: Exclusive, arg: { grantorId?: string; consents: ConsentEntry[] }) => {
      const record = existing(ctx);
      const now = new Date();
      const compiled = await currentPolicy(ctx.actors, ctx.remainingMs());
      const by = await actingFor(ctx, compiled, record, arg.grantorId, "consent", now);
      const optIns = { ...record.optIns };
      const consents = { ...record.consents };
      const history = [...record.consentHistory];
      const problems: Array<{ path: string; problem: string }> = [];
      const outsideGuardian: Array<{ path: string; problem: string }> = [];
      for (const [i, entry] of arg.consents.entries()) {
        const optInPurpose = compiled.platformUse.get(entry.purposeId);
        const consentTerms = entry.termsId === undefined ? undefined : compiled.consentTerms.get(termsKey(entry.purposeId, entry.termsId));
        const covers = entry.categoryIds ?? optInPurpose?.categoryIds ?? consentTerms?.requestedCategoryIds ?? [];
        const uncovered = outsideGuardianCategories(compiled, record, by, covers);
        if (uncovered.length) outsideGuardian.push({ path: `/consents/${i}/categoryIds`, problem: `outside the guardian categories: ${uncovered.join(", ")}` });
        // Opt-in while the purpose is, or was when the user accepted (the engine still asks for it then).
        const acceptedAsOptIn = record.acceptance ? own(record.acceptance.grants.platformUse, entry.purposeId)?.optIn === true : false;
        if (optInPurpose && (optInPurpose.optIn || acceptedAsOptIn)) {
          const outside = (entry.categoryIds ?? []).filter((c) => !optInPurpose.categoryIds.includes(c));
          if (outside.length) {
            problems.push({ path: `/consents/${i}/categoryIds`, problem: `not categories of '${entry.purposeId}': ${outside.join(", ")}` });
            continue;
          }
          // A guardian's opt-in is stored with the categories it covers now: one stored open ({}) would cover whatever the
          // purpose covers later, categories outside the guardian's rights included.
          const narrowed = entry.categoryIds ? [...new Set(entry.categoryIds)] : by !== record.userId ? [...optInPurpose.categoryIds] : undefined;
          // A guardian's is marked theirs: a child's own opt-in counts for nothing (policy-semantics 5, decision/engine.ts).
          const grantor = by !== record.userId ? { grantorId: by } : {};
          optIns[entry.purposeId] = narrowed ? { categoryIds: narrowed, ...grantor } : { ...grantor };
          history.push({ at: now.toISOString(), purposeId: entry.purposeId, categoryIds: narrowed ?? optInPurpose.categoryIds, by });
          continue;
        }
        const terms = entry.termsId === undefined ? undefined : compiled.consentTerms.get(termsKey(entry.purposeId, entry.termsId));
        if (!terms) {
          problems.push({
            path: `/consents/${i}`,
            problem: `'${entry.purposeId}'${entry.termsId ? `/'${entry.termsId}'` : ""} is neither an opt-in purpose nor consented sharing terms`,
          });
          continue;
        }
        const categoryIds = [...new Set(entry.categoryIds ?? terms.requestedCategoryIds)];
        const outside = categoryIds.filter((c) => !terms.requestedCategoryIds.includes(c));
        if (outside.length) {
          problems.push({ path: `/consents/${i}/categoryIds`, problem: `not requested by the terms: ${outside.join(", ")}` });
          continue;
        }
        consents[termsKey(entry.purposeId, entry.termsId!)] = by !== record.userId ? { categoryIds, grantorId: by } : { categoryIds };
        history.push({ at: now.toISOString(), purposeId: entry.purposeId, termsId: entry.termsId, categoryIds, by });
      }
      if (outsideGuardian.length) throw guardianOutside(by, record, outsideGuardian);
      if (problems.length)
        throw new HandlerError("CONSENT_INVALID", `the consent has ${problems.length} problem(s); nothing was recorded`, { details: problems });
      ctx.setState({ ...record, optIns, consents, consentHistory: history.slice(-maxConsentHistory) });
      return { optIns, consents };
    }),

    /** Revokes a consent or an opt-in; it stops counting for the next decision. */
    revoke: exclusive(async (ctx: Exclusive, arg: { grantorId?: string; purposeId: string; termsId?: string }) => {
      const record = existing(ctx);
      const now = new Date();
      const compiled = await currentPolicy(ctx.actors, ctx.remainingMs());
      const by = await actingFor(ctx, compiled, record, arg.grantorId, "revoking a consent", now);
      const outside = outsideGuardianCategories(compiled, record, by, consentCategories(compiled, record, arg.purposeId, arg.termsId));
      if (outside.length) throw guardianOutside(by, record, [{ path: "/purposeId", problem: `outside the guardian categories: ${outside.join(", ")}` }]);
      const optIns = { ...record.optIns };
      const consents = { ...record.consents };
      if (arg.termsId === undefined) {
        if (!Object.hasOwn(optIns, arg.purposeId)) throw new HandlerError("NOT_FOUND", `${record.userId} has not opted in to '${arg.purposeId}'`);
        delete optIns[arg.purposeId];
      } else {
        const key = termsKey(arg.purposeId, arg.termsId);
        if (!Object.hasOwn(consents, key)) throw new HandlerError("NOT_FOUND", `${record.userId} has no consent to '${arg.purposeId}/${arg.termsId}'`);
        delete consents[key];
      }
      const entry = { at: now.toISOString(), purposeId: arg.purposeId, ...(arg.termsId ? { termsId: arg.termsId } : {}), categoryIds: null, by };
      ctx.setState({ ...record, optIns, consents, consentHistory: [...record.consentHistory, entry].slice(-maxConsentHistory) });
      return { optIns, consents };
    }),

    /**
     * Restriction (docs/subject-rights.md): turns off, in one write, every opt-in and consent
     * (or those of `purposeIds`), as revocations recorded in the history; a guardian also turns
     * off the child's flows of `allowedToDisable`. A guardian acts only on the guardian
     * categories: a named purpose outside them refuses the call; when none is named, those
     * outside are left on and listed.
     */
    restrict: exclusive(async (ctx: Exclusive, arg: { actorId?: string; purposeIds?: string[] }) => {
      const record = existing(ctx);
      const now = new Date();
      const compiled = await currentPolicy(ctx.actors, ctx.remainingMs());
      const by = await actingFor(ctx, compiled, record, arg.actorId, "a restriction", now);
      const named = arg.purposeIds && new Set(arg.purposeIds);
      const unknown = [...(named ?? [])].filter((purposeId) => !configuredPurposeIds(compiled).has(purposeId));
      // A typo must not pass for a restriction: nothing is turned off.
      if (unknown.length)
        throw new HandlerError("USER_INVALID", `no purpose ${unknown.map((id) => `'${id}'`).join(", ")} in the configuration: nothing was restricted`, {
          details: unknown.map((id) => ({ path: "/purposeIds", problem: `'${id}' names no purpose of the configuration` })),
        });
      const candidates = [
        ...Object.keys(record.optIns).map((purposeId) => ({ purposeId, termsId: undefined as string | undefined })),
        ...Object.keys(record.consents).map((key) => ({ purposeId: key.slice(0, key.indexOf("/")), termsId: key.slice(key.indexOf("/") + 1) })),
      ].filter((c) => !named || named.has(c.purposeId));
      const optIns = { ...record.optIns };
      const consents = { ...record.consents };
      const history = [...record.consentHistory];
      const restricted: Array<{ purposeId: string; termsId?: string }> = [];
      const leftOn: Array<{ purposeId: string; termsId?: string; outside: string[] }> = [];
      for (const candidate of candidates) {
        const outside = outsideGuardianCategories(compiled, record, by, consentCategories(compiled, record, candidate.purposeId, candidate.termsId));
        const item = { purposeId: candidate.purposeId, ...(candidate.termsId === undefined ? {} : { termsId: candidate.termsId }) };
        if (outside.length) {
          leftOn.push({ ...item, outside });
          continue;
        }
        if (candidate.termsId === undefined) delete optIns[candidate.purposeId];
        else delete consents[termsKey(candidate.purposeId, candidate.termsId)];
        history.push({ at: now.toISOString(), ...item, categoryIds: null, by });
        restricted.push(item);
      }
      if (named && leftOn.length)
        throw guardianOutside(
          by,
          record,
          leftOn.map((item) => ({
            path: "/purposeIds",
            problem: `'${item.purposeId}' covers categories outside the guardian categories: ${item.outside.join(", ")}`,
          })),
        );
      let disabledFlows = record.disabledFlows;
      if (by !== record.userId)
        for (const flow of compiled.guardian?.allowedToDisable ?? [])
          for (const thirdPartyId of flow.thirdPartyIds)
            if ((!named || named.has(flow.purposeId)) && !disabledFlows.some((f) => f.purposeId === flow.purposeId && f.thirdPartyId === thirdPartyId))
              disabledFlows = [...disabledFlows, { purposeId: flow.purposeId, thirdPartyId }];
      ctx.setState({ ...record, optIns, consents, disabledFlows, consentHistory: history.slice(-maxConsentHistory) });
      return { by, restricted, disabledFlows, leftOn };
    }),

    /** What a guardian may turn off for this child, and what is off now. */
    guardianOptions: shared(async (ctx: SharedContext<State>) => {
      const record = existing(ctx);
      const compiled = await currentPolicy(ctx.actors, ctx.remainingMs());
      return (compiled.guardian?.allowedToDisable ?? []).flatMap((flow) => {
        const sharing = compiled.sharing.get(flow.purposeId);
        if (!sharing) return [];
        return flow.thirdPartyIds.flatMap((thirdPartyId) => {
          const party = sharing.thirdParties.get(thirdPartyId);
          return party
            ? [
                {
                  purposeId: flow.purposeId,
                  purposeName: sharing.purpose.name,
                  thirdPartyId,
                  thirdPartyName: party.name,
                  disabled: record.disabledFlows.some((f) => f.purposeId === flow.purposeId && f.thirdPartyId === thirdPartyId),
                },
              ]
            : [];
        });
      });
    }),

    /** A guardian turns a sharing flow off (or on again) for this child; only flows in allowedToDisable. */
    setFlow: exclusive(async (ctx: Exclusive, arg: { guardianId: string; purposeId: string; thirdPartyId: string; disabled: boolean }) => {
      const record = existing(ctx);
      const now = new Date();
      const compiled = await currentPolicy(ctx.actors, ctx.remainingMs());
      const sameFlow = (f: { purposeId: string; thirdPartyId: string }) => f.purposeId === arg.purposeId && f.thirdPartyId === arg.thirdPartyId;
      if (!isChild(compiled, record, now)) {
        // A flow a guardian turned off while the user was a child: the user, an adult now, may turn it back on (only on:
        // an adult narrows what they accepted with revocation and restriction, not with a guardian's switch).
        if (arg.guardianId === record.userId && !arg.disabled && record.disabledFlows.some(sameFlow)) {
          const disabledFlows = record.disabledFlows.filter((f) => !sameFlow(f));
          ctx.setState({ ...record, disabledFlows });
          return { disabledFlows };
        }
        throw new HandlerError("GUARDIAN_INVALID", `${record.userId} is not a child: a flow is turned off by a guardian, and back on by the user themself`);
      }
      await actingFor(ctx, compiled, record, arg.guardianId, "changing a flow", now);
      const permitted = compiled.guardian?.allowedToDisable.some((f) => f.purposeId === arg.purposeId && f.thirdPartyIds.includes(arg.thirdPartyId));
      if (!permitted)
        throw new HandlerError("FLOW_NOT_DISABLEABLE", `guardian rights do not let a guardian turn off '${arg.purposeId}' to '${arg.thirdPartyId}'`);
      const others = record.disabledFlows.filter((f) => !(f.purposeId === arg.purposeId && f.thirdPartyId === arg.thirdPartyId));
      const disabledFlows = arg.disabled ? [...others, { purposeId: arg.purposeId, thirdPartyId: arg.thirdPartyId }] : others;
      ctx.setState({ ...record, disabledFlows });
      return { disabledFlows };
    }),

    /**
     * Erasure: the state is removed at once. It returns the users linked to this one, whose
     * side of the link the caller then removes (`unlink`, idempotent): calling them from here
     * could deadlock with their own erasure.
     */
    erase: exclusive((ctx: Exclusive) => {
      const record = existing(ctx);
      ctx.clearState();
      return { erased: record.userId, linked: [...record.guardians, ...record.children] };
    }),
  },
});
