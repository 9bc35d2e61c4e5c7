// What the build reads, and whether dist/ is older than it: setup.mjs rebuilds when it is.
// The source folders are tsconfig.json's own "include" list, so a folder added there (auth/
// was missed when the list was kept here by hand) is watched without another edit.
// Node built-ins only: setup runs this before `npm install` has.
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";

/** Newest modification time of the TypeScript sources under `path` (or of `path` itself, for a file). Folders count too: a deleted or renamed file changes its folder. */
export function newestMtime(path) {
  if (!existsSync(path)) return 0;
  const info = statSync(path);
  if (!info.isDirectory()) return info.mtimeMs;
  let newest = info.mtimeMs;
  for (const entry of readdirSync(path)) {
    if (entry === "node_modules" || entry.startsWith(".")) continue;
    const child = join(path, entry);
    if (statSync(child).isDirectory()) newest = Math.max(newest, newestMtime(child));
    else if (entry.endsWith(".ts")) newest = Math.max(newest, statSync(child).mtimeMs);
  }
  return newest;
}

/** The files and folders the build reads: tsconfig.json's "include", tsconfig.json itself and the lock file. */
export function buildInputs(root) {
  const tsconfig = JSON.parse(readFileSync(join(root, "tsconfig.json"), "utf8"));
  const include = tsconfig.include;
  if (!Array.isArray(include) || include.length === 0 || !include.every((entry) => typeof entry === "string")) {
    throw new Error('tsconfig.json has no "include" list of folders');
  }
  return [...include, "tsconfig.json", "package-lock.json"];
}

export const stampFile = (root) => join(root, "dist", ".build-stamp");

/** The newest input's time, and whether the last build (its stamp) is older. No stamp, or an unreadable one, is stale. */
export function buildState(root) {
  const newestSource = Math.max(...buildInputs(root).map((input) => newestMtime(join(root, input))));
  const stamp = stampFile(root);
  const built = existsSync(stamp) ? Number(readFileSync(stamp, "utf8")) : Number.NaN;
  return { newestSource, stale: !(built >= newestSource) };
}
