import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { connect } from "@nats-io/transport-node";
import type { AuditRecord } from "../../actors/runtime/event-log";
import { NatsServerProcess } from "../../service/nats-server";
import { mainScript, NodeProcess } from "../../testkit/node-process";
import { storedMessages } from "../../testkit/nats";
import { freePort } from "../../testkit/ports";
import { tempDir } from "../../testkit/temp";
import { selfSignedCertificate } from "../../testkit/certificates";

/** A node that must not start: its one stderr line. */
function startAndFail(env: Record<string, string>): string {
  const { NATS_URL: _ignored, ...base } = process.env;
  const result = spawnSync(process.execPath, [mainScript], {
    env: { ...base, DATA_DIR: tempDir("nats-fail"), LOG_LEVEL: "silent", PORT: "0", ...env },
    encoding: "utf8",
    timeout: 30_000,
  });
  assert.equal(result.status, 1, result.stderr);
  return result.stderr.trim();
}

describe("NATS credentials and TLS for external servers", () => {
  const token = "external-cluster-token-7f3a";
  let guarded: NatsServerProcess;
  let open: NatsServerProcess;
  let tls: { certFile: string; keyFile: string };
  let encrypted: NatsServerProcess;
  const nodes: NodeProcess[] = [];

  before(async () => {
    const dir = tempDir("nats-tls");
    tls = selfSignedCertificate(dir, "nats");
    [guarded, open, encrypted] = await Promise.all([
      NatsServerProcess.start({ host: "127.0.0.1", port: await freePort(), dir: tempDir("nats-guarded"), serverName: "guarded", token }),
      NatsServerProcess.start({ host: "127.0.0.1", port: await freePort(), dir: tempDir("nats-open"), serverName: "open" }),
      NatsServerProcess.start({ host: "127.0.0.1", port: await freePort(), dir: tempDir("nats-encrypted"), serverName: "encrypted", tls }),
    ]);
  });
  after(async () => {
    await Promise.all(nodes.map((node) => node.stop()));
    await Promise.all([guarded, open, encrypted].map((server) => server?.stop()));
  });

  test("NATS_TOKEN joins a server that needs a token; without it the node stops with one line", async () => {
    assert.match(startAndFail({ NATS_URL: guarded.url }), /^warden: cannot connect to NATS at nats:\/\/127\.0\.0\.1:\d+ .*check NATS_URL/);
    const node = await NodeProcess.start({ nodeId: "nats-token", natsUrl: guarded.url, env: { NATS_TOKEN: token } });
    nodes.push(node);
    assert.equal((await node.readiness()).status, 200);
    const nc = await connect({ servers: guarded.url, token });
    const [config] = (await storedMessages<AuditRecord>(nc, "WARDEN_AUDIT")).filter((message) => message.data.event === "config.active");
    await nc.close();
    assert.equal((config!.data.details as { node: { natsToken: string } }).node.natsToken, "(set)", "audited as set, never shown");
    assert.ok(!JSON.stringify(config).includes(token), "the token is not in the audit record");
    assert.ok(!node.lines.join("\n").includes(token), "nor in the log");
  });

  test("user info in NATS_URL is never logged or audited", async () => {
    const secretUrl = open.url.replace("nats://", "nats://warden:s3cret-pw@");
    const node = await NodeProcess.start({ nodeId: "nats-userinfo", natsUrl: secretUrl });
    nodes.push(node);
    assert.ok(await node.waitLogged(/node ready to serve/));
    assert.ok(!node.lines.join("\n").includes("s3cret-pw"), "the password is not in the log");
    assert.ok(node.logged(/nats:\/\/\*\*\*@127\.0\.0\.1/), "the URL is logged with its user info masked");
    const nc = await connect({ servers: open.url });
    const audit = await storedMessages<AuditRecord>(nc, "WARDEN_AUDIT");
    await nc.close();
    const config = audit.find((message) => message.data.event === "config.active" && JSON.stringify(message.data).includes("nats-userinfo"));
    assert.deepEqual((config!.data.details as { node: { natsUrls: string[] } }).node.natsUrls, [open.url.replace("nats://", "nats://***@")]);
    assert.ok(!JSON.stringify(audit).includes("s3cret-pw"), "no audit record holds the password");
    const failed = startAndFail({ NATS_URL: `nats://warden:s3cret-pw@127.0.0.1:${await freePort()}` });
    assert.ok(!failed.includes("s3cret-pw"), `the startup error hides it too: ${failed}`);
  });

  test("NATS_TLS_CA_FILE: TLS to a server whose certificate that CA signs; an unknown certificate is refused", async () => {
    assert.match(
      startAndFail({ NATS_URL: encrypted.url }),
      /^warden: cannot connect to NATS/,
      "the server's self-signed certificate is not trusted by default",
    );
    const node = await NodeProcess.start({ nodeId: "nats-tls", natsUrl: encrypted.url, env: { NATS_TLS_CA_FILE: tls.certFile } });
    nodes.push(node);
    assert.equal((await node.readiness()).status, 200);
  });

  test("credential settings are checked at startup", () => {
    assert.match(
      startAndFail({ NATS_TOKEN: "x", NATS_PORT: "4999" }),
      /^warden: NATS_TOKEN apply to the NATS servers of NATS_URL: the embedded nats-server makes a token of its own/,
    );
    assert.match(startAndFail({ NATS_URL: open.url, NATS_USER: "u" }), /^warden: NATS_USER and NATS_PASSWORD go together/);
    assert.match(
      startAndFail({ NATS_URL: open.url, NATS_USER: "u", NATS_PASSWORD: "p", NATS_TOKEN: "t" }),
      /^warden: NATS takes one kind of credentials, but NATS_USER and NATS_TOKEN are set/,
    );
    assert.match(
      startAndFail({ NATS_URL: open.url, NATS_CREDS_FILE: "/nonexistent/user.creds" }),
      /^warden: cannot read \/nonexistent\/user\.creds .*check NATS_CREDS_FILE/,
    );
    assert.match(startAndFail({ NATS_URL: open.url, NATS_NKEY_FILE: tls.certFile }), /does not hold a user nkey seed/);
  });
});
