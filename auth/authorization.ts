import { SecurityConfigError } from "./types";
import type { VerifiedIdentity, VerifierType } from "./types";

/**
 * Authorization (issue 26 item 1): which verified subject may do what. Rules of the security
 * configuration file grant permissions, `component:action`, to subjects named by LDAP user or
 * group, OAuth scope or claim, or cloud-signing key id. docs/authorization.md has the format.
 */

/** What a permission names: the REST APIs, and the export doors by their type (HTTP doors per request, wire doors at login). */
export const authorizedComponents = [
  "config",
  "mapping",
  "user",
  "export",
  "redact",
  "decision",
  "pipeline",
  "fhir",
  "objectstore",
  "postgres",
  "mysql",
] as const;
export type AuthorizedComponent = (typeof authorizedComponents)[number];

export const actions = ["read", "write", "admin", "query", "own"] as const;
export type Action = (typeof actions)[number];

/** The actions each component takes: `query` is the decision API's only action, `own` only redaction's. */
export const actionsOf: Record<AuthorizedComponent, readonly Action[]> = {
  config: ["read", "write", "admin"],
  mapping: ["read", "write", "admin"],
  user: ["read", "write", "admin"],
  export: ["read", "write", "admin"],
  redact: ["own", "read", "write", "admin"],
  decision: ["query"],
  pipeline: ["read"],
  fhir: ["read", "write"],
  objectstore: ["read", "write"],
  postgres: ["read", "write"],
  mysql: ["read", "write"],
};

/**
 * A granted action includes the ones below it: admin includes write (and the decision API's query),
 * write includes read, and for redaction read includes own (every redaction route acts on the
 * caller's own jobs; admin sees all).
 */
const includes: Record<Action, readonly Action[]> = {
  admin: ["admin", "write", "read", "own", "query"],
  write: ["write", "read", "own"],
  read: ["read", "own"],
  own: ["own"],
  query: ["query"],
};

/** Who a rule grants to: a subject matches the rule when any one of the listed names matches. */
export interface RuleSubjects {
  ldapUsers: string[];
  ldapGroups: string[];
  scopes: string[];
  /** A named claim of the OAuth token and the values that match (a claim holding an array matches when any element does). */
  claims: Array<{ name: string; values: string[] }>;
  cloudKeyIds: string[];
}

export interface AuthorizationRule {
  name: string;
  subjects: RuleSubjects;
  /** Only callers verified by a profile of one of these names (any verifier type's): empty, every profile. */
  profiles: string[];
  /** Granted actions by component, as written (before `includes` widens them). */
  permissions: Array<{ component: AuthorizedComponent; action: Action }>;
  path: string;
}

export interface AuthorizationConfig {
  rules: AuthorizationRule[];
}

/** Who the caller is, as authorization sees it: the identity, and the verifier type and profile that vouched for it. */
export interface Principal {
  identity: VerifiedIdentity;
  verifier: VerifierType;
  profile: string;
}

/** The grant behind one permission: the rule that gave it, for the audit record of a denial or an admission. */
export interface Grant {
  rule: string;
}

/**
 * A caller's resolved permissions, put on each request by the authentication hook. `all` holds
 * every permission: nothing is enforced on the component, or no authorization section exists.
 */
export interface CallerRights {
  subject: string | null;
  /**
   * What owns the caller's redaction jobs: `<verifier>/<profile>:<subject>` (profile percent-encoded), so that an LDAP user
   * and a token subject of one name, or one user name in two directories (two tokens' issuers), are different owners; null unauthenticated.
   */
  owner: string | null;
  all: boolean;
  /** `component:action` to the first rule (in file order) that granted it. */
  grants: ReadonlyMap<string, Grant>;
  /** The names of the rules that matched the caller, for the audit of a denial. */
  rules: readonly string[];
}

