import { test } from "node:test";
import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import pino from "pino";
import { loadConfig } from "../../service/config";
import { startServiceNode } from "../../service/node";
import { freePort } from "../../testkit/ports";
import { tempDir } from "../../testkit/temp";

/** Processes whose command line names `text` (from /proc: the test needs no pid the failed start never returned). */
function processesNaming(text: string): number[] {
  const pids: number[] = [];
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (readFileSync(`/proc/${entry}/cmdline`, "utf8").replaceAll("\0", " ").includes(text)) pids.push(Number(entry));
    } catch {
      // exited meanwhile
    }
  }
  return pids;
}

test("a node whose JetStream cannot be provisioned stops the nats-server it started before it fails", async () => {
  const dataDir = tempDir("startup-cleanup");
  const config = loadConfig([], {
    PORT: String(await freePort()),
    NATS_PORT: String(await freePort()),
    DATA_DIR: dataDir,
    NODE_ID: "startup-cleanup",
    LOG_LEVEL: "silent",
    // More than any disk here: JetStream refuses to reserve it, after the embedded server is up.
    REDACT_STORAGE_MAX_BYTES: String(2 ** 50),
  });
  await assert.rejects(startServiceNode(config, pino({ level: "silent" })), /reserve|storage|resources/i);
  assert.deepEqual(processesNaming(`${dataDir}/nats/`), [], "no nats-server left running on the node's data directory");
});
