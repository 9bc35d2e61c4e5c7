import { needs } from "./route-permissions";
import type { FastifyPluginAsync } from "fastify";
import type { ConsentEntry } from "../actors/user/user-actor";
import { requester } from "./requester";
import type { RightsPort, UserPort } from "../api/types";
import { rightsRoutes } from "./rights-routes";
import { acceptTermsQuery, consentBody, createUserBody, flowBody, guardianBody, revokeBody, termsQueryBody, userParams } from "./requests/user-requests";
import {
  acceptedAnswer,
  choicesAnswer,
  erasedAnswer,
  flowsAnswer,
  guardianOptionsAnswer,
  guardiansAnswer,
  reacceptAnswer,
  termsAnswer,
  userAnswer,
  userTermsAnswer,
} from "./answers/user-answers";

const tags = ["user"];

/** /user: onboarding, terms, consent and guardians (spec 2.10, 2.11, 3.3, 4.5). Decisions recorded in docs/user-api.md. */
export function userRoutes(users: UserPort, rights?: RightsPort): FastifyPluginAsync {
  return async (app) => {
    if (rights) await app.register(rightsRoutes(rights));
    app.put<{ Body: { userId: string; attributes?: Record<string, string>; contractualRelationship?: { purposeId: string; termsId: string } } }>(
      "/user",
      {
        schema: {
          tags,
          summary: "Create a user (409 if the userId exists)",
          body: createUserBody,
          response: { 200: userAnswer },
        },
      },
      async (request) => {
        const body = request.body;
        return users.create(body.userId, body.attributes, body.contractualRelationship);
      },
    );
    app.get<{ Params: { userId: string } }>(
      "/user/:userId",
      { schema: { tags, summary: "A user: attributes, accepted terms, consents, guardian links", params: userParams, response: { 200: userAnswer } } },
      async (request) => users.get(request.params.userId),
    );
    app.delete<{ Params: { userId: string } }>(
      "/user/:userId",
      {
        config: needs({ component: "user", action: "admin" }),
        schema: {
          tags,
          summary: "Erase a user (audited); the answer says what was erased and what is kept for audit",
          params: userParams,
          response: { 200: erasedAnswer },
        },
      },
      async (request) => {
        const { userId } = request.params;
        return rights ? rights.erase(userId, requester(request)) : users.erase(userId, requester(request));
      },
    );

    app.put<{ Body: { attributes?: Record<string, string>; contractualRelationship?: { purposeId: string; termsId: string } } }>(
      "/user/terms/query",
      {
        // A query by PUT: it changes nothing.
        config: needs({ component: "user", action: "read" }),
        schema: {
          tags,
          summary: "Personalized terms for a context; {} gives the terms that apply to all users by default",
          body: termsQueryBody,
          response: { 200: termsAnswer },
        },
      },
      async (request) => users.termsFor(request.body),
    );
    app.get<{ Params: { userId: string } }>(
      "/user/:userId/terms",
      {
        schema: {
          tags,
          summary: "The user's current personalized terms, the accepted version, and reacceptRequired",
          params: userParams,
          response: { 200: userTermsAnswer },
        },
      },
      async (request) => users.termsOf(request.params.userId),
    );
    app.get<{ Params: { userId: string } }>(
      "/user/:userId/reaccept",
      {
        schema: {
          tags,
          summary: "The reacceptance check: reacceptRequired is true when the current terms grant more than what was accepted",
          params: userParams,
          response: { 200: reacceptAnswer },
        },
      },
      async (request) => {
        const { userId } = request.params;
        const { reacceptRequired, acceptedTermsHash, terms } = await users.termsOf(userId);
        return { userId, reacceptRequired, acceptedTermsHash, currentTermsHash: terms.hash };
      },
    );
    app.put<{ Querystring: { userId: string; acceptorId?: string; termsHash?: string } }>(
      "/user/terms",
      {
        schema: {
          tags,
          summary: "Record acceptance of the user's current personalized terms (a child's by a guardian: acceptorId)",
          querystring: acceptTermsQuery,
          response: { 200: acceptedAnswer },
        },
      },
      async (request) => {
        const { userId, acceptorId, termsHash } = request.query;
        return users.accept(userId, acceptorId, termsHash);
      },
    );

    app.put<{ Body: { userId: string; grantorId?: string; consents: { affirmativeConsents: ConsentEntry[] } } }>(
      "/user/consent",
      {
        schema: {
          tags,
          summary: "Record consents (spec 2.11); a consent naming an opt-in purpose opts in. A child's need a guardian grantorId",
          body: consentBody,
          response: { 200: choicesAnswer },
        },
      },
      async (request) => {
        const body = request.body;
        return users.consent(body.userId, body.grantorId, body.consents.affirmativeConsents);
      },
    );
    app.put<{ Body: { userId: string; grantorId?: string; purposeId: string; termsId?: string } }>(
      "/user/consent/revoke",
      {
        schema: {
          tags,
          summary: "Revoke a consent (termsId given) or an opt-in (no termsId)",
          body: revokeBody,
          response: { 200: choicesAnswer },
        },
      },
      async (request) => {
        const body = request.body;
        return users.revoke(body.userId, body.grantorId, body.purposeId, body.termsId);
      },
    );
    app.put<{ Body: { childId: string; guardianId: string; grantorId?: string } }>(
      "/user/guardian",
      {
        schema: {
          tags,
          summary: "Link a guardian to a child",
          body: guardianBody,
          response: { 200: guardiansAnswer },
        },
      },
      async (request) => {
        const body = request.body;
        return users.addGuardian(body.childId, body.guardianId, body.grantorId);
      },
    );
    app.get<{ Params: { userId: string } }>(
      "/user/:userId/guardian-options",
      {
        schema: {
          tags,
          summary: "getGuardianOptions: the sharing flows a guardian may turn off for this child, and which are off",
          params: userParams,
          response: { 200: guardianOptionsAnswer },
        },
      },
      async (request) => users.guardianOptions(request.params.userId),
    );
    app.put<{ Body: { guardianId: string; purposeId: string; thirdPartyId: string; disabled: boolean }; Params: { userId: string } }>(
      "/user/:userId/flows",
      {
        schema: {
          tags,
          summary: "A guardian turns a sharing flow off (disabled: true) or on again for this child",
          params: userParams,
          body: flowBody,
          response: { 200: flowsAnswer },
        },
      },
      async (request) => {
        const body = request.body;
        return users.setFlow(request.params.userId, body.guardianId, body.purposeId, body.thirdPartyId, body.disabled);
      },
    );
  };
}