export const fullRights = (subject: string | null, owner: string | null = null): CallerRights => ({ subject, owner, all: true, grants: new Map(), rules: [] });

/** The rights of every request to a component that enforces no authentication: one frozen object, not one per request. */
export const unenforcedRights: CallerRights = Object.freeze(fullRights(null));

/** May this caller see a redaction job with this owner? Its creator may; a redact:admin may see every job. */
export function seesJob(caller: CallerRights | undefined, owner: string | null | undefined): boolean {
  if (permits(caller, "redact", "admin")) return true;
  return caller?.owner != null && caller.owner === owner;
}

/** The rule behind `component:action` for this caller, "(no authorization section)" or "(not enforced)" for full rights, or undefined when not granted. */
export function grantOf(caller: CallerRights | undefined, component: AuthorizedComponent, action: Action): Grant | undefined {
  if (!caller) return undefined;
  if (caller.all) return { rule: caller.subject === null ? "(not enforced)" : "(no authorization section)" };
  return caller.grants.get(`${component}:${action}`);
}

/**
 * Does this caller hold `action` on `component`? A request without resolved rights holds nothing
 * (fail closed). The one question every route and door asks.
 */
export function permits(caller: CallerRights | undefined, component: AuthorizedComponent, action: Action): boolean {
  return grantOf(caller, component, action) !== undefined;
}

/** Claim values as strings: a string, a number or boolean, or an array of those. */
function claimValues(value: unknown): string[] {
  const list = Array.isArray(value) ? value : [value];
  return list.filter((item) => ["string", "number", "boolean"].includes(typeof item)).map(String);
}

/** `group:<name>` assertions of an identity (LDAP group membership). */
export const groupAssertion = (group: string) => `group:${group}`;
export const scopeAssertion = (scope: string) => `scope:${scope}`;
export const claimAssertion = (name: string, value: string) => `claim:${name}=${value}`;

/** The owner of a caller's redaction jobs (CallerRights.owner). */
export const jobOwner = ({ verifier, profile, identity }: Principal): string => `${verifier}/${encodeURIComponent(profile)}:${identity.subject}`;

function matches(rule: AuthorizationRule, principal: Principal): boolean {
  const { identity, verifier } = principal;
  const { subjects } = rule;
  if (rule.profiles.length > 0 && !rule.profiles.includes(principal.profile)) return false;
  const asserted = new Set(identity.assertions);
  if (verifier === "ldap") {
    if (subjects.ldapUsers.includes(identity.subject)) return true;
    if (subjects.ldapGroups.some((group) => asserted.has(groupAssertion(group)))) return true;
  }
  if (verifier === "oauth") {
    if (subjects.scopes.some((scope) => asserted.has(scopeAssertion(scope)))) return true;
    const claims = identity.claims ?? {};
    for (const claim of subjects.claims) {
      if (!Object.hasOwn(claims, claim.name)) continue;
      if (claimValues(claims[claim.name]).some((value) => claim.values.includes(value))) return true;
    }
  }
  if (verifier === "cloud" && subjects.cloudKeyIds.includes(identity.subject)) return true;
  return false;
}

/**
 * Resolves callers' permissions from the configured rules. Without an authorization section
 * every verified subject keeps full rights (and the node audits a warning at every start).
 */
export class Authorizer {
  constructor(readonly config: AuthorizationConfig | undefined) {}

  get configured(): boolean {
    return this.config !== undefined;
  }

  rightsOf(principal: Principal): CallerRights {
    const owner = jobOwner(principal);
    if (!this.config) return fullRights(principal.identity.subject, owner);
    const grants = new Map<string, Grant>();
    const rules: string[] = [];
    for (const rule of this.config.rules) {
      if (!matches(rule, principal)) continue;
      rules.push(rule.name);
      for (const permission of rule.permissions) {
        for (const action of includes[permission.action]) {
          if (!actionsOf[permission.component].includes(action)) continue;
          const key = `${permission.component}:${action}`;
          if (!grants.has(key)) grants.set(key, { rule: rule.name });
        }
      }
    }
    return { subject: principal.identity.subject, owner, all: false, grants, rules };
  }

