import { splitEndpoint } from "./endpoint";

/** One allowed backing endpoint: a host (`*.` + suffix: any name below it) and a port (undefined: any). */
interface EndpointPattern {
  text: string;
  host: string;
  anySubdomain: boolean;
  port: number | undefined;
}

/** The host and port an export connects to: `host:port`, or the host and port of a URL (its scheme's default port when it names none). */
export function endpointAddress(endpoint: string): { host: string; port: number } {
  if (endpoint.includes("://")) {
    const url = new URL(endpoint);
    const port = url.port ? Number(url.port) : url.protocol === "https:" ? 443 : 80;
    return { host: normalHost(url.hostname.replace(/^\[(.*)\]$/, "$1")), port };
  }
  const [host, port] = splitEndpoint(endpoint);
  return { host: normalHost(host), port };
}

/** Names compare without case and final dot; `URL` writes IPv4 in dotted decimal and IPv6 compressed, so `0x7f.1` cannot pass as another host. */
function normalHost(host: string): string {
  const lower = host.toLowerCase().replace(/\.$/, "");
  try {
    return new URL(lower.includes(":") ? `http://[${lower}]/` : `http://${lower}/`).hostname.replace(/^\[(.*)\]$/, "$1");
  } catch {
    return lower;
  }
}

const hostPattern = /^(\*\.)?(\[[0-9a-f:.]+\]|[a-z0-9_-]+(\.[a-z0-9_-]+)*)$/;

/**
 * The optional allow-list of backing endpoints (issue 26 item 8): when set, an export may name
 * only an endpoint one of its patterns matches, at PUT /export and whenever a node opens it.
 * Patterns match the endpoint as written, not what its name resolves to.
 */
export class EndpointAllowList {
  private constructor(private readonly patterns: readonly EndpointPattern[]) {}

  /**
   * Comma-separated patterns: `host`, `host:port`, `*.domain` (any name below it), `*.domain:port`,
   * `[v6]` or `[v6]:port`, `host:*`. Empty: no list, every endpoint is allowed. Throws naming the bad pattern.
   */
  static parse(raw: string): EndpointAllowList | undefined {
    const entries = raw
      .split(",")
      .map((entry) => entry.trim())
      .filter(Boolean);
    if (entries.length === 0) return undefined;
    return new EndpointAllowList(
      entries.map((text) => {
        const match = /^(.*?)(?::(\d{1,5}|\*))?$/.exec(text.toLowerCase())!;
        const [, hostPart, portPart] = match;
        if (!hostPattern.test(hostPart!)) throw new Error(`'${text}' is not a host pattern (host, *.domain, [v6], each with an optional :port)`);
        const port = portPart === undefined || portPart === "*" ? undefined : Number(portPart);
        if (port !== undefined && (port < 1 || port > 65535)) throw new Error(`'${text}': port ${port} is out of range`);
        const anySubdomain = hostPart!.startsWith("*.");
        const host = anySubdomain ? hostPart!.slice(2) : hostPart!.replace(/^\[(.*)\]$/, "$1");
        return { text, host: anySubdomain ? host : normalHost(host), anySubdomain, port };
      }),
    );
  }

  /** Why an endpoint is not allowed; undefined when a pattern matches (or the export has no endpoint). */
  problem(endpoint: string | undefined): string | undefined {
    if (endpoint === undefined) return undefined;
    let address: { host: string; port: number };
    try {
      address = endpointAddress(endpoint);
    } catch {
      return `endpoint '${endpoint}' names no host the allow-list can check`;
    }
    const allowed = this.patterns.some(
      (pattern) =>
        (pattern.anySubdomain ? address.host.endsWith(`.${pattern.host}`) : address.host === pattern.host) &&
        (pattern.port === undefined || pattern.port === address.port),
    );
    return allowed ? undefined : `endpoint '${endpoint}' is not in the allow-list of backing endpoints (${this.describe()})`;
  }

  describe(): string {
    return this.patterns.map((pattern) => pattern.text).join(", ");
  }
}
