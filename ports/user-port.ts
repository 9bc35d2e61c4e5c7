import { compiledFor } from "../decision/compile-cache";
import { personalizedTerms } from "../decision/terms";
import { policy } from "../actors/policy/policy-actor";
import type { ActorRuntime } from "../actors/runtime/runtime";
import { user } from "../actors/user/user-actor";
import type { UserPort } from "../api/types";

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
  // it, nothing linked), and its own record follows, best effort once the link stands.
  const auditLinkRequest = (childId: string, guardianId: string) =>
    runtime.events.audit({
      category: "user",
      level: "info",
      event: "guardian.link-requested",
      message: `${guardianId} asks to act as guardian of ${childId}`,
      details: { childId, guardianId },
    });
  const auditLink = (childId: string, guardianId: string) =>
    runtime.events
      .audit({
        category: "user",
        level: "info",
        event: "guardian.linked",
        message: `${guardianId} acts as guardian of ${childId}`,
        details: { childId, guardianId },
      })
      .catch(() => undefined);
  return {
    create: (userId, attributes, contractualRelationship) => written([userId], ref(userId).create({ attributes, contractualRelationship })),
    get: (userId) => ref(userId).get(),
    erase: async (userId, by) => {
      // In the audit log before anything is erased: refused with nothing erased when the log cannot take it (fail closed); once
      // erasure began, every step runs (a later audit failure does not leave guardian links or the decision index behind).
      await runtime.events.audit({
        category: "user",
        level: "info",
        event: "user.erasure-requested",
        message: `${by} asks to erase user ${userId}`,
        details: { userId, by },
      });
      const { erased, linked } = await written([userId], ref(userId).erase());
      await runtime.events
        .audit({ category: "user", level: "info", event: "user.erased", message: `user ${userId} erased`, details: { userId, by } })
        .catch(() => undefined);
      for (const other of linked) {
        await written([other], ref(other).unlink(userId)).catch((error: { code?: string }) => {
          if (error.code !== "NOT_FOUND")
            runtime.host.log.warn(
              { err: error, userId, other },
              "could not remove the other side of a guardian link; it confers nothing (guardianship is checked on both sides)",
            );
        });
      }
      return { erased, unlinked: linked };
    },
    termsFor: async (context) => {
      const { config, revision } = await runtime.client.ref(policy, "default").get();
      return personalizedTerms(compiledFor(config, revision), context, new Date());
    },
    termsOf: (userId) => ref(userId).terms(),
    accept: async (userId, acceptorId, termsHash) => {
      if (acceptorId && acceptorId !== userId) await auditLinkRequest(userId, acceptorId);
      const accepted = await written(acceptorId ? [userId, acceptorId] : [userId], ref(userId).accept({ acceptorId, termsHash }));
      if (accepted.acceptorId) await auditLink(userId, accepted.acceptorId);
      return accepted;
    },
    consent: (userId, grantorId, consents) => written([userId], ref(userId).consent({ grantorId, consents })),
    revoke: (userId, grantorId, purposeId, termsId) => written([userId], ref(userId).revoke({ grantorId, purposeId, termsId })),
    addGuardian: async (childId, guardianId, grantorId) => {
      await auditLinkRequest(childId, guardianId);
      const result = await written([childId, guardianId], ref(childId).addGuardian({ guardianId, grantorId }));
      await auditLink(childId, guardianId);
      return result;
    },
    guardianOptions: (userId) => ref(userId).guardianOptions(),
    setFlow: (userId, guardianId, purposeId, thirdPartyId, disabled) =>
      written([userId], ref(userId).setFlow({ guardianId, purposeId, thirdPartyId, disabled })),
  };
}
