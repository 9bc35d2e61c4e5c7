import { Agent as HttpAgent, request as httpRequest, type IncomingHttpHeaders, type IncomingMessage } from "node:http";
import { Agent as HttpsAgent, request as httpsRequest } from "node:https";
import type { Readable } from "node:stream";
import { ClosedIdle, ConnectionNotAudited, mayResend, withResends, type BackendConnections, type BackendIdentity } from "../../exports/backend-connections";
import { FhirError } from "./fhir-error";
import { contentDecoder, decodedCodings } from "../../http/content-coding";

export interface FhirBackendLimits {
  /** One answer of the backing server (a page of a search), in bytes. */
  maxAnswerBytes: number;
  /** How long one request to the backing server may take. */
  timeoutMs: number;
}

export const defaultFhirBackendLimits: FhirBackendLimits = { maxAnswerBytes: 64 * 1024 * 1024, timeoutMs: 30_000 };

export interface BackendAnswer {
  status: number;
  /** The parsed JSON body; undefined when the answer had none. */
  json: unknown;
  headers: IncomingHttpHeaders;
}

/** The FHIR base URL of a backing server, always ending in `/` (what links and references are relative to). */
export function normalizedBase(endpoint: string): string {
  const url = new URL(endpoint);
  url.search = "";
  url.hash = "";
  return url.href.endsWith("/") ? url.href : `${url.href}/`;
}

/** The request took longer than the backend's time limit (headers and body). */
class BackendTimeout extends Error {}

/**
 * The body of an answer as JSON bytes: the export asks for `identity`, but a server (or a proxy in
 * front of it) may compress anyway, which fetch used to undo; the size limit counts the decoded
 * bytes. Undefined for a coding it does not decode (contentDecoder).
 */
function decodedBody(response: IncomingMessage): Readable | undefined {
  const decoder = contentDecoder(response.headers["content-encoding"]);
  if (decoder === null) return response;
  return decoder ? response.pipe(decoder()) : undefined;
}

/**
 * The backing FHIR server as the export reaches it: one HTTP request per client request (its
 * connections kept alive, each on the audit log before a request is written on it), JSON only,
 * never a redirect followed, answers bounded in size and time. Anything that is not a JSON answer
 * (a proxy's HTML page, a cut-off body, a refused connection) becomes a FhirError: the client
 * never sees the backend's bytes raw.
 */
export class FhirBackend {
  readonly base: string;
  private readonly agent: HttpAgent;

  constructor(
    endpoint: string,
    private readonly connections: BackendConnections,
    /** PEM: the CA an https:// backend's certificate is verified against (else the system's roots). */
    ca?: string,
    private readonly limits: FhirBackendLimits = defaultFhirBackendLimits,
  ) {
    this.base = normalizedBase(endpoint);
    this.agent = this.base.startsWith("https:") ? new HttpsAgent({ keepAlive: true, ...(ca ? { ca } : {}) }) : new HttpAgent({ keepAlive: true });
  }

  async send(method: string, pathAndQuery: string, headers: Record<string, string>, identity: BackendIdentity, body?: Buffer): Promise<BackendAnswer> {
    let answer: { response: IncomingMessage; text: string };
    try {
      answer = await withResends(() => this.exchange(method, new URL(pathAndQuery, this.base), headers, identity, body));
    } catch (error) {
      throw backendFailure(error);
    }
    const { response, text } = answer;
    const status = response.statusCode ?? 502;
    if (status >= 300 && status < 400) throw new FhirError(502, "exception", "the FHIR server answered with a redirect, which this export does not follow");
    if (text.length === 0) return { status, json: undefined, headers: response.headers };
    const type = (response.headers["content-type"] ?? "").split(";")[0]!.trim().toLowerCase();
    if (type !== "application/fhir+json" && type !== "application/json" && type !== "application/json+fhir")
      throw new FhirError(502, "exception", "the FHIR server's answer is not FHIR JSON");
    try {
      return { status, json: JSON.parse(text) as unknown, headers: response.headers };
    } catch (error) {
      throw new FhirError(502, "exception", "the FHIR server's answer is not well-formed JSON", undefined, { cause: error });
    }
  }

