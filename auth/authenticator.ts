import { Authorizer } from "./authorization";
import { componentTypes, servedComponents } from "./components";
import { choicesFor, isEnforced, namedDomains, openSecurityConfig, type SecurityConfig, type VerifierFactories } from "./security-config";
import { CountTree } from "../metrics/count-tree";
import { FailureBudget, type FailureKeys } from "./failure-budget";
import { CredentialRejected, SecurityConfigError, VerifierUnavailable } from "./types";
import type {
  Component,
  ComponentName,
  Credential,
  CredentialType,
  Verifier,
  VerifierDependencies,
  OverridesByVerifier,
  VerifierType,
  VerifiedIdentity,
} from "./types";

/** Which verifier answered: for the audit record. */
export interface VerifierRef {
  credentialType: CredentialType;
  verifier: VerifierType;
  profile: string;
}

export type AccessOutcome =
  | { kind: "verified"; identity: VerifiedIdentity; by: VerifierRef }
  /** The credential is wrong (401). */
  | { kind: "rejected"; reason: string; by: VerifierRef }
  /** The verifier could not decide; denied all the same (fail closed). */
  | { kind: "unavailable"; reason: string; by: VerifierRef }
  /** No verifier of this component takes this credential type (spec 6 item 7). */
  | { kind: "unsupported"; reason: string; credentialType: string }
  /** Too many failed checks from this address or for this user: not checked, try again after the wait (429). */
  | { kind: "throttled"; reason: string; retryAfterSeconds: number };

/** Whether a component enforces authentication on a name, and the verifier profile each credential type goes to there. */
export interface SelectionOnName {
  enforced: boolean;
  verifiers: Partial<Record<CredentialType, { verifier: VerifierType; profile: string; entry: string }>>;
}

/** A component's selection on names no selector names, and on each name some selector names. */
export interface ComponentSelection extends SelectionOnName {
  component: ComponentName;
  componentType: Component["type"];
  byDomainName: Record<string, SelectionOnName>;
}

const verifierKey = (type: VerifierType, profile: string) => `${type}/${profile}`;

/** A user name as the failure budget counts it: compatibility-normalized and case-folded (upper then lower, so `ß` and `SS` meet). */
export const guessingKey = (user: string): string => user.normalize("NFKC").toUpperCase().toLowerCase();

/**
 * The process's authentication: which components enforce it, and for each component the verifier
 * each credential type goes to (spec 5.2). Made once at startup, after every verifier's named
 * endpoints answered.
 */
export class Authenticator {
  /** Outcomes of verify() since start, by component, verifier and outcome (read by the node's metrics). */
  readonly outcomes = new CountTree();
  /** What verified subjects may do: the file's `authorization` section (absent: everything). */
  readonly authorizer: Authorizer;

  private constructor(
    readonly config: SecurityConfig,
    private readonly verifiers: ReadonlyMap<string, Verifier>,
    private readonly descriptions: Record<string, unknown>,
    /** Failed checks by address and user, and rejected tokens: shared by every door of the process. */
    readonly failures: FailureBudget = new FailureBudget(),
  ) {
    this.authorizer = new Authorizer(config.authorization);
  }

  /** Nothing enforced, no verifiers: the spec's default. */
  static open(): Authenticator {
    return new Authenticator(openSecurityConfig, new Map(), { configurationFile: null, verifiers: [], credentials: [], enforcedComponents: [] });
  }

