import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { createHash } from "node:crypto";
import { createServer as createHttpServer, type Server } from "node:http";
import { connect, createServer as createTcpServer, type AddressInfo, type Server as TcpServer } from "node:net";
import { promisify } from "node:util";
import { jetstreamManager } from "@nats-io/jetstream";
import { Kvm } from "@nats-io/kv";
import type { NatsConnection } from "@nats-io/transport-node";
import { KvReplayGuard } from "../../auth/replay-guard";
import { signedRequestFrom } from "../../auth/signed-request";
import { CredentialRejected, type Verifier } from "../../auth/types";
import { cloudVerifierFactory } from "../../auth/verifiers/cloud-verifier";
import type { NatsServerProcess } from "../../service/nats-server";
import { connectTo, startNats } from "../../testkit/nats";

const run = promisify(execFile);
const profile = { id: "AKIDWARDENDEV", key: "dev-signing-key/with+chars", region: "eu-west-1" };

function listen(server: Server | TcpServer): Promise<number> {
  return new Promise((resolve) => server.listen(0, "127.0.0.1", () => resolve((server.address() as AddressInfo).port)));
}

/** Sends raw bytes on a fresh connection and returns the whole answer. */
function sendRaw(port: number, bytes: Buffer): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, "127.0.0.1", () => socket.write(bytes));
    const chunks: Buffer[] = [];
    socket.on("data", (chunk: Buffer) => chunks.push(chunk));
    socket.on("error", reject);
    socket.on("end", () => resolve(Buffer.concat(chunks).toString("latin1")));
  });
}

describe("cloud signing: curl --aws-sigv4 against a node:http server, replays refused through NATS KV", () => {
  let nats: NatsServerProcess;
  let nc: NatsConnection;
  let verifier: Verifier;
  let http: Server;
  let httpPort: number;
  let recorder: TcpServer;
  let recorderPort: number;
  /** The bytes each connection through the recorder sent, in order. */
  const captured: Buffer[][] = [];

  before(async () => {
    nats = await startNats();
    nc = await connectTo(nats);
    const replayGuard = await KvReplayGuard.open(nc, { replicas: 1 });
    verifier = cloudVerifierFactory.create("dev", cloudVerifierFactory.parse(profile, "verifiers[0].profiles[0].configuration"), { replayGuard });

    http = createHttpServer((req, res) => {
      const hash = createHash("sha256");
      req.on("data", (chunk: Buffer) => hash.update(chunk));
      req.on("end", () => {
        const request = signedRequestFrom({ method: req.method ?? "", url: req.url ?? "", headers: req.headersDistinct, bodySha256: hash.digest("hex") });
        // Closing after each answer lets a raw replay read to the end of the stream.
        res.setHeader("connection", "close");
        verifier.verify({ type: "cloudSigningCredentials", request }).then(
          (identity) => res.writeHead(200).end(`ok ${identity.subject}`),
          (error: unknown) => res.writeHead(error instanceof CredentialRejected ? 401 : 503).end(String((error as Error).message)),
        );
      });
    });
    httpPort = await listen(http);

    // A TCP relay in front of the server that records exactly what curl sent.
    recorder = createTcpServer((client) => {
      const sent: Buffer[] = [];
      captured.push(sent);
      const upstream = connect(httpPort, "127.0.0.1");
      client.on("data", (chunk: Buffer) => {
        sent.push(chunk);
        upstream.write(chunk);
      });
      upstream.pipe(client);
      client.on("end", () => upstream.end());
      client.on("error", () => upstream.destroy());
      upstream.on("error", () => client.destroy());
    });
    recorderPort = await listen(recorder);
  });

  after(async () => {
    await new Promise((resolve) => recorder.close(resolve));
    http.closeAllConnections();
    await new Promise((resolve) => http.close(resolve));
    await nc.close();
    await nats.stop();
  });

  async function curl(path: string, options: { id?: string; key?: string; region?: string; args?: string[] } = {}): Promise<{ status: number; body: string }> {
    const { stdout } = await run("curl", [
      "-sS",
      "--max-time",
      "10",
      "--aws-sigv4",
      `aws:amz:${options.region ?? profile.region}:warden`,
      "--user",
      `${options.id ?? profile.id}:${options.key ?? profile.key}`,
      "-w",
      "\n%{http_code}",
      ...(options.args ?? []),
      `http://127.0.0.1:${recorderPort}${path}`,
    ]);
    const newline = stdout.lastIndexOf("\n");
    return { status: Number(stdout.slice(newline + 1)), body: stdout.slice(0, newline) };
  }

  test("a signed GET and a signed POST with a JSON body pass", async () => {
    assert.deepEqual(await curl("/redact/record"), { status: 200, body: `ok ${profile.id}` });
    assert.deepEqual(await curl("/export?id=x"), { status: 200, body: `ok ${profile.id}` });
    const post = await curl("/redact/record", { args: ["-H", "content-type: application/json", "--data-binary", '{"name":"Ada","ssn":"123-45-6789"}'] });
    assert.deepEqual(post, { status: 200, body: `ok ${profile.id}` });
  });

  test("the same curl with a wrong key, region or id is rejected", async () => {
    assert.deepEqual(await curl("/redact/record", { key: "not-the-key" }), { status: 401, body: "the signature does not match" });
    const region = await curl("/redact/record", { region: "us-east-1" });
    assert.equal(region.status, 401);
    assert.match(region.body, /region 'us-east-1'/);
    const id = await curl("/redact/record", { id: "AKIDINTRUDER" });
    assert.equal(id.status, 401);
    assert.match(id.body, /access key id/);
  });

  test("replaying the exact bytes curl sent is refused", async () => {
    captured.length = 0;
    const first = await curl("/redact/record", { args: ["-H", "content-type: application/json", "--data-binary", '{"amount":10}'] });
    assert.equal(first.status, 200);
    assert.equal(captured.length, 1);
    const bytes = Buffer.concat(captured[0]);
    assert.match(bytes.toString("latin1"), /^POST \/redact\/record HTTP\/1\.1\r\n/);
    // Refused for being a replay, not for anything else about the bytes.
    assert.match(await sendRaw(httpPort, bytes), /^HTTP\/1\.1 401 [\s\S]*\r\nreplayed: the signature was used before\r\n/);
  });

  test("the KV replay guard is shared: another node's guard on the same bucket sees the key too", async () => {
    const [one, two] = await Promise.all([KvReplayGuard.open(nc, { replicas: 1 }), KvReplayGuard.open(nc, { replicas: 1 })]);
    const outcomes = await Promise.all([one.firstUse("sig-a", 600_000), two.firstUse("sig-a", 600_000)]);
    assert.deepEqual(outcomes.sort(), [false, true], "exactly one of two racing uses is the first");
    assert.equal(await one.firstUse("sig-b", 600_000), true);
    assert.equal(await two.firstUse("sig-b", 600_000), false);
    await assert.rejects(one.firstUse("sig-c", 12 * 60_000), /longer than/);
  });

  test("a replay bucket that forgets sooner than the window is refused at open", async () => {
    await (await jetstreamManager(nc)).streams.delete(`KV_${KvReplayGuard.bucket}`);
    await new Kvm(nc).create(KvReplayGuard.bucket, { history: 1, ttl: 60_000 });
    await assert.rejects(KvReplayGuard.open(nc, { replicas: 1 }), /keeps keys 60000 ms/);
  });
});