  close(): void {
    this.agent.destroy();
  }

  /** The request written once its connection is on record, and its answer read whole within the time and size limits. */
  private exchange(
    method: string,
    url: URL,
    headers: Record<string, string>,
    identity: BackendIdentity,
    body: Buffer | undefined,
  ): Promise<{ response: IncomingMessage; text: string }> {
    const send = url.protocol === "https:" ? httpsRequest : httpRequest;
    return new Promise((resolve, reject) => {
      const outgoing = send(url, {
        method,
        headers: {
          accept: "application/fhir+json",
          "accept-encoding": "identity",
          ...headers,
          ...(body ? { "content-length": String(body.length) } : {}),
        },
        agent: this.agent,
      });
      let timedOut = false;
      let written = false;
      let answered = false;
      const deadline = setTimeout(() => {
        timedOut = true;
        outgoing.destroy(new BackendTimeout());
      }, this.limits.timeoutMs);
      // The first failure settles the exchange; once the time limit passed, whatever follows from it is the timeout.
      const fail = (error: Error) => {
        clearTimeout(deadline);
        if (timedOut) return reject(new BackendTimeout());
        const closedIdle = !answered && !(error instanceof FhirError) && mayResend(outgoing, written, error);
        reject(closedIdle ? new ClosedIdle("the backend closed its kept-alive connection before answering", { cause: error }) : error);
      };
      const cutOff = () => fail(new FhirError(502, "transient", "the FHIR server's answer was cut off; try again"));
      outgoing.on("error", fail);
      outgoing.once("response", (response) => {
        answered = true;
        response.on("error", cutOff);
        const body = decodedBody(response);
        if (!body) {
          fail(new FhirError(502, "exception", `the FHIR server's answer is in a content coding this export does not read (it reads ${decodedCodings})`));
          return void outgoing.destroy();
        }
        if (body !== response)
          body.on("error", (error) => {
            fail(new FhirError(502, "exception", "the FHIR server's compressed answer could not be decoded", undefined, { cause: error }));
            outgoing.destroy();
          });
        const chunks: Buffer[] = [];
        let size = 0;
        body.on("data", (chunk: Buffer) => {
          size += chunk.length;
          if (size <= this.limits.maxAnswerBytes) return void chunks.push(chunk);
          fail(new FhirError(502, "too-costly", `the FHIR server's answer is larger than ${this.limits.maxAnswerBytes} bytes; ask for smaller pages (_count)`));
          outgoing.destroy();
          body.destroy();
        });
        body.once("end", () => {
          clearTimeout(deadline);
          resolve({ response, text: Buffer.concat(chunks).toString("utf8") });
        });
        response.once("close", () => {
          if (!response.complete) cutOff();
        });
      });
      // Nothing is written (no Authorization, no body) before the connection is on the audit log.
      this.connections.recordedFor(outgoing, identity).then(
        () => {
          if (outgoing.destroyed) return;
          written = true;
          outgoing.end(body);
        },
        (error: Error) => outgoing.destroy(error),
      );
    });
  }
}

/** What the client is answered when the exchange failed before a FHIR answer (never the backend's own words). */
function backendFailure(error: unknown): FhirError {
  if (error instanceof FhirError) return error;
  if (error instanceof ConnectionNotAudited) return new FhirError(503, "transient", error.message, undefined, { cause: error });
  if (error instanceof BackendTimeout) return new FhirError(504, "timeout", "the FHIR server did not answer in time", undefined, { cause: error });
  return new FhirError(502, "transient", "the FHIR server cannot be reached; try again", undefined, { cause: error });
}
