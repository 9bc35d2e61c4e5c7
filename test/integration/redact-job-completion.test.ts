import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { setTimeout as sleep } from "node:timers/promises";
import { jetstreamManager } from "@nats-io/jetstream";
import { populationIds } from "../fixtures/population";
import { pausableNode } from "../helpers/pausable-node";

const callTimeoutMs = 1000;
const jobPath = "/redact/document?purposeId=service&type=platformUse&mappingGroup=users-table";

function csv(rows: number): string {
  const lines = ["users.id,users.email,users.login,users.name,users.clicks,users.secret"];
  for (let n = 0; n < rows; n++) {
    const id = populationIds[n % populationIds.length];
    lines.push(`${id},${id}@example.com,login-${id},Name ${id},${n},secret-${n}`);
  }
  return `${lines.join("\n")}\n`;
}

describe("a document job's completion and its output survive a completion call whose answer is lost", () => {
  const { world, call } = pausableNode("job-completion-1", callTimeoutMs);

  const upload = async (text: string): Promise<string> => {
    const response = await fetch(`${world.node.url}${jobPath}`, { method: "PUT", headers: { "content-type": "text/csv" }, body: text });
    const body = (await response.json()) as { jobName: string };
    assert.equal(response.status, 200, JSON.stringify(body));
    return body.jobName;
  };
  const finished = async (jobName: string): Promise<string> => {
    for (let i = 0; i < 300; i++) {
      const progress = await call("GET", `/redact/progress?jobName=${jobName}`);
      if (progress.status === 200 && progress.body.status !== "running") return progress.body.status as string;
      await sleep(100);
    }
    return "running";
  };

  test("nats-server paused as the job reports complete: the call times out, runs when the server wakes, and the output it names is still there", async () => {
    const text = csv(200);
    let paused = 0;
    for (let trial = 0; trial < 6; trial++) {
      // The job's trace record is stored just before the completion call: pausing the server then leaves that call in flight.
      let pausedNow = false;
      const sub = world.nc.subscribe("warden.trace.redact.>", {
        callback: (_error, message) => {
          const record = message.string();
          if (pausedNow || !record.includes('"kind":"document.job"') || !record.includes('"status":"complete"')) return;
          pausedNow = true;
          world.nats.signal("SIGSTOP");
        },
      });
      await world.nc.flush();
      let jobName = "";
      try {
        jobName = await upload(text);
        for (let i = 0; i < 200 && !pausedNow; i++) await sleep(10);
        // Longer than the call's deadline: the runner gives the completion up before the server delivers it.
        if (pausedNow) await sleep(callTimeoutMs * 1.5);
      } finally {
        if (pausedNow) world.nats.signal("SIGCONT");
        sub.unsubscribe();
      }
      if (pausedNow) paused++;
      const status = await finished(jobName);
      assert.equal(status, "complete", `trial ${trial}: the job completes (in this attempt or the next)`);
      const download = await fetch(`${world.node.url}/redact/document?jobName=${jobName}`);
      const body = await download.text();
      assert.equal(download.status, 200, `trial ${trial}: a complete job serves its output: ${body.slice(0, 200)}`);
      assert.ok(body.startsWith("users.id,") && body.includes("accepted@example.com"), `trial ${trial}: the redacted document`);
      assert.ok(!body.includes("not-accepted@example.com"), `trial ${trial}: redacted`);
    }
    assert.ok(paused >= 3, `the server was paused during the completion in ${paused} of 6 trials`);
  });

  test("a complete job whose output is no longer stored answers 410 ERR_REDACT_OUTPUT_LOST before any byte, not a cut download", async () => {
    const jobName = await upload(csv(50));
    assert.equal(await finished(jobName), "complete");
    const jsm = await jetstreamManager(world.nc);
    await jsm.streams.purge("WARDEN_REDACT", { filter: `warden.redact.${jobName}.out.>` });
    const download = await call("GET", `/redact/document?jobName=${jobName}`);
    assert.equal(download.status, 410, JSON.stringify(download.body));
    assert.equal(download.body.error.code, "ERR_REDACT_OUTPUT_LOST");
  });
});
