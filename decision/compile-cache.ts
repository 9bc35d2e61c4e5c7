import type { PolicyConfig } from "../policy/model";
import { compilePolicy, type CompiledPolicy } from "./compiled-policy";

const kept = 4;
const compiled = new Map<number, CompiledPolicy>();

/** The compiled form of a configuration revision, built once per revision in this process. */
export function compiledFor(config: PolicyConfig, revision: number): CompiledPolicy {
  let policy = compiled.get(revision);
  if (!policy) {
    policy = compilePolicy(config, revision);
    compiled.set(revision, policy);
    if (compiled.size > kept) compiled.delete(compiled.keys().next().value as number);
  }
  return policy;
}
