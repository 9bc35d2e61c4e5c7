import { createHash, randomUUID } from "node:crypto";
import type { Socket } from "node:net";
import { Transform } from "node:stream";
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import fp from "fastify-plugin";
import type { AccessOutcome } from "../auth/authenticator";
import { component as componentOf } from "../auth/components";
import { emptySha256 } from "../auth/cloud-signature";
import { challenges, offeredCredential } from "../auth/http-credentials";
import { signedRequestFrom } from "../auth/signed-request";
import type { Component, Credential } from "../auth/types";
import { GatewayError } from "./errors";
import { rootPaths, type Caller, type GatewayAuthentication, type RootPath } from "./types";

declare module "fastify" {
  interface FastifyRequest {
    /** Who the request is from, once the authentication hook ran (requests outside the components have none). */
    access?: Caller;
  }
}

interface ConnectionState {
  connectionId: string;
  /** Audit records already written for this connection (one per component and outcome, not one per request). */
  audited: Set<string>;
  /** Basic credentials verified on this connection, by digest, until when: saves an LDAP bind per request. */
  verifiedPasswords: Map<string, { until: number; subject: string }>;
}

const passwordReuseMs = 60_000;
const realm = "warden";

function componentOfRequest(request: FastifyRequest): Component | undefined {
  const first = request.url.split(/[/?#]/, 2)[1] ?? "";
  if (!(rootPaths as readonly string[]).includes(first)) return undefined;
  const host = request.headers.host?.replace(/:\d+$/, "").replace(/^\[(.*)\]$/, "$1");
  return componentOf(first as RootPath, host);
}

function hasBody(request: FastifyRequest): boolean {
  const length = request.headers["content-length"];
  return request.headers["transfer-encoding"] !== undefined || (length !== undefined && length !== "0");
}

/**
 * Authentication of the REST APIs and web UIs (spec 5.1): each request to an enforced component
 * must carry Basic, Bearer or cloud-signing credentials that its verifier accepts, else 401 with
 * WWW-Authenticate. Audit (spec 6): denials at warn on every request; a connection's first
 * success at info, its first unauthenticated use at debug.
 */
export const authentication = fp<{ auth: GatewayAuthentication }>(async (app: FastifyInstance, { auth }) => {
  const connections = new WeakMap<Socket, ConnectionState>();
  const connectionOf = (request: FastifyRequest): ConnectionState => {
    const socket = request.raw.socket;
    let state = connections.get(socket);
    if (!state) connections.set(socket, (state = { connectionId: randomUUID(), audited: new Set(), verifiedPasswords: new Map() }));
    return state;
  };

  const auditOnce = async (state: ConnectionState, key: string, write: () => Promise<unknown>) => {
    if (state.audited.has(key)) return;
    state.audited.add(key);
    await write();
  };

  const deny = async (request: FastifyRequest, reply: FastifyReply, component: Component, state: ConnectionState, outcome: Exclude<AccessOutcome, { kind: "verified" }> | { kind: "missing" | "malformed"; reason: string }): Promise<GatewayError> => {
    const unsupported = outcome.kind === "unsupported";
    await auth.audit({
      category: component.name,
      level: "warn",
      event: unsupported ? "connection.unsupported" : "connection.denied",
      message: `${request.method} ${request.url.split("?")[0]} refused: ${outcome.reason}`,
      connectionId: state.connectionId,
      details: { component: component.name, outcome: outcome.kind, reason: outcome.reason, remote: request.ip, ...("by" in outcome ? { verifier: outcome.by } : {}) },
    });
    const types = auth.authenticator.credentialTypesFor(component);
    void reply.header("www-authenticate", challenges(types, realm));
    if (outcome.kind === "unavailable") return new GatewayError("ERR_AUTH_UNAVAILABLE");
    if (outcome.kind === "missing") return new GatewayError("ERR_AUTH_REQUIRED");
    if (unsupported) return new GatewayError("ERR_AUTH_UNSUPPORTED", `this path takes ${types.join(", ")} credentials`);
    return new GatewayError("ERR_AUTH_INVALID");
  };

  const admit = async (request: FastifyRequest, component: Component, state: ConnectionState, outcome: Extract<AccessOutcome, { kind: "verified" }>) => {
    request.access = { connectionId: state.connectionId, subject: outcome.identity.subject, assertions: outcome.identity.assertions };
    await auditOnce(state, `ok:${component.name}:${outcome.identity.subject}`, () =>
      auth.audit({
        category: component.name,
        level: "info",
        event: "connection.authenticated",
        message: `'${outcome.identity.subject}' authenticated for ${component.name}`,
        connectionId: state.connectionId,
        details: { component: component.name, subject: outcome.identity.subject, assertions: outcome.identity.assertions, verifier: outcome.by, remote: request.ip },
      }),
    );
  };

  const verifyCredential = async (component: Component, state: ConnectionState, credential: Credential): Promise<AccessOutcome> => {
    if (credential.type !== "namepwd") return auth.authenticator.verify(component, credential);
    const digest = createHash("sha256").update(`${component.name}\0${component.domainName ?? ""}\0${credential.user}\0${credential.password}`).digest("hex");
    const known = state.verifiedPasswords.get(digest);
    if (known && known.until > Date.now()) return { kind: "verified", identity: { subject: known.subject, assertions: [] }, by: { credentialType: "namepwd", verifier: "ldap", profile: "(reused on this connection)" } };
    const outcome = await auth.authenticator.verify(component, credential);
    if (outcome.kind === "verified") state.verifiedPasswords.set(digest, { until: Date.now() + passwordReuseMs, subject: outcome.identity.subject });
    return outcome;
  };

  const verifySignature = (request: FastifyRequest, component: Component, bodySha256: string) =>
    auth.authenticator.verify(component, { type: "cloudSigningCredentials", request: signedRequestFrom({ method: request.method, url: request.url, headers: request.raw.headersDistinct ?? request.headers, bodySha256 }) });

  app.addHook("onRequest", async (request, reply) => {
    const component = componentOfRequest(request);
    if (!component) return;
    const state = connectionOf(request);
    void reply.header("x-connection-id", state.connectionId);
    if (!auth.authenticator.isEnforced(component)) {
      request.access = { connectionId: state.connectionId, subject: null, assertions: [] };
      await auditOnce(state, `open:${component.name}`, () =>
        auth.audit({ category: component.name, level: "debug", event: "connection.unauthenticated", message: `${component.name} used without authentication (not enforced)`, connectionId: state.connectionId, details: { component: component.name, remote: request.ip } }),
      );
      return;
    }
    const offered = offeredCredential(request.headers.authorization, request.url.split("?", 2)[1] ?? "");
    if (offered.kind === "none") throw await deny(request, reply, component, state, { kind: "missing", reason: "no credentials" });
    if (offered.kind === "malformed") throw await deny(request, reply, component, state, { kind: "malformed", reason: `malformed ${offered.scheme} credentials` });
    if (offered.kind === "unsupported") throw await deny(request, reply, component, state, { kind: "unsupported", credentialType: offered.scheme, reason: `unknown authentication scheme '${offered.scheme}'` });
    if (offered.kind === "credential") {
      const outcome = await verifyCredential(component, state, offered.credential);
      if (outcome.kind !== "verified") throw await deny(request, reply, component, state, outcome);
      return admit(request, component, state, outcome);
    }
    if (!auth.authenticator.credentialTypesFor(component).includes("cloudSigningCredentials")) {
      throw await deny(request, reply, component, state, { kind: "unsupported", credentialType: "cloudSigningCredentials", reason: `no verifier takes 'cloudSigningCredentials' credentials for component '${component.name}'` });
    }
    if (!hasBody(request)) {
      const outcome = await verifySignature(request, component, emptySha256);
      if (outcome.kind !== "verified") throw await deny(request, reply, component, state, outcome);
      return admit(request, component, state, outcome);
    }
    // The signature covers the body: it is checked when the last byte has arrived, before the route sees the end of it.
    request.access = { connectionId: state.connectionId, subject: null, assertions: [] };
  });

  app.addHook("preParsing", async (request, reply, payload) => {
    const component = componentOfRequest(request);
    if (!component || !request.access || request.access.subject !== null || !auth.authenticator.isEnforced(component)) return payload;
    const state = connectionOf(request);
    const hash = createHash("sha256");
    const checked = new Transform({
      transform(chunk: Buffer, _encoding, callback) {
        hash.update(chunk);
        callback(null, chunk);
      },
      flush(callback) {
        verifySignature(request, component, hash.digest("hex")).then(
          async (outcome) => {
            if (outcome.kind !== "verified") return callback(await deny(request, reply, component, state, outcome));
            await admit(request, component, state, outcome);
            callback();
          },
          (error: Error) => callback(error),
        );
      },
    });
    payload.on("error", (error) => checked.destroy(error));
    // Fastify checks the body limit against the bytes received on the wire.
    Object.defineProperty(checked, "receivedEncodedLength", { get: () => (payload as unknown as { receivedEncodedLength?: number }).receivedEncodedLength });
    return payload.pipe(checked);
  });

  // A route that never read its body must still not run for a request whose signature was not checked.
  app.addHook("preHandler", async (request) => {
    const component = componentOfRequest(request);
    if (component && request.access?.subject === null && auth.authenticator.isEnforced(component) && !isStreamedBody(request)) {
      throw new GatewayError("ERR_AUTH_INVALID");
    }
  });
});

/** Streamed routes (document uploads) read their body in the handler; the hashing stream fails the upload if the signature is wrong. */
function isStreamedBody(request: FastifyRequest): boolean {
  return typeof (request.body as { pipe?: unknown } | undefined)?.pipe === "function";
}
