import { createHash, randomUUID } from "node:crypto";
import type { Socket } from "node:net";
import { pipeline, Transform } from "node:stream";
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import fp from "fastify-plugin";
import type { AccessOutcome } from "../auth/authenticator";
import { type Action, type AuthorizedComponent, type CallerRights, unenforcedRights, permits } from "../auth/authorization";
import { emptySha256, sha256Hex } from "../auth/cloud-signature";
import { challenges, offeredCredential } from "../auth/http-credentials";
import { signedRequestFrom } from "../auth/signed-request";
import type { Component, Credential, OverridesByVerifier } from "../auth/types";
import { AuditOnce, outcomeAudit, type Refusal, RememberedOutcomes, refusalCode } from "../auth/credential-check";
import { HttpError } from "./errors";
import { auditSource, RepeatedAudit } from "../auth/repeated-audit";
import type { Caller } from "../api/types";
import type { Authenticator } from "../auth/authenticator";
import { userIdOf } from "../auth/identity-mapping";
import type { AuditRecord } from "../actors/runtime/event-log";

declare module "fastify" {
  interface FastifyRequest {
    /** Who the request is from, once the authentication hook ran (requests outside the components have none). */
    access?: Caller;
    /** What the caller may do (auth/authorization.ts), once admitted: routes ask `permits(request.rights, component, action)`. */
    rights?: CallerRights;
    /** The userId the verified caller is, by the security file's identity mapping (docs/subject-rights.md); absent: none. */
    callerUserId?: string;
  }
}

declare module "fastify/types/context" {
  interface FastifyContextConfig {
    /** The route reads its body as a stream (document uploads) and stores it as it arrives. */
    streamedBody?: boolean;
    /** A web UI file, served without credentials (gateway/ui-routes.ts). */
    uiAsset?: boolean;
    /** The permission the route needs when its method does not say it (gateway/route-permissions.ts `needs`). */
    permission?: RequiredPermission;
    /** A subject-rights route: it decides about its caller itself (one's own report, or user:admin). */
    subjectRights?: boolean;
  }
}

/** The permission a request needs, as the door or route says (absent: the component's requests need none beyond authentication). */
export interface RequiredPermission {
  component: AuthorizedComponent;
  action: Action;
}

interface ConnectionState {
  connectionId: string;
  /** Audit records already written for this connection (one per component and outcome, not one per request). */
  audited: AuditOnce;
  /** Basic credentials verified on this connection: the outcome (identity and the profile that verified it) by digest, for a minute (saves an LDAP bind and group search per request). */
  verifiedPasswords: RememberedOutcomes<Extract<AccessOutcome, { kind: "verified" }>>;
  /** The caller of this connection's requests to components that enforce nothing. */
  openAccess?: Caller;
}

/** The audit key of a component used without authentication: one string per component, not one per request. */
const openKeys = new Map<string, string>();
function openKey(component: string): string {
  let key = openKeys.get(component);
  if (key === undefined) openKeys.set(component, (key = `open:${component}`));
  return key;
}

const passwordReuseMs = 60_000;
const realm = "warden";

/** Authentication of an HTTP door (the gateway, an HTTP export): absent, nothing is enforced and nothing is audited per connection. */
export interface HttpAuthentication {
  authenticator: Authenticator;
  audit(entry: Omit<AuditRecord, "id" | "time" | "nodeId">): Promise<unknown>;
}

/** The domain name a request was sent to (the Host header without port, brackets or final dot): what domain selectors match. */
export function domainOf(request: FastifyRequest): string | undefined {
  return request.headers.host
    ?.replace(/:\d+$/, "")
    .replace(/^\[(.*)\]$/, "$1")
    .replace(/\.$/, "");
}

function hasBody(request: FastifyRequest): boolean {
  const length = request.headers["content-length"];
  return request.headers["transfer-encoding"] !== undefined || (length !== undefined && Number(length) !== 0);
}