  /**
   * Creates a verifier for every profile and checks their endpoints (spec 5.2: named endpoints
   * must be available). Throws `SecurityConfigError` naming the profile whose endpoint failed.
   */
  static async start(
    config: SecurityConfig,
    factories: VerifierFactories,
    dependencies: VerifierDependencies,
    file: string,
    failures = new FailureBudget(),
  ): Promise<Authenticator> {
    rejectUnusableEnforcement(config);
    const verifiers = new Map<string, Verifier>();
    const checks: Array<Promise<void>> = [];
    for (const parsed of config.verifiers) {
      for (const profile of parsed.profiles) {
        const verifier = factories[parsed.type].create(profile.name, profile.configuration, dependencies);
        verifiers.set(verifierKey(parsed.type, profile.name), verifier);
        checks.push(
          verifier.checkEndpoints().catch((error: Error) => {
            throw new SecurityConfigError(profile.path, `verifier '${parsed.type}' profile '${profile.name}': ${error.message}`);
          }),
        );
      }
    }
    const results = await Promise.allSettled(checks);
    const failed = results.find((result): result is PromiseRejectedResult => result.status === "rejected");
    if (failed) {
      await Promise.all([...verifiers.values()].map((verifier) => verifier.close()));
      throw failed.reason;
    }
    const descriptions = {
      configurationFile: file,
      verifiers: config.verifiers.map((parsed) => ({
        verifier: parsed.type,
        default: parsed.defaultProfile ?? null,
        profiles: parsed.profiles.map((profile) => ({ profile: profile.name, configuration: factories[parsed.type].describe(profile.configuration) })),
      })),
      credentials: [...config.credentials].map(([type, choices]) => ({
        type,
        verifiers: choices.map((choice) => ({
          verifier: choice.verifier,
          profile: choice.profile,
          selectors: choice.selectors ?? null,
          default: choice.isDefault,
        })),
      })),
      enforcedComponents: config.enforcedComponents,
      authorization:
        config.authorization?.rules.map((rule) => ({
          name: rule.name,
          ...rule.subjects,
          permissions: rule.permissions.map(({ component, action }) => `${component}:${action}`),
        })) ?? null,
    };
    return new Authenticator(config, verifiers, { ...descriptions, failureBudget: failures.limits }, failures);
  }

  /** The active authentication configuration, secrets masked: the startup audit record (spec 6 item 1). */
  describe(): Record<string, unknown> {
    return { ...this.descriptions, enforcedComponentNames: this.enforcedComponents() };
  }

  /** The components (spec 5.3) that enforce authentication on some domain name (or on every one). */
  enforcedComponents(): ComponentName[] {
    return (Object.keys(componentTypes) as ComponentName[]).filter((name) => this.isEnforced({ name, type: componentTypes[name] }));
  }

  /**
   * Each served component's verifier selection (spec 6, "configuration selection"): whether it
   * enforces and which verifier profile takes each credential type, on names no selector names
   * and on each name one does.
   */
  selections(): ComponentSelection[] {
    const selectionOn = (component: Component, enforced: boolean): SelectionOnName => ({
      enforced,
      verifiers: Object.fromEntries(
        [...choicesFor(this.config, component)].map(([type, choice]) => [type, { verifier: choice.verifier, profile: choice.profile, entry: choice.path }]),
      ),
    });
    return servedComponents.map((name) => {
      const anyName: Component = { name, type: componentTypes[name] };
      const onOtherNames = this.config.enforcedComponents.some(
        (selector) => !selector.domainName && isEnforced({ ...this.config, enforcedComponents: [selector] }, anyName),
      );
      return {
        component: name,
        componentType: componentTypes[name],
        ...selectionOn(anyName, onOtherNames),
        byDomainName: Object.fromEntries(
          namedDomains(this.config).map((domainName) => [domainName, selectionOn({ ...anyName, domainName }, this.isEnforced({ ...anyName, domainName }))]),
        ),
      };
    });
  }

  isEnforced(component: Component): boolean {
    return isEnforced(this.config, component);
  }

  /** The credential types some verifier takes for this component, by the order of spec 5.4. */
  credentialTypesFor(component: Component): CredentialType[] {
    return [...choicesFor(this.config, component).keys()];
  }

  /** Verifies a credential for a component; `from` names the client's address when the door knows it (its failures count against it). */
  async verify(component: Component, credential: Credential, overrides?: OverridesByVerifier, from?: { address?: string }): Promise<AccessOutcome> {
    const outcome = await this.verifyWithinBudget(component, credential, overrides, from?.address);
    this.outcomes
      .child(component.name)
      .child("by" in outcome ? outcome.by.verifier : "none")
      .child(outcome.kind).value++;
    return outcome;
  }

