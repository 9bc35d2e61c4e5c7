import { randomBytes } from "node:crypto";
import type { ClientRequest } from "node:http";
import type { Socket } from "node:net";
import { connectionNotAuditedMessage, type StoredAudit } from "./door";

/** Identities remembered as recorded per connection: past this, they are recorded again as they come. */
const maxIdentitiesPerConnection = 256;

/** The identity a request to the backend goes out with: the export's own, the client's passed on, or none (unsigned, anonymous). */
export interface BackendIdentity {
  /** A user name or access key id; null when the request carries none. */
  name: string | null;
  source: "export" | "client" | "none";
}

/** The backend connection's record was not stored: the request was not sent. */
export class ConnectionNotAudited extends Error {
  readonly code = "AUDIT_UNAVAILABLE";
  constructor() {
    super(connectionNotAuditedMessage);
  }
}

/**
 * Spec 6 item 4 for exports that reach their backend over pooled HTTP connections (FHIR,
 * objectstore): each connection is recorded (`connection.outgoing`: endpoint, identity, its own
 * connection id) the first time a request uses it, and again when a request uses it with another
 * identity (a FHIR export passing its clients' Authorization on); a keep-alive reuse with the same
 * identity adds nothing. The request is written only once the record is stored, so no byte (no
 * credential, no signature) reaches the backend unrecorded; a record not stored fails the request
 * (ConnectionNotAudited), as a wire export's login fails.
 */
export class BackendConnections {
  /** Per connection: its id, and the records made or being made, by identity. */
  private readonly recorded = new WeakMap<Socket, { id: string; identities: Map<string, Promise<boolean>> }>();

  constructor(
    private readonly deps: {
      exportId: string;
      component: "fhir" | "objectstore";
      /** The backend as the export reaches it (its URL: scheme, host, port). */
      endpoint: URL;
      storedAudit: StoredAudit;
    },
  ) {}

  /**
   * Resolves once `request`'s connection is on record with `identity`; the caller writes the request
   * (headers, body) only then. Rejects with ConnectionNotAudited when the record was not stored, or
   * with the request's own error when it failed before it had a connection.
   */
  async recordedFor(request: ClientRequest, identity: BackendIdentity): Promise<void> {
    const socket = await socketOf(request);
    let entry = this.recorded.get(socket);
    if (!entry) {
      entry = { id: `out-${randomBytes(6).toString("hex")}`, identities: new Map() };
      this.recorded.set(socket, entry);
    }
    const key = `${identity.source}\0${identity.name ?? ""}`;
    let stored = entry.identities.get(key);
    if (!stored) {
      // A long-lived connection passing many clients' identities on is recorded anew rather than remembering them all.
      if (entry.identities.size >= maxIdentitiesPerConnection) entry.identities.clear();
      stored = this.record(entry.id, identity);
      entry.identities.set(key, stored);
    }
    if (await stored) return;
    // Asked again on the next use of this connection (the audit log may have room by then).
    entry.identities.delete(key);
    throw new ConnectionNotAudited();
  }

  private record(connectionId: string, identity: BackendIdentity): Promise<boolean> {
    const { exportId, component, endpoint, storedAudit } = this.deps;
    const where = endpoint.host;
    const as = identity.name === null ? "without credentials" : `as '${identity.name}'`;
    return storedAudit("info", "connection.outgoing", `export ${exportId} reaches ${where} ${as} (connection ${connectionId})`, {
      exportId,
      component,
      connectionId,
      endpoint: where,
      tls: endpoint.protocol === "https:",
      identity: identity.name,
      identitySource: identity.source,
    });
  }
}

/** The connection the agent gave the request (a new one or a kept-alive one); rejects when the request ends without one. */
function socketOf(request: ClientRequest): Promise<Socket> {
  if (request.socket) return Promise.resolve(request.socket);
  return new Promise((resolve, reject) => {
    const given = (socket: Socket) => {
      request.off("error", failed).off("close", ended);
      resolve(socket);
    };
    const failed = (error: Error) => {
      request.off("socket", given).off("close", ended);
      reject(error);
    };
    const ended = () => failed(new Error("the request to the backend ended before it had a connection"));
    request.once("socket", given);
    request.once("error", failed);
    request.once("close", ended);
  });
}

/**
 * A kept-alive connection the backend closed under a request before any answer, where mayResend
 * allows the request to be sent again: while the connection's audit record for a new identity was
 * being stored (nothing written, safe for any method), or as a GET or HEAD was written on it.
 */
export class ClosedIdle extends Error {}

/** How many times one request is sent again after ClosedIdle (each time on another connection). */
const maxResends = 3;

/** Runs `attempt`, and again (at most maxResends times) while it fails with ClosedIdle and `goOn()` allows. */
export async function withResends<T>(attempt: () => Promise<T>, goOn: () => boolean = () => true): Promise<T> {
  for (let resends = 0; ; resends++)
    try {
      return await attempt();
    } catch (error) {
      if (error instanceof ClosedIdle && resends < maxResends && goOn()) continue;
      throw error;
    }
}

/**
 * Whether a request that failed before its answer may be sent again on another connection: the
 * kept-alive connection it was given was closed under it (as backends close idle ones), and
 * nothing of it had been written or it is a GET or HEAD (RFC 9112 9.3.1.1); never when its
 * connection's record was not stored.
 */
export function mayResend(outgoing: ClientRequest, written: boolean, error: Error): boolean {
  const idempotent = outgoing.method === "GET" || outgoing.method === "HEAD";
  return outgoing.reusedSocket && (!written || idempotent) && !(error instanceof ConnectionNotAudited);
}
