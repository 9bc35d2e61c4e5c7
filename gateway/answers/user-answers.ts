import { anyObject, flag, listOf, nullableText, openObject, text, texts } from "./answer";

/** Answers of /user (actors/user/user-actor.ts, decision/types.ts UserPolicyState). */

const choices = {
  optIns: anyObject("opt-in platform use purposes the user opted into, by purpose id"),
  consents: anyObject("consented sharing by <purposeId>/<termsId>: the categories granted"),
};

export const userAnswer = openObject(
  "a user: attributes, acceptance, opt-ins, consents, guardians and children",
  {
    userId: text,
    attributes: anyObject("the user's attributes"),
    contractualRelationship: anyObject("purposeId and termsId"),
    acceptance: anyObject("what the user accepted: termsHash, grants, acceptedAt, acceptorId"),
    ...choices,
    disabledFlows: listOf(anyObject("purposeId and thirdPartyId")),
    createdAt: text,
    guardians: texts,
    children: texts,
    consentHistory: listOf(anyObject("a consent or opt-in change")),
  },
  ["userId"],
);

export const erasedAnswer = openObject(
  "the erasure report: the erased user, what was removed, whom the user was unlinked from, and what is kept for audit",
  {
    erased: text,
    removed: texts,
    unlinked: texts,
    kept: listOf(openObject("kept for audit", { what: text, where: text, retention: text }, ["what", "where", "retention"])),
  },
  ["erased"],
);
export const termsAnswer = anyObject("personalized terms: what each purpose may use, and why");
export const userTermsAnswer = openObject(
  "the user's personalized terms and whether they must accept them again",
  { terms: termsAnswer, acceptedTermsHash: nullableText, reacceptRequired: flag, child: flag },
  ["terms", "reacceptRequired"],
);
export const reacceptAnswer = openObject(
  "whether the user must accept the terms again",
  { userId: text, reacceptRequired: flag, acceptedTermsHash: nullableText, currentTermsHash: text },
  ["userId", "reacceptRequired"],
);
export const acceptedAnswer = openObject("what was accepted", { termsHash: text, revision: { type: "integer" }, acceptedAt: text, acceptorId: nullableText }, [
  "termsHash",
  "acceptedAt",
]);
export const choicesAnswer = openObject("the user's opt-ins and consents now", choices);
export const guardiansAnswer = openObject("the child's guardians now", { guardians: texts }, ["guardians"]);
export const guardianOptionsAnswer = listOf(anyObject("a sharing flow a guardian may turn off, and whether it is off"));
export const flowsAnswer = openObject("the flows turned off now", { disabledFlows: listOf(anyObject("purposeId and thirdPartyId")) }, ["disabledFlows"]);