  /**
   * Passwords and tokens go to their verifier only while the address and the user have failures
   * to spare (cloud signatures cannot be guessed: their secret never crosses). A token rejected
   * a moment ago is refused again without asking.
   */
  private async verifyWithinBudget(
    component: Component,
    credential: Credential,
    overrides: OverridesByVerifier | undefined,
    address: string | undefined,
  ): Promise<AccessOutcome> {
    if (credential.type === "cloudSigningCredentials") return this.verifyOnce(component, credential, overrides);
    // An export's overrides (another token audience, other signing keys) make a verification of its own: a token rejected at
    // one export is not remembered as rejected at another, nor a credential good at one as good at another.
    const scope = `${component.name}\0${component.domainName ?? ""}\0${overrides === undefined ? "" : JSON.stringify(overrides)}`;
    const secret =
      credential.type === "namepwd" ? FailureBudget.digest(scope, credential.user, credential.password) : FailureBudget.digest(scope, credential.token);
    if (credential.type === "rawBearerToken") {
      const remembered = this.failures.rejectedToken<AccessOutcome>(secret);
      if (remembered) return remembered;
    }
    // The user's budget is kept under a case-folded name: directories match names without case (slapd's uid does), so
    // `ed`, `Ed` and `ED` are one user's guesses, not three budgets.
    const keys: FailureKeys = { address, user: credential.type === "namepwd" ? guessingKey(credential.user) : undefined };
    const wait = this.failures.retryAfterSeconds(keys, secret);
    if (wait !== undefined)
      return {
        kind: "throttled",
        reason: `too many failed logins${keys.user === undefined ? "" : ` for '${keys.user}' or`} from this address; try again in ${wait} s`,
        retryAfterSeconds: wait,
      };
    const outcome = await this.verifyOnce(component, credential, overrides);
    if (outcome.kind === "verified") this.failures.succeeded(keys, secret);
    if (outcome.kind === "rejected") {
      this.failures.failed(keys);
      if (credential.type === "rawBearerToken") this.failures.tokenRejected(secret, outcome);
    }
    return outcome;
  }

  private async verifyOnce(component: Component, credential: Credential, overrides?: OverridesByVerifier): Promise<AccessOutcome> {
    const choice = choicesFor(this.config, component).get(credential.type);
    if (!choice)
      return {
        kind: "unsupported",
        credentialType: credential.type,
        reason: `no verifier takes '${credential.type}' credentials for component '${component.name}'`,
      };
    const by: VerifierRef = { credentialType: credential.type, verifier: choice.verifier, profile: choice.profile };
    const verifier = this.verifiers.get(verifierKey(choice.verifier, choice.profile));
    if (!verifier) return { kind: "unavailable", reason: `verifier ${verifierKey(choice.verifier, choice.profile)} is not running`, by };
    try {
      return { kind: "verified", identity: await verifier.verify(credential, overrides?.[verifier.type]), by };
    } catch (error) {
      if (error instanceof CredentialRejected) return { kind: "rejected", reason: error.reason, by };
      // Anything else (an outage, or a bug in a verifier) denies: never release on an error.
      const reason = error instanceof VerifierUnavailable ? error.reason : `verifier failed: ${(error as Error).message}`;
      return { kind: "unavailable", reason, by };
    }
  }

  async close(): Promise<void> {
    await Promise.all([...this.verifiers.values()].map((verifier) => verifier.close()));
  }
}

/** An enforced component that no credential type can reach would refuse every client: a configuration error, said at startup. */
function rejectUnusableEnforcement(config: SecurityConfig): void {
  config.enforcedComponents.forEach((selector, index) => {
    for (const name of servedComponents) {
      const candidate: Component = { name, type: componentTypes[name], ...(selector.domainName ? { domainName: selector.domainName } : {}) };
      if (isEnforced({ ...config, enforcedComponents: [selector] }, candidate) && choicesFor(config, candidate).size === 0) {
        throw new SecurityConfigError(
          `enforcedComponents[${index}]`,
          `enforces component '${name}' but no credential verifier selects it: every client would be refused`,
        );
      }
    }
  });
}
