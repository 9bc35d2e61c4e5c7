import { existsSync } from "node:fs";
import { join } from "node:path";

/** Debian puts daemons in /usr/sbin (nats-server, mariadbd), out of an ordinary user's PATH. */
const systemDirs = ["/usr/sbin", "/usr/bin", "/usr/local/sbin", "/usr/local/bin", "/sbin", "/bin"];

/** An executable by name on PATH or in the usual system directories. */
export function findExecutable(name: string, env: NodeJS.ProcessEnv = process.env): string | undefined {
  const dirs = [...(env.PATH ?? "").split(":").filter(Boolean), ...systemDirs];
  return dirs.map((dir) => join(dir, name)).find((candidate) => existsSync(candidate));
}
