#!/usr/bin/env node
// Compiles the AssemblyScript sources (redaction/wasm/*.ts, excluded from tsc) to WebAssembly
// next to their JS in dist/. Run by `npm run build` and scripts/setup.mjs after tsc, and by the
// Dockerfile's build stage. SIMD is on: Node 20 runs it; redaction/csv-structure.ts falls back
// to the JS scanner on an engine that does not.
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, readdirSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const sources = ["redaction/wasm"];

for (const folder of sources.filter((source) => existsSync(join(root, source)))) {
  mkdirSync(join(root, "dist", folder), { recursive: true });
  for (const file of readdirSync(join(root, folder)).filter((name) => name.endsWith(".ts"))) {
    const output = join("dist", folder, file.replace(/\.ts$/, ".wasm"));
    const args = [join(root, "node_modules", "assemblyscript", "bin", "asc.js"), join(folder, file), "-o", output];
    const result = spawnSync(process.execPath, [...args, "-O3", "--noAssert", "--runtime", "stub", "--enable", "simd"], { cwd: root, stdio: "inherit" });
    if (result.status !== 0) {
      process.stderr.write(`build-wasm: ${folder}/${file} did not compile (errors above)\n`);
      process.exit(1);
    }
  }
}
