import { isIP } from "node:net";
import type { FastifyInstance, FastifyRequest } from "fastify";
import { auditSource, RepeatedAudit, type RepeatedAuditWrite } from "../auth/repeated-audit";
import { AllowedHosts } from "./allowed-hosts";
import { HttpError, type HttpErrorCode } from "./errors";

/** What every HTTP listener of a node shares: ALLOWED_HOSTS, and where a refusal is counted. */
export interface HostCheckSettings {
  allowed: AllowedHosts;
  /** Hears each refusal (warden_refusals_total), for listeners whose error handler does not count them. */
  refused?: (code: HttpErrorCode) => void;
  /**
   * Names the security configuration selects components by (`domainName`): clients are expected to use them, so every
   * listener answers to them without ALLOWED_HOSTS listing them (and they do not count as ALLOWED_HOSTS being set).
   */
  knownNames?: readonly string[];
}

export interface HostCheckOptions extends HostCheckSettings {
  /** The address the listener is given (HOST, EXPORT_HOST): a name given there is one of its names. */
  listenHost: string;
  /** Names it also answers to, as ALLOWED_HOSTS writes them (an objectstore door's `*.<export host>` buckets). */
  names?: readonly string[];
  /** What it is, in the refusal's message ("this node", "this fhir export"). */
  what: string;
  /** Writes one audit record for a source's refusals of a minute, with their count (absent: none). */
  audit?: RepeatedAuditWrite;
}

/** The address or name a listener was given or bound, as loopback only: 127.0.0.0/8, ::1, localhost and names below it. */
export function isLoopback(address: string): boolean {
  const name = address.toLowerCase().replace(/^\[(.*)\]$/, "$1");
  if (name === "localhost" || name.endsWith(".localhost")) return true;
  if (isIP(name) === 4) return name.startsWith("127.");
  return isIP(name) === 6 && (name === "::1" || /^(0{1,4}:){7}0{0,3}1$/.test(name) || /^::ffff:127\.\d+\.\d+\.\d+$/.test(name));
}

/** The name of a Host header, lower case without port or final dot (IPv6 without brackets); undefined when it is not of that shape. */
export function hostNameOf(header: string): string | undefined {
  const match = /^(\[[0-9a-f:.]+\]|[^:[\]/@\s]*)(?::\d{0,5})?$/.exec(header.trim().toLowerCase());
  if (!match) return undefined;
  return match[1]!.replace(/^\[(.*)\]$/, "$1").replace(/\.$/, "");
}

/**
 * Whether a Host may be answered (DNS rebinding: a page of another site makes its own name
 * resolve to this listener, and its requests are then same-origin to the browser).
 * Always: no Host (browsers always send one), an IP address (a page has that origin only if
 * it was served from that address and port) and loopback names (browsers resolve `localhost`
 * and `*.localhost` themselves), the listener's own names, and ALLOWED_HOSTS. Any other name
 * only on a listener bound to an address other than a loopback one, while ALLOWED_HOSTS is unset.
 */
export function hostAccepted(header: string | undefined, listener: { loopback: boolean; own: AllowedHosts; allowed: AllowedHosts }): boolean {
  const { allowed } = listener;
  if (header === undefined || header.trim() === "" || allowed.any) return true;
  if (!listener.loopback && !allowed.set) return true;
  const name = hostNameOf(header);
  if (name === undefined || name === "") return false;
  return isIP(name) !== 0 || isLoopback(name) || listener.own.matches(name) || allowed.matches(name);
}

/**
 * The names a listener was given (a host name it listens on, the names its door serves under it; an address adds none),
 * and the names the security configuration selects by.
 */
function ownNames(listenHost: string, names: readonly string[] = [], knownNames: readonly string[] = []): AllowedHosts {
  const given = [...(isIP(listenHost.replace(/^\[(.*)\]$/, "$1")) === 0 ? [listenHost, ...names] : []), ...knownNames];
  try {
    return AllowedHosts.parse(given.join(","));
  } catch {
    // A listen name Node resolved but that is no host name pattern: its requests are judged as any other's.
    return AllowedHosts.unset;
  }
}

/**
 * Refuses, before anything else looks at it (credentials included), a request whose Host this
 * listener does not answer to: 421 ERR_REQUEST_HOST (RFC 9110 15.5.20: not a name this server
 * is authoritative for), answered in the listener's own error form by its error handler.
 * Refusals are counted, and audited once a minute per source with their count.
 */
export function installHostCheck(app: FastifyInstance, options: HostCheckOptions): void {
  const own = ownNames(options.listenHost, options.names, options.knownNames);
  const audit = options.audit && new RepeatedAudit(options.audit);
  // The bound address once listening (a name resolves to one); before that (inject()), the address given.
  const loopback = (): boolean => {
    const bound = app.server.address();
    return isLoopback(bound !== null && typeof bound === "object" ? bound.address : options.listenHost);
  };
  app.addHook("onRequest", (request, _reply, done) => {
    if (hostAccepted(request.headers.host, { loopback: loopback(), own, allowed: options.allowed })) return done();
    done(refusal(request, options, audit));
  });
}

function refusal(request: FastifyRequest, options: HostCheckOptions, audit: RepeatedAudit | undefined): HttpError {
  const host = String(request.headers.host).slice(0, 255);
  const message = `${options.what} does not answer to the Host '${host}': a page of another site could have made that name lead here (DNS rebinding). To serve the name, add it to ALLOWED_HOSTS (--allowed-hosts)`;
  options.refused?.("ERR_REQUEST_HOST");
  const source = auditSource(request.ip);
  audit?.record(source, `${request.method} refused: ${options.what} does not answer to the Host '${host}'`, { host, remote: request.ip }, source);
  return new HttpError("ERR_REQUEST_HOST", message);
}
