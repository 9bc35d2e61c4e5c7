import { isIP } from "node:net";
import { type AuthorizationConfig, parseAuthorization } from "./authorization";
import { type IdentityMapping, parseIdentityMapping } from "./identity-mapping";
import { componentTypes, isComponentName } from "./components";
import { credentialTypes, SecurityConfigError, verifierCredential } from "./types";
import type { Component, ComponentName, CredentialType, VerifierFactory, VerifierType } from "./types";

/** A CredentialSelector (spec 5.2): every part that is absent or empty selects all. */
export interface Selector {
  componentName?: ComponentName;
  componentType?: Component["type"];
  domainName?: string;
}

export interface ParsedProfile {
  name: string;
  configuration: unknown;
  path: string;
}

export interface ParsedVerifier {
  type: VerifierType;
  profiles: ParsedProfile[];
  defaultProfile?: string;
  path: string;
}

/** One entry of a credential's verifier list, its profile resolved (an empty profile means the verifier's default). */
export interface CredentialChoice {
  verifier: VerifierType;
  profile: string;
  /** Absent selectors select every component. */
  selectors?: Selector;
  isDefault: boolean;
  path: string;
}

export interface SecurityConfig {
  verifiers: ParsedVerifier[];
  /** Per credential type, by precedence: the default verifier, if any, is last whatever its place in the file. */
  credentials: Map<CredentialType, CredentialChoice[]>;
  enforcedComponents: Selector[];
  /** Absent: every verified subject has every permission (docs/authorization.md). */
  authorization?: AuthorizationConfig;
  /** Which userId a verified subject is, for the subject-rights routes (docs/subject-rights.md); absent: no subject is a user. */
  identityMapping?: IdentityMapping;
}

export type VerifierFactories = { [T in VerifierType]: VerifierFactory<unknown> };

/** The configuration in force when no file is given: nothing is enforced (spec 5.1). */
export const openSecurityConfig: SecurityConfig = { verifiers: [], credentials: new Map(), enforcedComponents: [] };

type Json = Record<string, unknown>;

function isObject(value: unknown): value is Json {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function objectAt(value: unknown, path: string): Json {
  if (!isObject(value)) throw new SecurityConfigError(path, "must be an object");
  return value;
}

function arrayAt(value: unknown, path: string): unknown[] {
  if (value === undefined) return [];
  if (!Array.isArray(value)) throw new SecurityConfigError(path, "must be an array");
  return value;
}

function optionalString(value: unknown, path: string): string | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== "string") throw new SecurityConfigError(path, "must be a string");
  return value;
}

function onlyKeys(object: Json, allowed: readonly string[], path: string): void {
  for (const key of Object.keys(object)) {
    if (!allowed.includes(key)) throw new SecurityConfigError(`${path}.${key}`, `is not a known property (allowed: ${allowed.join(", ")})`);
  }
}

function parseSelector(value: unknown, path: string): Selector {
  const raw = objectAt(value, path);
  onlyKeys(raw, ["componentName", "componentType", "domainName"], path);
  const selector: Selector = {};
  const name = optionalString(raw.componentName, `${path}.componentName`);
  if (name) {
    if (!isComponentName(name))
      throw new SecurityConfigError(`${path}.componentName`, `'${name}' is not a component (components: ${Object.keys(componentTypes).join(", ")})`);
    selector.componentName = name;
  }
  const type = optionalString(raw.componentType, `${path}.componentType`);
  if (type) {
    if (type !== "api" && type !== "export") throw new SecurityConfigError(`${path}.componentType`, `'${type}' is not a component type (api or export)`);
    selector.componentType = type;
  }
  const domain = optionalString(raw.domainName, `${path}.domainName`);
  if (domain) selector.domainName = hostNameOf(domain, `${path}.domainName`);
  return selector;
}

/** A label of a host name (underscores allowed: internal names use them). */
const hostLabel = "[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?";
const hostName = new RegExp(`^${hostLabel}(?:\\.${hostLabel})*$`);

/**
 * A selector's domain name as requests' names are compared (docs/authentication.md: without case or final dot): a name
 * with a port, scheme or path would never match a request, and a selector that never matches leaves its component open.
 */
function hostNameOf(domain: string, path: string): string {
  const name = domain.toLowerCase().replace(/\.$/, "");
  if (isIP(name) !== 0 || hostName.test(name)) return name;
  throw new SecurityConfigError(path, `'${domain}' is not a host name: give the name alone, without port, brackets, scheme or path`);
}

