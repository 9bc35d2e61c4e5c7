import type { FastifyInstance, RouteOptions } from "fastify";
import { httpErrors } from "../http/errors";

/** The body of every error answer (http/errors.ts), as one OpenAPI component. */
export const errorBodySchema = {
  $id: "ErrorBody",
  type: "object",
  description:
    "Every error answer: a registered code (http/errors.ts), a message for people, and details when the code has them (validation problems, referring paths)",
  properties: {
    error: {
      type: "object",
      properties: { code: { type: "string", enum: Object.keys(httpErrors) }, message: { type: "string" }, details: {} },
      required: ["code", "message"],
    },
  },
  required: ["error"],
} as const;

const errorRef = { $ref: "ErrorBody#" } as const;

/**
 * A JSON answer whose shape the route's summary and docs/ describe. No type: the serializer
 * then writes the value as it is (an object or, as guardian options are, an array), dropping
 * and coercing nothing.
 */
const jsonAnswer = { description: "The answer (JSON); see the summary and docs/" } as const;

/**
 * The credentials the gateway takes (docs/authentication.md). Which components require them is
 * the security configuration's choice, so each scheme is optional in the document (`{}` first).
 */
export const securitySchemes = {
  basicAuth: { type: "http", scheme: "basic", description: "user name and password (namepwd), checked by the LDAP verifier" },
  bearerAuth: { type: "http", scheme: "bearer", description: "an OAuth access token (rawBearerToken), checked by the OAuth verifier" },
  cloudSignature: {
    type: "apiKey",
    in: "header",
    name: "Authorization",
    description:
      "AWS Signature Version 4 (AWS4-HMAC-SHA256, service 'warden'): cloudSigningCredentials, checked by the cloud verifier; see docs/cloud-signing.md",
  },
} as const;

export const security: Array<Record<string, string[]>> = [{}, { basicAuth: [] }, { bearerAuth: [] }, { cloudSignature: [] }];

/**
 * Every documented route says what it answers: its own schema for success when it has one (else
 * a JSON object), and the error body for 4XX and 5XX. Added as routes are registered, so a new
 * route is documented without anyone remembering to.
 */
export function documentResponses(app: FastifyInstance): void {
  app.addSchema(errorBodySchema);
  app.addHook("onRoute", (route: RouteOptions) => {
    const schema = route.schema as (Record<string, unknown> & { hide?: boolean; response?: Record<string, unknown> }) | undefined;
    if (!schema || schema.hide) return;
    const response = { ...(schema.response ?? {}) };
    if (!Object.keys(response).some((status) => status.startsWith("2"))) response[200] = jsonAnswer;
    response["4XX"] ??= errorRef;
    response["5XX"] ??= errorRef;
    route.schema = { ...schema, response };
  });
}