  /** The names of the claims rules read: these claims of a token become `claim:<name>=<value>` assertions, recorded in traces. */
  claimNames(): string[] {
    return [...new Set((this.config?.rules ?? []).flatMap((rule) => rule.subjects.claims.map((claim) => claim.name)))];
  }

  /** The caller's assertions as decisions and traces see them: the verifier's, plus the claims rules name. */
  assertionsOf(identity: VerifiedIdentity): string[] {
    const claims = identity.claims ?? {};
    const named = this.claimNames().flatMap((name) =>
      Object.hasOwn(claims, name) ? claimValues(claims[name]).map((value) => claimAssertion(name, value)) : [],
    );
    return [...identity.assertions, ...named];
  }
}

/** Every problem of an authorization section, each naming its entry; thrown as one error listing them all. */
export class AuthorizationConfigError extends SecurityConfigError {
  constructor(readonly problems: SecurityConfigError[]) {
    super(problems[0].path, problems.map((problem, index) => (index === 0 ? problem.message.slice(problem.path.length + 2) : problem.message)).join("\n  "));
  }
}

type Json = Record<string, unknown>;
const isObject = (value: unknown): value is Json => typeof value === "object" && value !== null && !Array.isArray(value);
const subjectKeys = ["ldapUsers", "ldapGroups", "scopes", "claims", "cloudKeyIds"] as const;

/**
 * Checks the `authorization` section of the security configuration file. Unlike the rest of the
 * file, every problem is collected: a rule set is long and edited by hand, and one run should
 * show all that is wrong with it.
 */
export function parseAuthorization(value: unknown, knownProfiles: ReadonlySet<string>, path = "authorization"): AuthorizationConfig | undefined {
  if (value === undefined) return undefined;
  const problems: SecurityConfigError[] = [];
  const problem = (at: string, message: string): void => {
    problems.push(new SecurityConfigError(at, message));
  };
  if (!isObject(value)) throw new AuthorizationConfigError([new SecurityConfigError(path, "must be an object with 'rules'")]);
  for (const key of Object.keys(value)) if (key !== "rules") problem(`${path}.${key}`, "is not a known property (allowed: rules)");
  const rawRules = value.rules ?? [];
  if (!Array.isArray(rawRules)) problem(`${path}.rules`, "must be an array");
  const names = new Set<string>();
  const rules: AuthorizationRule[] = [];
  (Array.isArray(rawRules) ? rawRules : []).forEach((entry, index) => {
    const at = `${path}.rules[${index}]`;
    if (!isObject(entry)) return problem(at, "must be an object with 'name', who it grants to and 'permissions'");
    for (const key of Object.keys(entry)) {
      if (key !== "name" && key !== "permissions" && key !== "profiles" && !(subjectKeys as readonly string[]).includes(key))
        problem(`${at}.${key}`, `is not a known property (allowed: name, ${subjectKeys.join(", ")}, profiles, permissions)`);
    }
    const name = typeof entry.name === "string" && entry.name !== "" ? entry.name : `rules[${index}]`;
    if (entry.name !== undefined && (typeof entry.name !== "string" || entry.name === "")) problem(`${at}.name`, "must be a non-empty string");
    if (names.has(name)) problem(`${at}.name`, `duplicate rule name '${name}'`);
    names.add(name);
    const strings = (key: (typeof subjectKeys)[number] | "profiles"): string[] => {
      const list = entry[key];
      if (list === undefined) return [];
      if (!Array.isArray(list) || list.some((item) => typeof item !== "string" || item === "")) {
        problem(`${at}.${key}`, "must be an array of non-empty strings");
        return [];
      }
      return list as string[];
    };
    const subjects: RuleSubjects = {
      ldapUsers: strings("ldapUsers"),
      ldapGroups: strings("ldapGroups"),
      scopes: strings("scopes"),
      cloudKeyIds: strings("cloudKeyIds"),
      claims: parseClaims(entry.claims, `${at}.claims`, problem),
    };
    const granted = subjectKeys.some((key) => (key === "claims" ? subjects.claims.length > 0 : subjects[key].length > 0));
    if (!granted && subjectKeys.every((key) => entry[key] === undefined)) problem(at, `grants to no one: name at least one of ${subjectKeys.join(", ")}`);
    const profiles = strings("profiles");
    for (const [index, profile] of profiles.entries())
      if (!knownProfiles.has(profile))
        problem(`${at}.profiles[${index}]`, `'${profile}' is no verifier's profile (profiles: ${[...knownProfiles].join(", ") || "none"})`);
    const permissions = parsePermissions(entry.permissions, `${at}.permissions`, problem);
    rules.push({ name, subjects, profiles, permissions, path: at });
  });
  if (problems.length > 0) throw new AuthorizationConfigError(problems);
  return { rules };
}

