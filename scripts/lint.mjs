#!/usr/bin/env node
// Lints the sources and checks their formatting with Biome (biome.jsonc), from node_modules: `npm test`
// runs this before the tests, and a lint or format error fails the run. `npm run format` rewrites.
import { spawnSync } from "node:child_process";
import { join, dirname } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const biome = join(root, "node_modules", "@biomejs", "biome", "bin", "biome");
const result = spawnSync(process.execPath, [biome, "check", "--error-on-warnings", "."], { cwd: root, stdio: "inherit" });
process.exit(result.status ?? 1);
