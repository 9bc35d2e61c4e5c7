import { compiledFor } from "../actors/decision/compile-cache";
import { personalizedTerms } from "../actors/decision/terms";
import { policy } from "../actors/policy/policy-actor";
import type { ActorRuntime } from "../actors/runtime/runtime";
import { user } from "../actors/user/user-actor";
import type { UserPort } from "../gateway/types";

/** The gateway's view of users: calls to user actors; erasure is audited. */
export function userPort(runtime: ActorRuntime): UserPort {
  const ref = (userId: string) => runtime.client.ref(user, userId);
  return {
    create: (userId, attributes, contractualRelationship) => ref(userId).create({ attributes, contractualRelationship }),
    get: (userId) => ref(userId).get(),
    erase: async (userId, by) => {
      const result = await ref(userId).erase();
      await runtime.events.audit({ category: "user", level: "info", event: "user.erased", message: `user ${userId} erased`, details: { userId, by } });
      return result;
    },
    termsFor: async (context) => {
      const { config, revision } = await runtime.client.ref(policy, "default").get();
      return personalizedTerms(compiledFor(config, revision), context, new Date());
    },
    termsOf: (userId) => ref(userId).terms(),
    accept: (userId, acceptorId) => ref(userId).accept({ acceptorId }),
    consent: (userId, grantorId, consents) => ref(userId).consent({ grantorId, consents }),
    revoke: (userId, grantorId, purposeId, termsId) => ref(userId).revoke({ grantorId, purposeId, termsId }),
    addGuardian: (childId, guardianId) => ref(childId).addGuardian(guardianId),
    guardianOptions: (userId) => ref(userId).guardianOptions(),
    setFlow: (userId, guardianId, purposeId, thirdPartyId, disabled) => ref(userId).setFlow({ guardianId, purposeId, thirdPartyId, disabled }),
  };
}
