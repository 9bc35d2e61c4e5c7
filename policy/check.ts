import Ajv, { type ErrorObject } from "ajv";
import type { PolicyConfig, Problem } from "./model";
import { policyConfigSchema } from "./schema";
import { validatePolicy } from "./validate";

const ajv = new Ajv({ allErrors: true, strict: true });
const matchesSchema = ajv.compile<PolicyConfig>(policyConfigSchema);

/** One schema error as a problem: unknown keys are named, stableId patterns explained. */
export function problemFromSchemaError(error: Pick<ErrorObject, "keyword" | "instancePath" | "params" | "message">): Problem {
  if (error.keyword === "additionalProperties") {
    const key = String((error.params as { additionalProperty: string }).additionalProperty);
    return { path: `${error.instancePath}/${key}`, problem: `unknown key '${key}'` };
  }
  if (error.keyword === "pattern" && error.instancePath.endsWith("/stableId")) {
    return { path: error.instancePath, problem: "a stableId may contain only letters, digits, '.', '-' and '_'" };
  }
  return { path: error.instancePath || "/", problem: error.message ?? "is invalid" };
}

/** Shape first (the schema), then identity and references; every problem of the failing stage is listed. */
export function checkPolicyConfig(value: unknown): { ok: true; config: PolicyConfig } | { ok: false; problems: Problem[] } {
  if (!matchesSchema(value)) {
    // anyOf branches repeat their sub-errors; keep one of each.
    const unique = new Map((matchesSchema.errors ?? []).map(problemFromSchemaError).map((p) => [`${p.path} ${p.problem}`, p]));
    return { ok: false, problems: [...unique.values()] };
  }
  const problems = validatePolicy(value);
  return problems.length ? { ok: false, problems } : { ok: true, config: value };
}
