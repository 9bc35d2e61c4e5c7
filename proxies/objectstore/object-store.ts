import { Agent as HttpAgent, request as httpRequest, type IncomingMessage } from "node:http";
import { Agent as HttpsAgent, request as httpsRequest } from "node:https";
import type { Readable } from "node:stream";
import { Hash } from "@smithy/hash-node";
import { SignatureV4 } from "@smithy/signature-v4";
import type { ObjectstoreCredentials } from "../../actors/export/export-actor";
import { uriEncode } from "../../auth/cloud-signature";
import { ClosedIdle, ConnectionNotAudited, mayResend, withResends, type BackendConnections, type BackendIdentity } from "../../exports/backend-connections";
import { S3Error } from "./s3-errors";

/** What the client is answered when a request to the store failed before its answer. */
function storeFailure(error: unknown): S3Error {
  if (error instanceof S3Error) return error;
  if (error instanceof ConnectionNotAudited) return new S3Error("ServiceUnavailable", error.message, { cause: error });
  return new S3Error("ServiceUnavailable", "the store could not be reached or did not answer (connection, TLS or time limit); nothing was released", {
    cause: error,
  });
}

/** The signing region when the export's credentials name none (what S3-compatible stores expect by default). */
export const defaultStoreRegion = "us-east-1";
/** A store that sends nothing for this long (headers or body) is given up on: the client's request fails. */
export const storeIdleMs = 60_000;

export interface StoreRequest {
  method: string;
  /** Encoded path, /bucket/key (object-request.ts `storePath`). */
  path: string;
  query?: Record<string, string>;
  headers?: Record<string, string>;
  /** A write's body, streamed to the store unchanged (signed as UNSIGNED-PAYLOAD). */
  body?: Readable;
  /** Aborts the request to the store (the client went away). */
  signal: AbortSignal;
}

/**
 * The export's backing store (an S3-compatible endpoint): requests signed with the export's own
 * credentials by @smithy/signature-v4 (service `s3`, the path not encoded twice, as S3 wants),
 * or sent unsigned when the export has none. Connections are kept alive and closed with the door;
 * each is on the audit log (`connection.outgoing`, backend-connections.ts) before a request is
 * written on it.
 */
export class ObjectStore {
  private readonly agent: HttpAgent;
  private readonly signer?: SignatureV4;
  private readonly identity: BackendIdentity;

  constructor(
    private readonly endpoint: URL,
    credentials: ObjectstoreCredentials | undefined,
    private readonly connections: BackendConnections,
    /** PEM: the CA an https:// store's certificate is verified against (else the system's roots). */
    ca?: string,
  ) {
    this.agent = endpoint.protocol === "https:" ? new HttpsAgent({ keepAlive: true, ...(ca ? { ca } : {}) }) : new HttpAgent({ keepAlive: true });
    this.identity = credentials ? { name: credentials.accessKeyId, source: "export" } : { name: null, source: "none" };
    if (credentials) {
      const { accessKeyId, secretAccessKey, sessionToken } = credentials;
      this.signer = new SignatureV4({
        service: "s3",
        region: credentials.region ?? defaultStoreRegion,
        credentials: { accessKeyId, secretAccessKey, ...(sessionToken ? { sessionToken } : {}) },
        sha256: Hash.bind(null, "sha256"),
        uriEscapePath: false,
        applyChecksum: true,
      });
    }
  }

  /**
   * Sends the request; resolves with the store's response once its headers have arrived (any
   * status). A kept-alive connection the store closes under the request is replaced (withResends)
   * when nothing of the request was written, or when it is a GET or HEAD
   * (RFC 9112 9.3.1.1); a write whose body went out is not sent again.
   */
  async send(request: StoreRequest): Promise<IncomingMessage> {
    const { hostname, port, protocol } = this.endpoint;
    const host = this.endpoint.host;
    const headers: Record<string, string> = { ...request.headers, host, ...(request.body ? { "x-amz-content-sha256": "UNSIGNED-PAYLOAD" } : {}) };
    const query = request.query ?? {};
    const signed = this.signer
      ? (await this.signer.sign({ method: request.method, protocol, hostname, port: port ? Number(port) : undefined, path: request.path, query, headers }))
          .headers
      : headers;
    const search = Object.entries(query)
      .map(([name, value]) => `${uriEncode(name)}=${uriEncode(value)}`)
      .join("&");
    const path = search ? `${request.path}?${search}` : request.path;
    try {
      return await withResends(
        () => this.exchange(request, path, signed),
        () => !request.signal.aborted,
      );
    } catch (error) {
      throw storeFailure(error);
    }
  }

  /** One try: the request written once its connection is on record; its answer's headers. */
  private exchange(request: StoreRequest, path: string, headers: Record<string, string>): Promise<IncomingMessage> {
    const { hostname, port, protocol } = this.endpoint;
    const send = protocol === "https:" ? httpsRequest : httpRequest;
    return new Promise<IncomingMessage>((resolve, reject) => {
      const outgoing = send({ protocol, hostname: hostname.replace(/^\[(.*)\]$/, "$1"), port, method: request.method, path, headers, agent: this.agent });
      let written = false;
      outgoing.setTimeout(storeIdleMs, () => outgoing.destroy(new Error(`the store sent nothing for ${storeIdleMs / 1000} s`)));
      // Aborting destroys this request only (and its connection): the answer's reader sees the error, nothing else does.
      const abort = () => outgoing.destroy(new Error("the client's request ended before the store's answer"));
      if (request.signal.aborted) abort();
      else request.signal.addEventListener("abort", abort, { once: true });
      outgoing.once("close", () => request.signal.removeEventListener("abort", abort));
      outgoing.once("response", (response) => {
        // Errors reach whoever reads the answer; an answer nobody reads any more must not throw them at the process.
        response.on("error", () => undefined);
        resolve(response);
      });
      // Before the store's answer: a kept-alive connection closed under it, the audit log did not take the connection, or the
      // store was not reached (refused, TLS).
      outgoing.on("error", (error) => {
        const closedIdle = !request.signal.aborted && mayResend(outgoing, written, error);
        reject(closedIdle ? new ClosedIdle("the store closed its kept-alive connection before answering", { cause: error }) : error);
      });
      // Nothing is written (no signature, no body) before the connection is on the audit log.
      this.connections.recordedFor(outgoing, this.identity).then(
        () => {
          if (outgoing.destroyed) return;
          written = true;
          if (request.body) {
            request.body.once("error", (error) => outgoing.destroy(error));
            request.body.pipe(outgoing);
          } else outgoing.end();
        },
        (error: Error) => outgoing.destroy(error),
      );
    });
  }

  close(): void {
    this.agent.destroy();
  }
}
