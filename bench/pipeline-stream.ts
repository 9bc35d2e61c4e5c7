import "reflect-metadata";
import { benchNodeArgs } from "./node-args";
import { reportFigure } from "./report";
import { DeliverPolicy, jetstream, jetstreamManager, RetentionPolicy, StorageType, type JetStreamClient } from "@nats-io/jetstream";
import { realisticPolicy } from "../testkit/policy";
import { call } from "../testkit/http";
import { connectTo, startNats } from "../testkit/nats";
import { NodeProcess } from "../testkit/node-process";

/**
 * Records per second through a pipeline export's streaming mode (published on its input
 * subject, redacted by a node, read back from its output subject) against a bare JetStream
 * publish-consume of the same records on one stream, in the same run, with the same publisher
 * and consumer code. The node runs in its own process; nats-server in another. Target: 0.5x.
 */
const records = Number(process.env.BENCH_RECORDS ?? 50_000);
const publishWindow = 500;

const recordOf = (n: number) =>
  JSON.stringify({
    "users.id": `bench-user-${n % 10}`,
    "users.email": `user${n}@example.com`,
    "users.login": `login${n}`,
    "users.name": `User ${n}`,
    "users.clicks": n,
    "users.secret": "s3cret",
  });

/** Publishes every record (at most `publishWindow` unacknowledged) while `consume` reads the other end; returns records per second end to end. */
async function run(js: JetStreamClient, stream: string, input: string, output: string, label: string): Promise<number> {
  const consumer = await js.consumers.get(stream, { filter_subjects: output, deliver_policy: DeliverPolicy.New });
  const messages = await consumer.consume({ max_messages: 1000 });
  const payloads = Array.from({ length: records }, (_, n) => recordOf(n));
  const started = performance.now();
  const consumed = (async () => {
    let count = 0;
    for await (const msg of messages) {
      if (msg.data.length === 0) throw new Error("empty answer");
      if (++count === records) break;
    }
    return performance.now();
  })();
  for (let n = 0; n < records; n += publishWindow) {
    await Promise.all(payloads.slice(n, n + publishWindow).map((payload) => js.publish(input, payload)));
  }
  const ended = await consumed;
  await messages.close();
  const rate = records / ((ended - started) / 1000);
  process.stdout.write(`${label}: ${records} records in ${Math.round(ended - started)} ms = ${Math.round(rate)} records/s\n`);
  return rate;
}

async function main(): Promise<void> {
  const nats = await startNats();
  const node = await NodeProcess.start({ nodeId: "bench-pipeline", natsUrl: nats.url, env: { LOG_LEVEL: "warn" }, execArgv: benchNodeArgs() });
  try {
    const put = (path: string, body?: unknown) => call(node, "PUT", path, body);
    await put("/config", realisticPolicy());
    for (let u = 0; u < 10; u++) {
      await put("/user", { userId: `bench-user-${u}`, attributes: { dob: "1990-01-01", location: "US" } });
      if (u % 5 !== 0) await put(`/user/terms?userId=bench-user-${u}`);
    }
    const created = await put("/export", { type: "pipeline", resolverGroup: "users-table", metadata: { type: "platformUse", purposeId: "service" } });
    if (created.status !== 200) throw new Error(`export not created: ${JSON.stringify(created.body)}`);
    const id = created.body.id as string;

    const nc = await connectTo(nats.url);
    const js = jetstream(nc);
    const jsm = await jetstreamManager(nc);
    await jsm.streams.add({ name: "BENCH_BARE", subjects: ["bench.bare.>"], retention: RetentionPolicy.Limits, storage: StorageType.File });
    const bare = () => run(js, "BENCH_BARE", "bench.bare.in", "bench.bare.in", "bare JetStream publish-consume");
    const pipeline = () => run(js, "WARDEN_PIPELINE_OUT", `warden.pipeline.${id}.in`, `warden.pipeline.${id}.out`, "pipeline export (in -> node -> out)");
    await pipeline(); // warm-up: the export's decisions and the node's code paths
    const baseline = [await bare(), await bare()];
    const measured = [await pipeline(), await pipeline()];
    const mean = (values: number[]) => values.reduce((a, b) => a + b, 0) / values.length;
    process.stdout.write(`ratio pipeline / bare JetStream: ${(mean(measured) / mean(baseline)).toFixed(2)}x (target >= 0.5x)\n`);
    const ratio = mean(measured) / mean(baseline);
    reportFigure({
      figure: "pipeline export stream vs bare JetStream publish-consume",
      measured: `${Math.round(mean(measured))} records/s`,
      baseline: `${Math.round(mean(baseline))} records/s`,
      ratio,
      target: ">= 0.5x",
      met: ratio >= 0.5,
    });
    await nc.close();
  } finally {
    await node.stop();
    await nats.stop();
  }
}

main().catch((error: unknown) => {
  process.stderr.write(`bench failed: ${(error as Error).stack ?? String(error)}\n`);
  process.exit(1);
});
