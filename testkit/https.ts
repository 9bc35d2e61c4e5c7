import { request } from "node:https";

export interface HttpsAnswer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

/** One HTTPS request trusting `ca` (fetch cannot be given a CA without undici's dispatcher). */
export function httpsRequest(
  url: string,
  /** `servername`: the name the certificate is checked against (else the Host header's, when one is given). */
  options: { ca: Buffer; method?: string; headers?: Record<string, string>; body?: string; servername?: string },
): Promise<HttpsAnswer> {
  return new Promise((resolve, reject) => {
    const tls = { ca: options.ca, ...(options.servername ? { servername: options.servername } : {}) };
    const req = request(url, { method: options.method ?? "GET", headers: options.headers, ...tls, timeout: 10_000 }, (response) => {
      const chunks: Buffer[] = [];
      response.on("data", (chunk: Buffer) => chunks.push(chunk));
      response.on("end", () => resolve({ status: response.statusCode ?? 0, headers: response.headers, body: Buffer.concat(chunks).toString("utf8") }));
      response.on("error", reject);
    });
    req.on("timeout", () => req.destroy(new Error("timeout")));
    req.on("error", reject);
    req.end(options.body);
  });
}
