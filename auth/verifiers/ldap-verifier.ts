import { X509Certificate } from "node:crypto";
import { readFileSync } from "node:fs";
import { connect as connectTcp, isIPv4, isIPv6, type Socket } from "node:net";
import { connect as connectTls, rootCertificates, type ConnectionOptions } from "node:tls";
import { Client, ResultCodeError } from "ldapts";
import { bindDn, isAttributeType, isDistinguishedName, withCommaSeparators } from "../dn";
import {
  CredentialRejected,
  SecurityConfigError,
  VerifierUnavailable,
  type Credential,
  type VerifiedIdentity,
  type Verifier,
  type VerifierFactory,
} from "../types";

/**
 * An `ldap` verifier profile (spec 5.5). The bind DN is `<nameComponent>=<user name>,<rootComponents>`:
 * the spec writes ';' between components (RFC 1779); LDAPv3 servers expect ',' (RFC 4514).
 */
export interface LdapConfiguration {
  /** DNS name, IPv4 address or [IPv6] address, optionally ending in `:PORT` (default 389, or 636 with TLS). */
  hostname: string;
  useTLS: boolean;
  nameComponent: string;
  rootComponents: string;
  /**
   * Extension to spec 5.5: a PEM bundle of CA certificates trusted for `useTLS` in addition to
   * Node's default roots (`tls.rootCertificates`), for directories with a private CA.
   */
  caFile?: string;
  /** The certificates read from `caFile` when the configuration was parsed. */
  caCertificates?: string;
  /** Extension (issue 26): after the bind, the user's groups are read with this search, as the user, for authorization rules. */
  groupSearch?: GroupSearch;
}

/**
 * Where the user's groups are: entries under `base` matching `filter`, their `attribute` value
 * naming the group. In the filter `{dn}` is the user's bind DN and `{user}` the user name, both
 * escaped as RFC 4515 values.
 */
export interface GroupSearch {
  base: string;
  filter: string;
  attribute: string;
}

const properties = ["hostname", "useTLS", "nameComponent", "rootComponents", "caFile", "groupSearch"];
const groupSearchProperties = ["base", "filter", "attribute"];
/** More groups than this is a directory mistake (or a filter matching everything), not a user. */
const maxGroups = 1000;

/** RFC 4515 value escaping: `*`, `(`, `)`, `\` and NUL (and every non-ASCII byte, so the filter is plain ASCII). */
export function filterValue(value: string): string {
  return [...Buffer.from(value, "utf8")]
    .map((byte) =>
      byte < 0x20 || byte > 0x7e || "*()\\".includes(String.fromCharCode(byte)) ? `\\${byte.toString(16).padStart(2, "0")}` : String.fromCharCode(byte),
    )
    .join("");
}
/** Connect and per-operation limit: a directory that does not answer is an outage, not a wait. */
const timeoutMs = 10_000;
const maxUserLength = 256;
/**
 * Bind result codes that mean "these credentials are wrong" rather than "the directory failed":
 * invalidCredentials (49), and what servers answer for a DN that names no usable entry —
 * noSuchObject (32), invalidDNSyntax (34), inappropriateAuthentication (48), unwillingToPerform (53).
 */
const rejectingResultCodes = new Set([32, 34, 48, 49, 53]);

interface Endpoint {
  /** Without brackets for IPv6: what net and tls connect to. */
  host: string;
  port: number;
  url: string;
}

/** The host and optional port of a `hostname` property, or why it is not one. */
function splitHostname(hostname: string): { host: string; hostForUrl: string; port?: number } | string {
  let hostForUrl = hostname;
  let portText: string | undefined;
  if (hostname.startsWith("[")) {
    const close = hostname.indexOf("]");
    if (close < 0) return "has '[' without ']'";
    hostForUrl = hostname.slice(0, close + 1);
    const rest = hostname.slice(close + 1);
    if (rest !== "") {
      if (!rest.startsWith(":")) return "may only have ':PORT' after ']'";
      portText = rest.slice(1);
    }
    if (!isIPv6(hostname.slice(1, close))) return `'${hostname.slice(1, close)}' is not an IPv6 address`;
  } else {
    const colon = hostname.indexOf(":");
    if (colon >= 0) {
      if (hostname.indexOf(":", colon + 1) >= 0) return "must write an IPv6 address in brackets, e.g. [::1]:389";
      hostForUrl = hostname.slice(0, colon);
      portText = hostname.slice(colon + 1);
    }
    if (!isIPv4(hostForUrl) && !isDnsName(hostForUrl)) return `'${hostForUrl}' is neither a DNS name nor an IP address`;
  }
  const host = hostForUrl.startsWith("[") ? hostForUrl.slice(1, -1) : hostForUrl;
  if (portText === undefined) return { host, hostForUrl };
  const port = /^[0-9]{1,5}$/.test(portText) ? Number(portText) : 0;
  if (port < 1 || port > 65535) return `port '${portText}' must be a whole number from 1 to 65535`;
  return { host, hostForUrl, port };
}