/** True when every part given matches; a domain selector never matches a connection whose name is unknown. */
export function selects(selector: Selector | undefined, component: Component): boolean {
  if (!selector) return true;
  if (selector.componentName && selector.componentName !== component.name) return false;
  if (selector.componentType && selector.componentType !== component.type) return false;
  if (selector.domainName && selector.domainName !== component.domainName) return false;
  return true;
}

function parseVerifiers(value: unknown, factories: VerifierFactories): ParsedVerifier[] {
  const seen = new Set<string>();
  return arrayAt(value, "verifiers").map((entry, index) => {
    const path = `verifiers[${index}]`;
    const raw = objectAt(entry, path);
    onlyKeys(raw, ["verifier", "profiles", "default"], path);
    const type = optionalString(raw.verifier, `${path}.verifier`);
    if (!type) throw new SecurityConfigError(`${path}.verifier`, "is required (ldap, oauth or cloud)");
    if (!Object.hasOwn(factories, type)) throw new SecurityConfigError(`${path}.verifier`, `'${type}' is not a verifier type (ldap, oauth or cloud)`);
    if (seen.has(type)) throw new SecurityConfigError(`${path}.verifier`, `'${type}' is defined twice: give one entry several profiles instead`);
    seen.add(type);
    const factory = factories[type as VerifierType];
    const names = new Set<string>();
    const profiles = arrayAt(raw.profiles, `${path}.profiles`).map((profileEntry, profileIndex) => {
      const profilePath = `${path}.profiles[${profileIndex}]`;
      const rawProfile = objectAt(profileEntry, profilePath);
      onlyKeys(rawProfile, ["profile", "configuration"], profilePath);
      const name = optionalString(rawProfile.profile, `${profilePath}.profile`);
      if (!name) throw new SecurityConfigError(`${profilePath}.profile`, "is required and must not be empty");
      if (names.has(name)) throw new SecurityConfigError(`${profilePath}.profile`, `duplicate profile name '${name}' in verifier '${type}'`);
      names.add(name);
      const configuration =
        rawProfile.configuration === undefined || rawProfile.configuration === null
          ? undefined
          : objectAt(rawProfile.configuration, `${profilePath}.configuration`);
      return { name, configuration: factory.parse(configuration, `${profilePath}.configuration`), path: profilePath };
    });
    const defaultProfile = optionalString(raw.default, `${path}.default`) || undefined;
    if (defaultProfile !== undefined && !names.has(defaultProfile)) {
      throw new SecurityConfigError(
        `${path}.default`,
        `default profile '${defaultProfile}' is not defined in verifier '${type}' (profiles: ${[...names].join(", ") || "none"})`,
      );
    }
    return { type: type as VerifierType, profiles, defaultProfile, path };
  });
}

function parseCredentials(value: unknown, verifiers: readonly ParsedVerifier[]): Map<CredentialType, CredentialChoice[]> {
  const credentials = new Map<CredentialType, CredentialChoice[]>();
  arrayAt(value, "credentials").forEach((entry, index) => {
    const path = `credentials[${index}]`;
    const raw = objectAt(entry, path);
    onlyKeys(raw, ["type", "verifiers"], path);
    const type = optionalString(raw.type, `${path}.type`);
    if (!type || !credentialTypes.includes(type as CredentialType)) {
      throw new SecurityConfigError(`${path}.type`, `'${type ?? ""}' is not a credential type (${credentialTypes.join(", ")})`);
    }
    if (credentials.has(type as CredentialType)) throw new SecurityConfigError(`${path}.type`, `credential type '${type}' is listed twice`);
    const choices = arrayAt(raw.verifiers, `${path}.verifiers`).map((choiceEntry, choiceIndex) =>
      parseChoice(choiceEntry, `${path}.verifiers[${choiceIndex}]`, type as CredentialType, verifiers),
    );
    const defaults = choices.filter((choice) => choice.isDefault);
    if (defaults.length > 1)
      throw new SecurityConfigError(defaults[1].path, `more than one default verifier for credential type '${type}' (the first is ${defaults[0].path})`);
    credentials.set(type as CredentialType, [...choices.filter((choice) => !choice.isDefault), ...defaults]);
  });
  return credentials;
}

