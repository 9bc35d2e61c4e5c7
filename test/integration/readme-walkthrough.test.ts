import { after, test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { NodeProcess } from "../../testkit/node-process";
import { freePort } from "../../testkit/ports";
import { tempDir } from "../../testkit/temp";

const root = join(__dirname, "..", "..", "..");
const started: NodeProcess[] = [];
after(async () => {
  await Promise.all(started.map((node) => node.stop()));
});

/** The README's "First five minutes" shell block, as written. */
function walkthrough(): string {
  const readme = readFileSync(join(root, "README.md"), "utf8");
  const section = readme.slice(readme.indexOf("## First five minutes"));
  const block = /```sh\n([\s\S]*?)```/.exec(section);
  assert.ok(block, "the README has the walkthrough");
  return block[1]!;
}

test("the README's first-five-minutes walkthrough runs as written against a real node", async () => {
  const node = await NodeProcess.start({ nodeId: "readme", env: { NATS_PORT: String(await freePort()) } });
  started.push(node);
  const exportPort = await freePort();
  const script = walkthrough();
  assert.match(script, /W=http:\/\/127\.0\.0\.1:8890;/);
  const adapted = script.replace("W=http://127.0.0.1:8890;", `W=${node.url};`).replaceAll("18000", String(exportPort));
  // Every curl fails the script on an HTTP error (the README leaves -f out for readable errors).
  const result = spawnSync("bash", ["-e", "-o", "pipefail", "-c", `curl() { command curl -f "$@"; }\n${adapted}`], {
    cwd: tempDir("readme"),
    encoding: "utf8",
    timeout: 60_000,
  });
  assert.equal(result.status, 0, `the walkthrough failed: ${result.stderr}\n${result.stdout}`);
  const out = result.stdout;
  assert.match(out, /"allowed":true,"flow":"platform","categoryIds":\["contact","usage"\]/, "the decision");
  assert.match(out, /"record":\{"id":null,"email":null,"clicks":42\}/, "the redacted record");
  assert.match(out, /"rows":\{"in":2,"kept":1,"dropped":1/, "the document's stats");
  assert.match(out, /id,email,clicks\n,alice@example.com,42\n/, "the redacted document");
  assert.match(out, /"record":\{"id":null,"email":null,"clicks":1\}/, "the export's answer");
  assert.match(out, /"rows":\{"in":1,"kept":1,"dropped":0/, "the export counted it");
});
