import { compiledFor } from "../decision/compile-cache";
import { personalizedTerms } from "../decision/terms";
import { policy } from "../actors/policy/policy-actor";
import type { ActorRuntime } from "../actors/runtime/runtime";
import { user } from "../actors/user/user-actor";
import type { UserPort } from "../api/types";
import { settledCall } from "./settled-call";

/** How long an erasure whose outcome is unknown keeps asking before it answers 503 (the state then says which). */
const eraseSettleMs = 30_000;

/**
 * The gateway's view of users: calls to user actors. After every write the node's cached copy
 * of that user is dropped, so its next decision reads the write. Guardian links and erasures
 * are audited (category `user`).
 */

export function userPort(runtime: ActorRuntime, forgetCached: (userId: string) => void): UserPort {
  const ref = (userId: string) => runtime.client.ref(user, userId);
  const written = async <T>(userIds: string[], write: Promise<T>): Promise<T> => {
    try {
      return await write;
    } finally {
      for (const userId of userIds) forgetCached(userId);
    }
  };
  // A guardian link gives power over a child's data: it is in the audit log before it is made (a full audit stream refuses
  // it, nothing linked), and its own record follows, best effort once the link stands (EventLog.auditedChange).
  const linkRequested = (childId: string, guardianId: string) => ({
    category: "user",
    level: "info" as const,
    event: "guardian.link-requested",
    message: `${guardianId} asks to act as guardian of ${childId}`,
    details: { childId, guardianId },
  });
  const linked = (childId: string, guardianId: string) => ({
    category: "user",
    level: "info" as const,
    event: "guardian.linked",
    message: `${guardianId} acts as guardian of ${childId}`,
    details: { childId, guardianId },
  });
  /** An idempotent call asked again while its outcome is unknown (settled-call.ts), for up to `eraseSettleMs`. */
  const settled = <T>(call: () => Promise<T>): Promise<T> => settledCall(call, eraseSettleMs);
  /**
   * Erases the user and settles the outcome: an erase call that timed out (a paused or lost server) may still run when the
   * server wakes, so its outcome is not left unknown. The user's links are read first; the erase is asked again (settled)
   * until it answers (the user then erased by this call) or answers NOT_FOUND (by the earlier one, whose links were read before).
   * Either way the steps after it (the other sides of guardian links, the decision index entry) run. An outcome still
   * unknown after `eraseSettleMs` fails the request (503): the user's state says which, and a retried DELETE finishes the index.
   */
  const eraseSettled = async (userId: string): Promise<{ erased: string; linked: string[] }> => {
    const before = await ref(userId).get();
    const linkedBefore = [...before.guardians, ...before.children];
    let asked = 0;
    try {
      const result = await settled(() => {
        if (asked++ > 0) runtime.host.log.warn({ userId, asked }, "erasure outcome unknown: asking again until it is known");
        return ref(userId).erase();
      });
      return { erased: result.erased, linked: [...new Set([...linkedBefore, ...result.linked])] };
    } catch (error) {
      // NOT_FOUND when asked again: the earlier call erased the user.
      if ((error as { code?: string }).code === "NOT_FOUND" && asked > 1) return { erased: userId, linked: linkedBefore };
      throw error;
    }
  };
  return {
    create: (userId, attributes, contractualRelationship) => written([userId], ref(userId).create({ attributes, contractualRelationship })),
    get: (userId) => ref(userId).get(),
    erase: async (userId, by) => {
      // In the audit log before anything is erased: refused with nothing erased when the log cannot take it (fail closed); once
      // erasure began, every step runs (a later audit failure does not leave guardian links or the decision index behind).
      const { erased, linked: others } = await runtime.events.auditedChange(
        { category: "user", level: "info", event: "user.erasure-requested", message: `${by} asks to erase user ${userId}`, details: { userId, by } },
        () => written([userId], eraseSettled(userId)),
        () => ({ category: "user", level: "info", event: "user.erased", message: `user ${userId} erased`, details: { userId, by } }),
      );
      for (const other of others) {
        // Asked again while its outcome is unknown (a server that was just paused answers late); unlink is idempotent.
        await written(
          [other],
          settled(() => ref(other).unlink(userId)),
        ).catch((error: { code?: string }) => {
          if (error.code !== "NOT_FOUND")
            runtime.host.log.warn(
              { err: error, userId, other },
              "could not remove the other side of a guardian link; it confers nothing (guardianship is checked on both sides)",
            );
        });
      }
      return { erased, unlinked: others };
    },
    termsFor: async (context) => {
      const { config, revision } = await runtime.client.ref(policy, "default").get();
      return personalizedTerms(compiledFor(config, revision), context, new Date());
    },
    termsOf: (userId) => ref(userId).terms(),
    accept: (userId, acceptorId, termsHash) => {
      const accept = () => written(acceptorId ? [userId, acceptorId] : [userId], ref(userId).accept({ acceptorId, termsHash }));
      // Accepting for another user is acting as their guardian.
      if (!acceptorId || acceptorId === userId) return accept();
      return runtime.events.auditedChange(linkRequested(userId, acceptorId), accept, (accepted) =>
        accepted.acceptorId ? linked(userId, accepted.acceptorId) : undefined,
      );
    },
    consent: (userId, grantorId, consents) => written([userId], ref(userId).consent({ grantorId, consents })),
    revoke: (userId, grantorId, purposeId, termsId) => written([userId], ref(userId).revoke({ grantorId, purposeId, termsId })),
    addGuardian: (childId, guardianId, grantorId) =>
      runtime.events.auditedChange(
        linkRequested(childId, guardianId),
        () => written([childId, guardianId], ref(childId).addGuardian({ guardianId, grantorId })),
        () => linked(childId, guardianId),
      ),
    guardianOptions: (userId) => ref(userId).guardianOptions(),
    setFlow: (userId, guardianId, purposeId, thirdPartyId, disabled) =>
      written([userId], ref(userId).setFlow({ guardianId, purposeId, thirdPartyId, disabled })),
  };
}
