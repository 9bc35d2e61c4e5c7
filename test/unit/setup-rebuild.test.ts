import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, symlinkSync, utimesSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { tempDir } from "../../testkit/temp";

const root = join(__dirname, "..", "..", "..");

/**
 * A throwaway project with the real setup script, the repository's node_modules and a
 * tsconfig.json including auth/ and service/: setup must rebuild after a change in any
 * folder the build includes, and only then.
 */
function project(): { dir: string; setup: () => string } {
  const dir = tempDir("setup-rebuild");
  mkdirSync(join(dir, "scripts"));
  for (const script of ["setup.mjs", "build-inputs.mjs", "build-wasm.mjs"]) copyFileSync(join(root, "scripts", script), join(dir, "scripts", script));
  symlinkSync(join(root, "node_modules"), join(dir, "node_modules"));
  writeFileSync(
    join(dir, "tsconfig.json"),
    JSON.stringify({ compilerOptions: { outDir: "dist", rootDir: ".", types: [], strict: true }, include: ["auth", "service"] }),
  );
  for (const folder of ["auth", "service"]) {
    mkdirSync(join(dir, folder));
    writeFileSync(join(dir, folder, "a.ts"), `export const ${folder} = 1;\n`);
  }
  // The repository's own manifest and lock, which the shared node_modules was installed from: setup must not run npm ci
  // here (it would empty the repository's node_modules through the link).
  // Older than the install too, for a node_modules installed without setup's stamp.
  const past = new Date(Date.now() - 365 * 24 * 3600_000);
  for (const file of ["package.json", "package-lock.json"]) {
    copyFileSync(join(root, file), join(dir, file));
    utimesSync(join(dir, file), past, past);
  }
  const setup = () => {
    const result = spawnSync(process.execPath, [join(dir, "scripts", "setup.mjs")], {
      cwd: dir,
      encoding: "utf8",
      env: { ...process.env, NATS_URL: "nats://127.0.0.1:1" },
    });
    assert.equal(result.status, 0, result.stderr);
    return result.stderr;
  };
  return { dir, setup };
}

/** Moves a file's modification time a minute ahead, as an edit after the last build would. */
function touchLater(path: string): void {
  const later = new Date(Date.now() + 60_000);
  utimesSync(path, later, later);
}

test("setup rebuilds after a change under auth/ (and any folder tsconfig.json includes), and not otherwise", () => {
  const { dir, setup } = project();
  assert.match(setup(), /building \(tsc\)/, "the first run builds");
  assert.ok(existsSync(join(dir, "dist", "auth", "a.js")));
  assert.doesNotMatch(setup(), /building/, "nothing changed: no build");

  writeFileSync(join(dir, "auth", "a.ts"), "export const auth = 2;\n");
  touchLater(join(dir, "auth", "a.ts"));
  assert.match(setup(), /building \(tsc\)/, "a change under auth/ rebuilds");
  assert.match(readFileSync(join(dir, "dist", "auth", "a.js"), "utf8"), /auth = 2/);
  assert.doesNotMatch(setup(), /building/);

  mkdirSync(join(dir, "service", "deep"));
  writeFileSync(join(dir, "service", "deep", "b.ts"), "export const b = 1;\n");
  touchLater(join(dir, "service", "deep", "b.ts"));
  assert.match(setup(), /building \(tsc\)/, "a new file in a subfolder rebuilds");
  assert.ok(existsSync(join(dir, "dist", "service", "deep", "b.js")));
});

test("the build's inputs are tsconfig.json's include list, which names every source folder of the repository", async () => {
  const { buildInputs } = (await import(join(root, "scripts", "build-inputs.mjs"))) as { buildInputs: (root: string) => string[] };
  const inputs = buildInputs(root);
  const holdsTypeScript = (dir: string): boolean =>
    readdirSync(dir, { withFileTypes: true }).some((entry) =>
      entry.isDirectory() ? entry.name !== "node_modules" && holdsTypeScript(join(dir, entry.name)) : entry.name.endsWith(".ts"),
    );
  const sourceFolders = readdirSync(root, { withFileTypes: true })
    .filter((entry) => entry.isDirectory() && !entry.name.startsWith(".") && !["node_modules", "dist", "test-artifacts", "data"].includes(entry.name))
    .filter((entry) => holdsTypeScript(join(root, entry.name)))
    .map((entry) => entry.name);
  assert.ok(sourceFolders.includes("auth"));
  for (const folder of sourceFolders)
    assert.ok(inputs.includes(folder), `${folder}/ holds TypeScript but neither the build nor setup's rebuild check reads it`);
});
