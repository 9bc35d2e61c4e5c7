import { readFileSync } from "node:fs";
import { parseSecurityConfig, type SecurityConfig } from "./security-config";
import { verifierFactories } from "./verifier-factories";
import { SecurityConfigError } from "./types";

/** Reads and checks the security configuration file; every problem is a `SecurityConfigError` naming the entry (or the file). */
export function loadSecurityFile(path: string): SecurityConfig {
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch (error) {
    throw new SecurityConfigError("(file)", `cannot read ${path}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`);
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (error) {
    throw new SecurityConfigError("(file)", `${path} is not valid JSON: ${(error as Error).message}`);
  }
  return parseSecurityConfig(json, verifierFactories);
}
