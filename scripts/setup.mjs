#!/usr/bin/env node
// Installs whatever is missing for `npm start` (and, with --tests, for `npm test`),
// then builds. Uses only Node built-ins: it runs before `npm install` has.
// Idempotent and quiet when nothing is missing. Any failure prints one line
// saying what is wrong and how to fix it, never a stack trace.
import { spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join, dirname } from "node:path";
import { fileURLToPath } from "node:url";
import { buildState, stampFile } from "./build-inputs.mjs";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const forTests = process.argv.includes("--tests");
const forBench = process.argv.includes("--bench");

class SetupError extends Error {}

function fail(message) {
  throw new SetupError(message);
}

function say(message) {
  process.stderr.write(`setup: ${message}\n`);
}

function run(command, args, { quiet = true } = {}) {
  const result = spawnSync(command, args, {
    cwd: root,
    encoding: "utf8",
    stdio: quiet ? ["ignore", "pipe", "pipe"] : "inherit",
  });
  if (result.error) return { ok: false, output: String(result.error.message) };
  return { ok: result.status === 0, output: `${result.stdout ?? ""}${result.stderr ?? ""}` };
}

function lastLine(text) {
  const lines = text.trim().split("\n").filter(Boolean);
  return lines.length ? lines[lines.length - 1] : "";
}

function checkNode() {
  const major = Number(process.versions.node.split(".")[0]);
  if (major < 20) fail(`Node.js ${process.versions.node} is too old: install Node.js 20 or newer`);
}

/**
 * npm ci when node_modules was not installed from this package-lock.json: a stamp in node_modules holds the lock's digest.
 * By content, not by modification times: a git checkout (a fresh worktree sharing node_modules) makes package.json newer
 * without changing what is needed, and npm ci would empty the shared node_modules under every other checkout.
 * Without a stamp (installed before it existed), an install newer than the lock and the manifest counts as current.
 */
function ensureNpmDependencies() {
  const installedLock = join(root, "node_modules", ".package-lock.json");
  const stamp = join(root, "node_modules", ".warden-lock-digest");
  const lock = join(root, "package-lock.json");
  const manifest = join(root, "package.json");
  // The lock says what is installed; without one, the manifest does.
  const digest = createHash("sha256")
    .update(readFileSync(existsSync(lock) ? lock : manifest))
    .digest("hex");
  const current = existsSync(stamp)
    ? readFileSync(stamp, "utf8").trim() === digest
    : existsSync(installedLock) && statSync(installedLock).mtimeMs >= Math.max(statSync(manifest).mtimeMs, existsSync(lock) ? statSync(lock).mtimeMs : 0);
  if (current) {
    if (!existsSync(stamp)) writeFileSync(stamp, `${digest}\n`);
    return;
  }
  say("installing npm dependencies");
  const result = run("npm", existsSync(lock) ? ["ci", "--no-audit", "--no-fund"] : ["install", "--no-audit", "--no-fund"]);
  if (!result.ok) fail(`npm could not install the dependencies (${lastLine(result.output)}): check network access to the npm registry and run again`);
  writeFileSync(stamp, `${digest}\n`);
}

const systemBinDirs = ["/usr/sbin", "/usr/bin", "/usr/local/sbin", "/usr/local/bin", "/sbin", "/bin"];

function findExecutable(name) {
  const dirs = [...(process.env.PATH ?? "").split(":").filter(Boolean), ...systemBinDirs];
  for (const dir of dirs) {
    const candidate = join(dir, name);
    if (existsSync(candidate)) return candidate;
  }
  return undefined;
}

function aptInstall(packages, why) {
  const isRoot = typeof process.getuid === "function" && process.getuid() === 0;
  if (!isRoot && !findExecutable("sudo")) {
    fail(`${why} is missing and sudo is not available: run 'apt-get install -y ${packages.join(" ")}' as root`);
  }
  if (!findExecutable("apt-get")) {
    fail(`${why} is missing and this is not a Debian-like system: install ${packages.join(", ")} with your package manager`);
  }
  say(`installing ${packages.join(" ")} with apt-get`);
  const sudo = isRoot ? [] : ["sudo", "-n"];
  const runAs = (args) => run(args[0], args.slice(1));
  const install = () => runAs([...sudo, "env", "DEBIAN_FRONTEND=noninteractive", "apt-get", "install", "-y", "-q", ...packages]);
  let result = install();
  if (!result.ok) {
    runAs([...sudo, "apt-get", "update", "-q"]);
    result = install();
  }
  if (!result.ok) {
    const hint = isRoot ? "" : " (sudo may need a password: run it once by hand)";
    fail(`could not install ${packages.join(" ")}: ${lastLine(result.output)}${hint}; run 'sudo apt-get install -y ${packages.join(" ")}'`);
  }
}