function isDnsName(name: string): boolean {
  const label = /^[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?$/;
  // All-numeric names are mistyped IPv4 addresses (e.g. 10.0.0.300), not host names.
  return name.length <= 253 && name.split(".").every((part) => label.test(part)) && !/^[0-9.]+$/.test(name);
}

function endpointOf(configuration: LdapConfiguration): Endpoint {
  const split = splitHostname(configuration.hostname);
  if (typeof split === "string") throw new Error(`unparsed ldap configuration: hostname ${split}`);
  const port = split.port ?? (configuration.useTLS ? 636 : 389);
  return { host: split.host, port, url: `${configuration.useTLS ? "ldaps" : "ldap"}://${split.hostForUrl}:${port}` };
}

function tlsOptionsOf(configuration: LdapConfiguration, endpoint: Endpoint): ConnectionOptions {
  return {
    rejectUnauthorized: true,
    // SNI takes host names only.
    ...(isIPv4(endpoint.host) || isIPv6(endpoint.host) ? {} : { servername: endpoint.host }),
    // Giving `ca` replaces the default roots, so they are passed along with the extra ones.
    ...(configuration.caCertificates === undefined ? {} : { ca: [...rootCertificates, configuration.caCertificates] }),
  };
}

/**
 * Why a user name is refused before any bind, or undefined. Beyond length and encoding: LDAP
 * string preparation (RFC 4518) has the server ignore leading, trailing and repeated spaces, read
 * other white space as U+0020 and compare NFKC forms, so " alice" or "\uFF41lice" would bind as
 * alice yet be reported as a different subject. (Case is the directory's matching rule: for `uid`
 * "ALICE" binds as alice, and the subject is then the stored name, storedName.)
 */
function userNameProblem(user: string): string | undefined {
  if (user === "") return "is empty";
  if (user.length > maxUserLength) return `is longer than ${maxUserLength} characters`;
  // Lone surrogates would go out as U+FFFD.
  if (/\p{Cs}/u.test(user)) return "is not well-formed Unicode";
  if (/\p{Cc}/u.test(user)) return "contains a control character (NUL, tab, line break, ...)";
  if (/[^\S ]/u.test(user)) return "contains white space other than U+0020";
  if (user.startsWith(" ") || user.endsWith(" ") || user.includes("  ")) return "has leading, trailing or repeated spaces";
  if (user.normalize("NFKC") !== user) return "is not in Unicode NFKC form";
  return undefined;
}

function describeError(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

class LdapVerifier implements Verifier {
  readonly type = "ldap";
  private readonly endpoint: Endpoint;
  private readonly tlsOptions: ConnectionOptions | undefined;

  constructor(
    readonly profile: string,
    private readonly configuration: LdapConfiguration,
  ) {
    this.endpoint = endpointOf(configuration);
    this.tlsOptions = configuration.useTLS ? tlsOptionsOf(configuration, this.endpoint) : undefined;
  }

  /** Simple bind as the user on a fresh connection. No LDAP property can be overridden per export (spec 5.5). */
  async verify(credential: Credential): Promise<VerifiedIdentity> {
    if (credential.type !== "namepwd") throw new CredentialRejected(`ldap profile '${this.profile}' verifies namepwd credentials, not ${credential.type}`);
    const { user, password } = credential;
    const problem = userNameProblem(user);
    if (problem !== undefined) throw new CredentialRejected(`user name ${JSON.stringify(user.slice(0, maxUserLength))} ${problem}`);
    // An empty password makes a simple bind unauthenticated (RFC 4513 5.1.2), which many servers accept.
    if (password === "") throw new CredentialRejected(`empty password for '${user}'`);

    const dn = bindDn(this.configuration.nameComponent, user, this.configuration.rootComponents);
    const client = new Client({
      url: this.endpoint.url,
      timeout: timeoutMs,
      connectTimeout: timeoutMs,
      ...(this.tlsOptions ? { tlsOptions: this.tlsOptions } : {}),
    });
    try {
      try {
        await client.bind(dn, password);
      } catch (error) {
        if (error instanceof ResultCodeError && rejectingResultCodes.has(error.code)) {
          throw new CredentialRejected(`${this.endpoint.url} refused bind as '${dn}': ${error.message} (result code ${error.code})`, { cause: error });
        }
        throw new VerifierUnavailable(`${this.endpoint.url} could not verify '${dn}': ${describeError(error)}`, { cause: error });
      }
      const subject = await this.storedName(client, dn, user);
      const groups = this.configuration.groupSearch ? await this.groupsOf(client, this.configuration.groupSearch, dn, subject) : [];
      return { subject, assertions: groups.map((group) => `group:${group}`) };
    } finally {
      // The verdict is in; a failing unbind only means the connection is already gone.
      await client.unbind().catch(() => undefined);
    }
  }

  /**
   * The user's name as the directory stores it (the entry's `nameComponent` value), read as the user
   * just bound: the directory matched the typed name by its own rule (for `uid`, case-insensitively),
   * so "ALICE" binds as alice's entry and must be alice, not a subject of its own (user ids and rules
   * compare exactly). No stored value equal to the typed one but for case, or the entry unreadable:
   * refused, or unavailable (fail closed).
   */
  private async storedName(client: Client, dn: string, user: string): Promise<string> {
    const attribute = this.configuration.nameComponent;
    let values: string[];
    try {
      const { searchEntries } = await client.search(dn, { scope: "base", filter: "(objectClass=*)", attributes: [attribute], sizeLimit: 1 });
      const wanted = attribute.toLowerCase();
      values = searchEntries.flatMap((entry) => {
        const key = Object.keys(entry).find((name) => name.toLowerCase() === wanted);
        const value = key === undefined ? [] : entry[key];
        return (Array.isArray(value) ? value : [value]).map((item) => item.toString());
      });
    } catch (error) {
      throw new VerifierUnavailable(`${this.endpoint.url} could not read the entry '${dn}' it bound as: ${describeError(error)}`, { cause: error });
    }
    if (values.includes(user)) return user;
    const stored = values.filter((value) => value.toLowerCase() === user.toLowerCase());
    if (stored.length !== 1)
      throw new CredentialRejected(`${this.endpoint.url} bound '${dn}', whose ${attribute} is not '${user}' (${values.length} value(s) stored)`);
    return stored[0]!;
  }

  /** The user's groups, read as the user just bound. A failed search denies (unavailable): rights must not depend on an outage. */
  private async groupsOf(client: Client, search: GroupSearch, dn: string, user: string): Promise<string[]> {
    const filter = search.filter.replaceAll("{dn}", filterValue(dn)).replaceAll("{user}", filterValue(user));
    try {
      const { searchEntries } = await client.search(search.base, { scope: "sub", filter, attributes: [search.attribute], sizeLimit: maxGroups });
      const wanted = search.attribute.toLowerCase();
      const groups = searchEntries.flatMap((entry) => {
        const key = Object.keys(entry).find((name) => name.toLowerCase() === wanted);
        const value = key === undefined ? [] : entry[key];
        return (Array.isArray(value) ? value : [value]).map((item) => item.toString());
      });
      return [...new Set(groups)].sort();
    } catch (error) {
      throw new VerifierUnavailable(`${this.endpoint.url} could not read the groups of '${dn}' (${search.base}, ${filter}): ${describeError(error)}`, {
        cause: error,
      });
    }
  }

  /** Opens a TCP connection (TLS with certificate verification when useTLS) and closes it again. */
  checkEndpoints(): Promise<void> {
    const { host, port, url } = this.endpoint;
    return new Promise((resolve, reject) => {
      const socket: Socket = this.tlsOptions ? connectTls({ host, port, ...this.tlsOptions }) : connectTcp({ host, port });
      const timer = setTimeout(() => fail(new Error(`no connection within ${timeoutMs / 1000} s`)), timeoutMs);
      const fail = (error: Error) => {
        clearTimeout(timer);
        socket.destroy();
        reject(new Error(`ldap profile '${this.profile}': endpoint ${url} is not reachable: ${error.message}`, { cause: error }));
      };
      socket.once("error", fail);
      socket.once(this.tlsOptions ? "secureConnect" : "connect", () => {
        clearTimeout(timer);
        socket.destroy();
        resolve();
      });
    });
  }

  /** Nothing pooled: every verification has its own connection. */
  async close(): Promise<void> {}
}

function parseConfiguration(raw: Record<string, unknown> | undefined, path: string): LdapConfiguration {
  const values = raw ?? {};
  const error = (property: string, message: string) => new SecurityConfigError(`${path}.${property}`, message);
  for (const name of Object.keys(values)) {
    if (!properties.includes(name)) throw error(name, `unknown property; an ldap profile takes ${properties.join(", ")}`);
  }
  const string = (property: string): string | undefined => {
    const value = values[property];
    if (value === undefined) return undefined;
    if (typeof value !== "string") throw error(property, `must be a string, got ${JSON.stringify(value)}`);
    return value;
  };

  const hostname = string("hostname");
  if (hostname === undefined || hostname === "") throw error("hostname", "is required: the LDAP server's DNS name or IP address, optionally with ':PORT'");
  const split = splitHostname(hostname);
  if (typeof split === "string") throw error("hostname", `'${hostname}' ${split}`);

  const useTLS = values.useTLS ?? false;
  if (typeof useTLS !== "boolean") throw error("useTLS", `must be true or false, got ${JSON.stringify(useTLS)}`);

  const nameComponent = string("nameComponent") ?? "uid";
  if (!isAttributeType(nameComponent)) throw error("nameComponent", `'${nameComponent}' is not an attribute type (such as uid or cn, or a numeric OID)`);

  const written = string("rootComponents") ?? "";
  // Spec 5.5 writes components with ';' between them: read as RFC 4514's ','.
  const rootComponents = withCommaSeparators(written);
  if (!isDistinguishedName(rootComponents)) {
    throw error(
      "rootComponents",
      `'${written}' is not a distinguished name, e.g. ou=people,dc=example,dc=org or ou=people;dc=example;dc=org (',' or ';' between components, no spaces around them, special characters escaped)`,
    );
  }

  const groupSearch = parseGroupSearch(values.groupSearch, `${path}.groupSearch`);
  const configuration: LdapConfiguration = { hostname, useTLS, nameComponent, rootComponents, ...(groupSearch ? { groupSearch } : {}) };
  const caFile = string("caFile");
  if (caFile === undefined) return configuration;
  if (!useTLS) throw error("caFile", "only applies with useTLS true");
  let caCertificates: string;
  try {
    caCertificates = readFileSync(caFile, "utf8");
  } catch (cause) {
    throw error("caFile", `cannot be read: ${describeError(cause)}`);
  }
  try {
    new X509Certificate(caCertificates);
  } catch {
    throw error("caFile", `'${caFile}' holds no PEM certificate`);
  }
  return { ...configuration, caFile, caCertificates };
}

function parseGroupSearch(value: unknown, path: string): GroupSearch | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== "object" || value === null || Array.isArray(value))
    throw new SecurityConfigError(path, 'must be an object: {"base": "ou=groups,dc=example,dc=org", "filter": "(member={dn})", "attribute": "cn"}');
  const raw = value as Record<string, unknown>;
  for (const name of Object.keys(raw)) {
    if (!groupSearchProperties.includes(name))
      throw new SecurityConfigError(`${path}.${name}`, `unknown property; groupSearch takes ${groupSearchProperties.join(", ")}`);
  }
  const text = (name: string, fallback?: string): string => {
    const given = raw[name] ?? fallback;
    if (typeof given !== "string" || given === "") throw new SecurityConfigError(`${path}.${name}`, "is required and must be a non-empty string");
    return given;
  };
  const base = withCommaSeparators(text("base"));
  if (!isDistinguishedName(base)) throw new SecurityConfigError(`${path}.base`, `'${raw.base}' is not a distinguished name`);
  const filter = text("filter", "(member={dn})");
  if (!filter.startsWith("(") || !filter.endsWith(")"))
    throw new SecurityConfigError(`${path}.filter`, `'${filter}' is not an LDAP filter in parentheses, e.g. (member={dn})`);
  const attribute = text("attribute", "cn");
  if (!isAttributeType(attribute)) throw new SecurityConfigError(`${path}.attribute`, `'${attribute}' is not an attribute type`);
  return { base, filter, attribute };
}

export const ldapVerifierFactory: VerifierFactory<LdapConfiguration> = {
  type: "ldap",
  parse: parseConfiguration,
  describe: ({ hostname, useTLS, nameComponent, rootComponents, caFile, groupSearch }) => ({
    hostname,
    useTLS,
    nameComponent,
    rootComponents,
    ...(caFile === undefined ? {} : { caFile }),
    ...(groupSearch === undefined ? {} : { groupSearch }),
  }),
  create: (profile, configuration) => new LdapVerifier(profile, configuration),
};