/** The body hash a signer declared (and signed) in x-amz-content-sha256, when it is one. */
function declaredBodySha256(request: FastifyRequest): string | undefined {
  const declared = request.headers["x-amz-content-sha256"];
  return typeof declared === "string" && /^[0-9a-f]{64}$/.test(declared) ? declared : undefined;
}

/** Routes that read their body as a stream (document uploads) and store it as it arrives. */
function streamsBody(request: FastifyRequest): boolean {
  return request.routeOptions.config?.streamedBody === true;
}

/**
 * A web UI file (gateway/ui-routes.ts marks its routes `uiAsset`): static HTML, scripts and
 * styles with no data in them, served without credentials so that the page can load and ask
 * for them; only GET and HEAD, only those routes. Every API call the page makes is enforced.
 */
function isUiAsset(request: FastifyRequest): boolean {
  if (request.method !== "GET" && request.method !== "HEAD") return false;
  return isUiRoute(request);
}

/** A route of a web UI file (any method: ui-routes registers only GETs). */
export function isUiRoute(request: FastifyRequest): boolean {
  return request.routeOptions.config?.uiAsset === true;
}

/**
 * Authentication of the REST APIs and web UIs (spec 5.1): each request to an enforced component
 * must carry Basic, Bearer or cloud-signing credentials that its verifier accepts, else 401 with
 * WWW-Authenticate. Audit (spec 6): denials at warn on every request; a connection's first
 * success at info, its first unauthenticated use at debug.
 */
