import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const made = new Set<string>();

/** A fresh directory under the system's temp folder, removed when this process exits (test runs had left thousands behind). */
export function tempDir(prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), `warden-${prefix}-`));
  if (made.size === 0) process.once("exit", removeAll);
  made.add(dir);
  return dir;
}

function removeAll(): void {
  for (const dir of made) {
    try {
      rmSync(dir, { recursive: true, force: true, maxRetries: 2 });
    } catch {
      // A server still shutting down may write into it meanwhile: leaving one directory behind beats failing the run.
    }
  }
  made.clear();
}