function parseChoice(value: unknown, path: string, credentialType: CredentialType, verifiers: readonly ParsedVerifier[]): CredentialChoice {
  const raw = objectAt(value, path);
  onlyKeys(raw, ["verifier", "profile", "selectors", "default"], path);
  const type = optionalString(raw.verifier, `${path}.verifier`) ?? "";
  if (!Object.hasOwn(verifierCredential, type)) throw new SecurityConfigError(`${path}.verifier`, `'${type}' is not a verifier type (ldap, oauth or cloud)`);
  const configured = verifiers.find((verifier) => verifier.type === type);
  if (!configured) throw new SecurityConfigError(`${path}.verifier`, `verifier '${type}' is not configured: add it to 'verifiers'`);
  if (verifierCredential[type as VerifierType] !== credentialType) {
    throw new SecurityConfigError(`${path}.verifier`, `verifier '${type}' verifies '${verifierCredential[type as VerifierType]}', not '${credentialType}'`);
  }
  const named = optionalString(raw.profile, `${path}.profile`);
  let profile: string;
  if (named) {
    if (!configured.profiles.some((p) => p.name === named))
      throw new SecurityConfigError(
        `${path}.profile`,
        `unknown profile '${named}' of verifier '${type}' (profiles: ${configured.profiles.map((p) => p.name).join(", ") || "none"})`,
      );
    profile = named;
  } else {
    if (!configured.defaultProfile)
      throw new SecurityConfigError(`${path}.profile`, `is empty but verifier '${type}' has no default profile: name one, or set '${configured.path}.default'`);
    profile = configured.defaultProfile;
  }
  if (raw.default !== undefined && typeof raw.default !== "boolean") throw new SecurityConfigError(`${path}.default`, "must be true or false");
  const isDefault = raw.default === true;
  if (isDefault && raw.selectors !== undefined)
    throw new SecurityConfigError(`${path}.selectors`, "a default verifier selects every component: remove its selectors");
  const selectors = raw.selectors === undefined ? undefined : parseSelector(raw.selectors, `${path}.selectors`);
  return { verifier: type as VerifierType, profile, selectors, isDefault, path };
}

/**
 * Checks a security configuration file's content (spec 5.2, 7). Every error names the entry
 * it concerns; the first one found is thrown. Profile configurations are checked by their
 * verifier type's factory.
 */
export function parseSecurityConfig(value: unknown, factories: VerifierFactories): SecurityConfig {
  const root = objectAt(value, "(root)");
  onlyKeys(root, ["verifiers", "credentials", "enforcedComponents", "authorization", "identityMapping"], "(root)");
  const verifiers = parseVerifiers(root.verifiers, factories);
  const credentials = parseCredentials(root.credentials, verifiers);
  const enforcedComponents = arrayAt(root.enforcedComponents, "enforcedComponents").map((entry, index) => parseSelector(entry, `enforcedComponents[${index}]`));
  const authorization = parseAuthorization(root.authorization, new Set(verifiers.flatMap((verifier) => verifier.profiles.map((profile) => profile.name))));
  const identityMapping = parseIdentityMapping(root.identityMapping);
  return { verifiers, credentials, enforcedComponents, ...(authorization ? { authorization } : {}), ...(identityMapping ? { identityMapping } : {}) };
}

/** The verifier each credential type uses for a component: the first entry by precedence that selects it. */
export function choicesFor(config: SecurityConfig, component: Component): Map<CredentialType, CredentialChoice> {
  const chosen = new Map<CredentialType, CredentialChoice>();
  for (const [type, choices] of config.credentials) {
    const choice = choices.find((candidate) => selects(candidate.selectors, component));
    if (choice) chosen.set(type, choice);
  }
  return chosen;
}

/**
 * Spec 5.2/5.3: a selector with a domain name enforces only on that name. A connection whose
 * name is unknown (no Host, a wire protocol without SNI) could be for that name, so every
 * selector enforces on it (fail closed).
 */
export function isEnforced(config: SecurityConfig, component: Component): boolean {
  return config.enforcedComponents.some((selector) =>
    selects(component.domainName === undefined ? { ...selector, domainName: undefined } : selector, component),
  );
}

/** The domain names some selector of the file names: where a component's selection may differ from its selection on other names. */
export function namedDomains(config: SecurityConfig): string[] {
  const selectors = [
    ...config.enforcedComponents,
    ...[...config.credentials.values()].flat().flatMap((choice) => (choice.selectors ? [choice.selectors] : [])),
  ];
  return [...new Set(selectors.flatMap((selector) => (selector.domainName ? [selector.domainName] : [])))].sort();
}