export const authentication = fp<{
  auth: HttpAuthentication;
  componentOf: (request: FastifyRequest) => Component | undefined;
  /** The permission each request needs; checked once the caller is known, denied with 403 ERR_AUTH_FORBIDDEN. */
  permissionOf: (request: FastifyRequest) => RequiredPermission | undefined;
  overrides?: OverridesByVerifier;
  signing?: "s3";
}>(async (app: FastifyInstance, { auth, componentOf, permissionOf, overrides, signing }) => {
  const connections = new WeakMap<Socket, ConnectionState>();
  const connectionOf = (request: FastifyRequest): ConnectionState => {
    const socket = request.raw.socket;
    let state = connections.get(socket);
    if (!state)
      connections.set(socket, (state = { connectionId: randomUUID(), audited: new AuditOnce(), verifiedPasswords: new RememberedOutcomes(passwordReuseMs) }));
    return state;
  };

  // Throttled logins repeat by the thousand under guessing: one record per address, user and minute, with the count.
  // Written from a timer, outside any request: a record JetStream does not take is still in the node log (audit logs first), never an unhandled rejection.
  const throttledAudit = new RepeatedAudit((message, details, count) => {
    auth
      .audit({ category: String(details.component), level: "warn", event: "connection.throttled", message, details: { ...details, count } })
      .catch(() => undefined);
  });

  // Refused logins (no, wrong or unknown credentials) repeat under a flood of unauthenticated noise: the first of a kind is written at once, its repeats once a minute with the count.
  const deniedAudit = new RepeatedAudit((message, details, count) => {
    const { event, connectionId, ...rest } = details;
    auth
      .audit({
        category: String(details.component),
        level: "warn",
        event: String(event),
        message,
        ...(count === 1 ? { connectionId: String(connectionId) } : {}),
        details: { ...rest, count },
      })
      .catch(() => undefined);
  });

  const deny = async (request: FastifyRequest, reply: FastifyReply, component: Component, state: ConnectionState, outcome: Refusal): Promise<HttpError> => {
    if (outcome.kind === "throttled") {
      const user = offeredUser(request);
      throttledAudit.record(
        `${component.name}\0${request.ip}\0${user ?? ""}`,
        `${request.method} ${request.routeOptions.url ?? ""} refused: ${outcome.reason}`,
        { component: component.name, outcome: outcome.kind, remote: request.ip, user: user ?? null },
        `${component.name}\0${auditSource(request.ip)}`,
      );
      void reply.header("retry-after", String(outcome.retryAfterSeconds));
      return new HttpError(refusalCode(outcome), outcome.reason);
    }
    const user = offeredUser(request);
    const { event, details } = outcomeAudit(outcome);
    // One record per source, subject, kind of refusal and minute: values a client chose (quoted names, numbers) do not make a new kind.
    deniedAudit.record(
      [component.name, request.ip, user ?? "", event, outcome.kind, outcome.reason.replace(/'[^']*'|"[^"]*"|\d+/g, "…")].join("\0"),
      `${request.method} ${request.routeOptions.url ?? ""} refused: ${outcome.reason}`,
      { component: component.name, event, ...details, remote: request.ip, user: user ?? null, connectionId: state.connectionId },
      // The user name and the reason are the client's to vary: past a bound, one source's kinds are counted together.
      `${component.name}\0${auditSource(request.ip)}`,
    );
    const types = auth.authenticator.credentialTypesFor(component);
    void reply.header("www-authenticate", challenges(types, realm));
    // The verifier's reason stays in the audit: a client learns only which kinds of credentials the path takes.
    return outcome.kind === "unsupported"
      ? new HttpError("ERR_AUTH_UNSUPPORTED", `this path takes ${types.join(", ")} credentials`)
      : new HttpError(refusalCode(outcome));
  };

  const admit = async (request: FastifyRequest, component: Component, state: ConnectionState, outcome: Extract<AccessOutcome, { kind: "verified" }>) => {
    const { authorizer } = auth.authenticator;
    const assertions = authorizer.assertionsOf(outcome.identity);
    request.access = { connectionId: state.connectionId, subject: outcome.identity.subject, assertions };
    request.rights = authorizer.rightsOf({ identity: outcome.identity, verifier: outcome.by.verifier, profile: outcome.by.profile });
    const callerUserId = userIdOf(auth.authenticator.config.identityMapping, outcome.by.verifier, outcome.identity);
    if (callerUserId !== undefined) request.callerUserId = callerUserId;
    // One record per component and identity on a connection: the same subject through another verifier or profile is another identity.
    await state.audited.once(`ok:${component.name}:${outcome.by.verifier}/${outcome.by.profile}:${outcome.identity.subject}`, () => {
      const { level, event, details } = outcomeAudit(outcome);
      return auth.audit({
        category: component.name,
        level,
        event,
        message: `'${outcome.identity.subject}' authenticated for ${component.name}`,
        connectionId: state.connectionId,
        details: { component: component.name, ...details, assertions, remote: request.ip },
      });
    });
    await authorize(request, component, state);
  };

  /** The caller is known: the route's permission must be granted, else 403, audited with subject, component, action and the rules that matched. */
  const authorize = async (request: FastifyRequest, component: Component, state: ConnectionState): Promise<void> => {
    const needed = permissionOf(request);
    if (!needed || permits(request.rights, needed.component, needed.action)) return;
    const subject = request.rights?.subject ?? null;
    const permission = `${needed.component}:${needed.action}`;
    await auth.audit({
      category: component.name,
      level: "warn",
      event: "connection.forbidden",
      message: `${request.method} ${request.routeOptions.url ?? ""} refused: '${subject}' does not hold ${permission}`,
      connectionId: state.connectionId,
      details: {
        component: needed.component,
        action: needed.action,
        subject,
        rule: null,
        matchedRules: request.rights?.rules ?? [],
        remote: request.ip,
      },
    });
    throw new HttpError("ERR_AUTH_FORBIDDEN", `this caller does not hold ${permission}`, { component: needed.component, action: needed.action });
  };

  const verifyCredential = async (component: Component, state: ConnectionState, credential: Credential, from: { address: string }): Promise<AccessOutcome> => {
    if (credential.type !== "namepwd") return auth.authenticator.verify(component, credential, overrides, from);
    const digest = sha256Hex(`${component.name}\0${component.domainName ?? ""}\0${credential.user}\0${credential.password}`);
    // The digest names the component and domain name, which choose the profile: a remembered outcome is the one a new check would give.
    const known = state.verifiedPasswords.get(digest);
    if (known !== undefined) return known;
    const outcome = await auth.authenticator.verify(component, credential, overrides, from);
    if (outcome.kind === "verified") state.verifiedPasswords.remember(digest, outcome);
    return outcome;
  };

  const verifySignature = (request: FastifyRequest, component: Component, bodySha256: string) =>
    auth.authenticator.verify(
      component,
      {
        type: "cloudSigningCredentials",
        request: signedRequestFrom({
          method: request.method,
          url: request.url,
          headers: request.raw.headersDistinct ?? request.headers,
          bodySha256,
          ...(signing ? { convention: signing } : {}),
        }),
      },
      overrides,
    );

  /** Admits a verified request; any other outcome is audited and thrown as the request's answer. */
  const conclude = async (
    request: FastifyRequest,
    reply: FastifyReply,
    component: Component,
    state: ConnectionState,
    outcome: AccessOutcome,
  ): Promise<void> => {
    if (outcome.kind !== "verified") throw await deny(request, reply, component, state, outcome);
    await admit(request, component, state, outcome);
    // What the caller holds, for the web UIs to disable what it may not do (never more than the caller's own rights).
    void reply.header("x-warden-permissions", permissionsHeader(request.rights));
  };

  // Callback style: a request to a component that enforces nothing, on a connection already audited, passes without a promise (the hot path).
  app.addHook("onRequest", (request, reply, done) => {
    const component = componentOf(request);
    if (!component || isUiAsset(request)) return done();
    const state = connectionOf(request);
    void reply.header("x-connection-id", state.connectionId);
    if (!auth.authenticator.isEnforced(component)) {
      // One caller per connection, frozen (it is in every trace record of the connection's decisions): no object per request.
      request.access = state.openAccess ??= Object.freeze({
        connectionId: state.connectionId,
        subject: null,
        assertions: Object.freeze([]) as unknown as string[],
      });
      // Authorization applies to verified subjects: a component that enforces no authentication grants everything (docs/authorization.md).
      request.rights = unenforcedRights;
      const key = openKey(component.name);
      if (state.audited.has(key)) return done();
      Promise.resolve(
        state.audited.once(key, () =>
          auth.audit({
            category: component.name,
            level: "debug",
            event: "connection.unauthenticated",
            message: `${component.name} used without authentication (not enforced)`,
            connectionId: state.connectionId,
            details: { component: component.name, remote: request.ip },
          }),
        ),
      ).then(() => done(), done);
      return;
    }
    enforce(request, reply, component, state).then(() => done(), done);
  });

  const enforce = async (request: FastifyRequest, reply: FastifyReply, component: Component, state: ConnectionState): Promise<void> => {
    const offered = offeredCredential(request.headers.authorization, request.url.split("?", 2)[1] ?? "");
    if (offered.kind === "none") throw await deny(request, reply, component, state, { kind: "missing", reason: "no credentials" });
    if (offered.kind === "malformed")
      throw await deny(request, reply, component, state, { kind: "malformed", reason: `malformed ${offered.scheme} credentials` });
    if (offered.kind === "unsupported")
      throw await deny(request, reply, component, state, {
        kind: "unsupported",
        credentialType: offered.scheme,
        reason: `unknown authentication scheme '${offered.scheme}'`,
      });
    if (offered.kind === "credential")
      return conclude(request, reply, component, state, await verifyCredential(component, state, offered.credential, { address: request.ip }));
    if (!auth.authenticator.credentialTypesFor(component).includes("cloudSigningCredentials")) {
      throw await deny(request, reply, component, state, {
        kind: "unsupported",
        credentialType: "cloudSigningCredentials",
        reason: `no verifier takes 'cloudSigningCredentials' credentials for component '${component.name}'`,
      });
    }
    if (!hasBody(request)) return conclude(request, reply, component, state, await verifySignature(request, component, emptySha256));
    if (request.method === "GET" || request.method === "HEAD")
      throw await deny(request, reply, component, state, { kind: "malformed", reason: `a signed ${request.method} with a body` });
    // A declared body hash is checked with the signature now, and against the bytes as they arrive.
    const declared = declaredBodySha256(request);
    if (declared) {
      await conclude(request, reply, component, state, await verifySignature(request, component, declared));
      bodyChecks.set(request, { component, state, expected: declared });
      return;
    }
    // A stored upload must not start before its signature is known to be good.
    if (streamsBody(request))
      throw await deny(request, reply, component, state, { kind: "malformed", reason: "a signed upload must declare and sign x-amz-content-sha256" });
    // Otherwise the signature is checked when the last byte has arrived, before the route sees the end of the body.
    request.access = { connectionId: state.connectionId, subject: null, assertions: [] };
    bodyChecks.set(request, { component, state });
  };

  app.addHook("preParsing", async (request, reply, payload) => {
    const check = bodyChecks.get(request);
    if (!check) return payload;
    const { component, state } = check;
    const hash = createHash("sha256");
    // The last chunk is held back until the hash is known: a route that streams the body on (to a store) never hands over a whole unverified body.
    let held: Buffer | undefined;
    const checked = new Transform({
      transform(chunk: Buffer, _encoding, callback) {
        hash.update(chunk);
        const previous = held;
        held = chunk;
        callback(null, previous);
      },
      flush(callback) {
        const received = hash.digest("hex");
        const settle = async (): Promise<void> => {
          if (check.expected === undefined) return conclude(request, reply, component, state, await verifySignature(request, component, received));
          if (received !== check.expected)
            throw await deny(request, reply, component, state, { kind: "malformed", reason: "the body does not match its signed x-amz-content-sha256" });
        };
        settle().then(
          () => callback(null, held),
          (error: Error) => {
            check.failed = true;
            callback(error);
          },
        );
      },
    });
    // Fastify checks the body limit against the bytes received on the wire.
    Object.defineProperty(checked, "receivedEncodedLength", { get: () => (payload as unknown as { receivedEncodedLength?: number }).receivedEncodedLength });
    // pipeline: an error on either side reaches the other, and one nobody reads is not an uncaught 'error' event.
    pipeline(payload, checked, (error) => {
      if (error) check.failed = true;
    });
    return checked;
  });

  // Every other request of an enforced component was admitted or refused in onRequest; a signed
  // body's request runs only once its check passed (a route that never read its body included).
  app.addHook("preHandler", async (request) => {
    const check = bodyChecks.get(request);
    if (check && (check.failed || request.access?.subject === null)) throw new HttpError("ERR_AUTH_INVALID");
  });
});

/** A signed request whose body is still to be checked: where it goes, the hash its signer declared (if any), whether the check failed. */
interface BodyCheck {
  component: Component;
  state: ConnectionState;
  expected?: string;
  failed?: boolean;
}

const bodyChecks = new WeakMap<FastifyRequest, BodyCheck>();

/** `*` for every permission, else the granted `component:action` list, space-separated. */
function permissionsHeader(rights: CallerRights | undefined): string {
  if (rights?.all) return "*";
  return [...(rights?.grants.keys() ?? [])].sort().join(" ");
}

/** The user name of Basic credentials, for the audit of throttled logins (never the password). */
function offeredUser(request: FastifyRequest): string | undefined {
  const offered = offeredCredential(request.headers.authorization, "");
  return offered.kind === "credential" && offered.credential.type === "namepwd" ? offered.credential.user : undefined;
}