function ensureNatsServer() {
  if (process.env.NATS_URL && !forTests) return; // the node joins an existing NATS; no embedded server needed
  if (findExecutable("nats-server")) return;
  aptInstall(["nats-server"], "nats-server (the embedded NATS JetStream server)");
  if (!findExecutable("nats-server")) fail("nats-server was installed but cannot be found: add /usr/sbin or /usr/bin to PATH");
}

/** PostgreSQL's server programs: Debian keeps them in /usr/lib/postgresql/<version>/bin, out of PATH. */
function findPostgresServer() {
  const debian = "/usr/lib/postgresql";
  if (existsSync(debian) && readdirSync(debian).some((v) => existsSync(join(debian, v, "bin", "initdb")))) return debian;
  return findExecutable("initdb");
}

// Test-only prerequisites, by the suites that need them: a real PostgreSQL with psql and pgbench (exports).
const testPrerequisites = [
  { binary: "psql", package: "postgresql-client", find: findExecutable },
  { binary: "pgbench", package: "postgresql", find: findExecutable },
  { binary: "initdb", package: "postgresql", find: findPostgresServer },
  // A real MariaDB for the MySQL export's tests (mariadbd and mariadb-install-db; Debian keeps mariadbd in /usr/sbin).
  { binary: "mariadbd", package: "mariadb-server", find: findExecutable },
  // Certificates for the TLS tests.
  { binary: "openssl", package: "openssl", find: findExecutable },
  // JDBC through an export: a JDK and Debian's PostgreSQL JDBC driver.
  { binary: "javac", package: "default-jdk-headless", find: findExecutable },
  { binary: "/usr/share/java/postgresql.jar", package: "libpostgresql-jdbc-java", find: (path) => (existsSync(path) ? path : undefined) },
  // and Debian's MariaDB Connector/J for the MySQL export's JDBC test.
  { binary: "/usr/share/java/mariadb-java-client.jar", package: "libmariadb-java", find: (path) => (existsSync(path) ? path : undefined) },
  // A real OpenLDAP for the LDAP verifier's tests (slapd and slapadd; Debian keeps them in /usr/sbin).
  { binary: "/usr/sbin/slapd", package: "slapd", find: (path) => (existsSync(path) ? path : undefined) },
  // curl's --aws-sigv4 signs requests for the cloud-signing tests.
  { binary: "curl", package: "curl", find: findExecutable },
  // The web UIs' end-to-end test drives Debian's Chromium (headless) with playwright-core.
  { binary: "/usr/bin/chromium", package: "chromium", find: (path) => (existsSync(path) ? path : undefined) },
];

function ensureTestPrerequisites() {
  const missing = testPrerequisites.filter((p) => !p.find(p.binary));
  if (missing.length) aptInstall([...new Set(missing.map((p) => p.package))], missing.map((p) => p.binary).join(", "));
}

function ensureBuild() {
  let state;
  try {
    state = buildState(root);
  } catch (error) {
    fail(`cannot tell which folders to build (${error.message}): check tsconfig.json`);
  }
  const { newestSource, stale } = state;
  if (!stale) return;
  say("building (tsc)");
  const result = run(process.execPath, [join(root, "node_modules", "typescript", "bin", "tsc"), "-p", "tsconfig.json"]);
  if (!result.ok) {
    process.stderr.write(result.output);
    fail("the TypeScript build failed (errors above)");
  }
  const wasm = run(process.execPath, [join(root, "scripts", "build-wasm.mjs")]);
  if (!wasm.ok) {
    process.stderr.write(wasm.output);
    fail("the WebAssembly build failed (errors above)");
  }
  writeFileSync(stampFile(root), String(newestSource));
}

try {
  checkNode();
  ensureNpmDependencies();
  ensureNatsServer();
  if (forTests) ensureTestPrerequisites();
  // The export benchmark compares with PgBouncer.
  if (forBench && !findExecutable("pgbouncer")) aptInstall(["pgbouncer"], "pgbouncer (the export benchmark's baseline)");
  ensureBuild();
} catch (error) {
  if (error instanceof SetupError) {
    process.stderr.write(`warden setup: ${error.message}\n`);
    process.exit(1);
  }
  throw error;
}
