/** A name of ALLOWED_HOSTS: `warden.example`, or `*.example` (any name below it). */
interface HostPattern {
  host: string;
  anySubdomain: boolean;
}

const namePattern = /^(\*\.)?[a-z0-9_-]+(\.[a-z0-9_-]+)*$/;

/**
 * The names ALLOWED_HOSTS adds to those an HTTP listener answers to (http/host-check.ts):
 * host names (no port: a name is allowed on every port it is served at), `*.domain` for any
 * name below it, or `*` alone for every Host (the check off).
 */
export class AllowedHosts {
  private constructor(
    private readonly patterns: readonly HostPattern[],
    /** `*`: every Host is accepted. */
    readonly any: boolean,
  ) {}

  /** Nothing set: the listener's defaults only. */
  static readonly unset = new AllowedHosts([], false);

  /** Comma-separated names, `*.domain` patterns or `*`; empty: unset. Throws naming the entry that is none of these. */
  static parse(raw: string): AllowedHosts {
    const entries = raw
      .split(",")
      .map((entry) => entry.trim().toLowerCase().replace(/\.$/, ""))
      .filter(Boolean);
    if (entries.includes("*")) {
      if (entries.length > 1) throw new Error("'*' allows every Host: give it alone");
      return new AllowedHosts([], true);
    }
    return new AllowedHosts(
      entries.map((entry) => {
        if (!namePattern.test(entry))
          throw new Error(`'${entry}' is not a host name or *.domain pattern (no scheme, port or path; IP addresses are always accepted)`);
        return entry.startsWith("*.") ? { host: entry.slice(2), anySubdomain: true } : { host: entry, anySubdomain: false };
      }),
      false,
    );
  }

  /** Whether the operator set any names (or `*`). */
  get set(): boolean {
    return this.any || this.patterns.length > 0;
  }

  /** Whether `name` (lower case, without port or final dot) is one of the names. */
  matches(name: string): boolean {
    return this.any || this.patterns.some((pattern) => (pattern.anySubdomain ? name.endsWith(`.${pattern.host}`) : name === pattern.host));
  }

  /** As the configuration audit shows it. */
  describe(): string {
    return this.any ? "*" : this.patterns.map((pattern) => (pattern.anySubdomain ? `*.${pattern.host}` : pattern.host)).join(",");
  }
}
