import { FhirError } from "./fhir-error";

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
  headers: Headers;
}

/** The FHIR base URL of a backing server, always ending in `/` (what links and references are relative to). */
export function normalizedBase(endpoint: string): string {
  const url = new URL(endpoint);
  url.search = "";
  url.hash = "";
  return url.href.endsWith("/") ? url.href : `${url.href}/`;
}

/**
 * The backing FHIR server as the export reaches it: one HTTP request per client request, JSON
 * only, never a redirect followed, answers bounded in size and time. Anything that is not a
 * JSON answer (a proxy's HTML page, a cut-off body, a refused connection) becomes a FhirError:
 * the client never sees the backend's bytes raw.
 */
export class FhirBackend {
  readonly base: string;

  constructor(
    endpoint: string,
    private readonly limits: FhirBackendLimits = defaultFhirBackendLimits,
  ) {
    this.base = normalizedBase(endpoint);
  }

  async send(method: string, pathAndQuery: string, headers: Record<string, string>, body?: Buffer): Promise<BackendAnswer> {
    let response: Response;
    try {
      response = await fetch(new URL(pathAndQuery, this.base), {
        method,
        headers: { accept: "application/fhir+json", ...headers },
        body,
        redirect: "manual",
        signal: AbortSignal.timeout(this.limits.timeoutMs),
      });
    } catch (error) {
      if ((error as Error).name === "TimeoutError") throw new FhirError(504, "timeout", "the FHIR server did not answer in time", undefined, { cause: error });
      throw new FhirError(502, "transient", "the FHIR server cannot be reached; try again", undefined, { cause: error });
    }
    const text = await this.read(response);
    if (response.status >= 300 && response.status < 400)
      throw new FhirError(502, "exception", "the FHIR server answered with a redirect, which this export does not follow");
    if (text.length === 0) return { status: response.status, json: undefined, headers: response.headers };
    const type = (response.headers.get("content-type") ?? "").split(";")[0]!.trim().toLowerCase();
    if (type !== "application/fhir+json" && type !== "application/json" && type !== "application/json+fhir")
      throw new FhirError(502, "exception", "the FHIR server's answer is not FHIR JSON");
    try {
      return { status: response.status, json: JSON.parse(text) as unknown, headers: response.headers };
    } catch (error) {
      throw new FhirError(502, "exception", "the FHIR server's answer is not well-formed JSON", undefined, { cause: error });
    }
  }

  private async read(response: Response): Promise<string> {
    const chunks: Buffer[] = [];
    let size = 0;
    try {
      for await (const chunk of response.body ?? []) {
        size += (chunk as Uint8Array).byteLength;
        if (size > this.limits.maxAnswerBytes) {
          await response.body?.cancel().catch(() => undefined);
          throw new FhirError(502, "too-costly", `the FHIR server's answer is larger than ${this.limits.maxAnswerBytes} bytes; ask for smaller pages (_count)`);
        }
        chunks.push(Buffer.from(chunk as Uint8Array));
      }
    } catch (error) {
      if (error instanceof FhirError) throw error;
      throw new FhirError(502, "transient", "the FHIR server's answer was cut off; try again", undefined, { cause: error });
    }
    return Buffer.concat(chunks).toString("utf8");
  }
}