function parseClaims(value: unknown, at: string, problem: (at: string, message: string) => void): RuleSubjects["claims"] {
  if (value === undefined) return [];
  if (!Array.isArray(value)) {
    problem(at, 'must be an array of {"name": ..., "values": [...]}');
    return [];
  }
  const claims: RuleSubjects["claims"] = [];
  value.forEach((claim, index) => {
    const claimAt = `${at}[${index}]`;
    if (!isObject(claim)) return problem(claimAt, 'must be {"name": ..., "values": [...]}');
    for (const key of Object.keys(claim))
      if (key !== "name" && key !== "values") problem(`${claimAt}.${key}`, "is not a known property (allowed: name, values)");
    const okName = typeof claim.name === "string" && claim.name !== "";
    if (!okName) problem(`${claimAt}.name`, "must be a non-empty string: the claim's name in the token");
    const values = claim.values;
    const okValues = Array.isArray(values) && values.length > 0 && values.every((item) => typeof item === "string" && item !== "");
    if (!okValues) problem(`${claimAt}.values`, "must be a non-empty array of non-empty strings");
    if (okName && okValues) claims.push({ name: claim.name as string, values: values as string[] });
  });
  return claims;
}

function parsePermissions(value: unknown, at: string, problem: (at: string, message: string) => void): AuthorizationRule["permissions"] {
  if (!Array.isArray(value) || value.length === 0) {
    problem(at, 'must be a non-empty array of "component:action" (e.g. "config:read", "decision:query", "*:admin")');
    return [];
  }
  const permissions: AuthorizationRule["permissions"] = [];
  value.forEach((item, index) => {
    const itemAt = `${at}[${index}]`;
    const [component, action, extra] = typeof item === "string" ? item.split(":") : [];
    if (component === undefined || action === undefined || extra !== undefined) return problem(itemAt, `${JSON.stringify(item)} is not "component:action"`);
    if (component !== "*" && !(authorizedComponents as readonly string[]).includes(component))
      return problem(itemAt, `'${component}' is not a component (${authorizedComponents.join(", ")}, or * for all)`);
    if (!(actions as readonly string[]).includes(action)) return problem(itemAt, `'${action}' is not an action (${actions.join(", ")})`);
    const components = component === "*" ? [...authorizedComponents] : [component as AuthorizedComponent];
    // With '*', each component takes what it can of the action (and of the actions it includes).
    const usable = components.filter((name) => includes[action as Action].some((included) => actionsOf[name].includes(included)));
    if (usable.length === 0)
      return problem(itemAt, `'${component}' takes no action '${action}' (it takes ${actionsOf[component as AuthorizedComponent].join(", ")})`);
    for (const name of usable) permissions.push({ component: name, action: action as Action });
  });
  return permissions;
}
