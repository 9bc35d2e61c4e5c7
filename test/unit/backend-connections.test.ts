import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { once } from "node:events";
import { Agent, createServer, request as httpRequest, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { BackendConnections, ConnectionNotAudited, type BackendIdentity } from "../../exports/backend-connections";

interface Recorded {
  event: string;
  details: Record<string, unknown>;
  /** Requests the server had received when the record was asked for. */
  serverHadSeen: number;
}

/** A loopback backend that counts the requests it received, and an audit log whose answers the test sets. */
async function setUp() {
  const seen: string[] = [];
  const server: Server = createServer((request, response) => {
    seen.push(`${request.method} ${request.url} ${request.headers.authorization ?? ""}`);
    response.end("ok");
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  const endpoint = new URL(`http://127.0.0.1:${(server.address() as AddressInfo).port}`);
  const records: Recorded[] = [];
  const audit = { stores: true, delayMs: 0 };
  const connections = new BackendConnections({
    exportId: "exp-1",
    component: "objectstore",
    endpoint,
    storedAudit: async (_level, event, _message, details) => {
      records.push({ event, details, serverHadSeen: seen.length });
      await new Promise((resolve) => setTimeout(resolve, audit.delayMs));
      return audit.stores;
    },
  });
  // One connection at a time, kept alive: every request after the first reuses it.
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  /** A request written only once its connection is on record, as the exports write theirs. */
  const send = (path: string, identity: BackendIdentity) =>
    new Promise<string>((resolve, reject) => {
      const outgoing = httpRequest(new URL(path, endpoint), { agent, headers: identity.name ? { authorization: identity.name } : {} });
      outgoing.on("error", reject);
      outgoing.on("response", (response: IncomingMessage) => {
        let text = "";
        response.on("data", (chunk: Buffer) => (text += chunk.toString()));
        response.on("end", () => resolve(text));
      });
      connections.recordedFor(outgoing, identity).then(
        () => outgoing.end(),
        (error: Error) => outgoing.destroy(error),
      );
    });
  const stop = async () => {
    agent.destroy();
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  };
  return { seen, records, audit, send, stop, endpoint };
}

const exportKey: BackendIdentity = { name: "AKID-EXPORT", source: "export" };

describe("BackendConnections (spec 6 item 4 for pooled HTTP backends)", () => {
  test("a connection is recorded once per identity, before anything is written on it; a kept-alive reuse adds nothing", async () => {
    const { seen, records, audit, send, stop, endpoint } = await setUp();
    try {
      audit.delayMs = 50;
      assert.equal(await send("/a", exportKey), "ok");
      assert.equal(records.length, 1);
      assert.equal(records[0]!.event, "connection.outgoing");
      assert.equal(records[0]!.serverHadSeen, 0, "the backend had received nothing when the record was asked for");
      const { connectionId, ...details } = records[0]!.details;
      assert.match(String(connectionId), /^out-[0-9a-f]{12}$/);
      assert.deepEqual(details, {
        exportId: "exp-1",
        component: "objectstore",
        endpoint: endpoint.host,
        tls: false,
        identity: "AKID-EXPORT",
        identitySource: "export",
      });
      assert.equal(await send("/b", exportKey), "ok");
      assert.equal(records.length, 1, "the same connection with the same identity is on record already");
      // Another identity on the same (kept-alive) connection: recorded before its request is written.
      assert.equal(await send("/c", { name: "client-bob", source: "client" }), "ok");
      assert.equal(records.length, 2);
      assert.equal(records[1]!.details.connectionId, connectionId, "the same connection");
      assert.equal(records[1]!.details.identity, "client-bob");
      assert.equal(records[1]!.details.identitySource, "client");
      assert.equal(records[1]!.serverHadSeen, 2);
      assert.deepEqual(seen, ["GET /a AKID-EXPORT", "GET /b AKID-EXPORT", "GET /c client-bob"]);
    } finally {
      await stop();
    }
  });

  test("a record the audit log does not store fails the request with nothing sent; asked again on the next use", async () => {
    const { seen, records, audit, send, stop } = await setUp();
    try {
      audit.stores = false;
      await assert.rejects(
        send("/refused", exportKey),
        (error: Error) => error instanceof ConnectionNotAudited && /cannot record this connection/.test(error.message),
      );
      assert.deepEqual(seen, [], "the backend received nothing");
      audit.stores = true;
      assert.equal(await send("/later", exportKey), "ok");
      assert.equal(records.length, 2, "the later request's connection was recorded anew");
      assert.deepEqual(seen, ["GET /later AKID-EXPORT"]);
    } finally {
      await stop();
    }
  });

  test("a request without credentials is recorded as such", async () => {
    const { records, send, stop } = await setUp();
    try {
      assert.equal(await send("/anonymous", { name: null, source: "none" }), "ok");
      assert.equal(records[0]!.details.identity, null);
      assert.equal(records[0]!.details.identitySource, "none");
    } finally {
      await stop();
    }
  });

  test("a connection remembers at most 256 identities as recorded: past that it records them again as they come", async () => {
    const { records, send, stop } = await setUp();
    try {
      for (let n = 0; n < 256; n++) await send(`/u${n}`, { name: `user-${n}`, source: "client" });
      assert.equal(records.length, 256);
      await send("/again", { name: "user-0", source: "client" });
      assert.equal(records.length, 256, "user-0 is still remembered on this connection");
      await send("/new", { name: "user-256", source: "client" });
      await send("/again", { name: "user-0", source: "client" });
      assert.equal(records.length, 258, "the 257th identity starts the memory over: user-0 is recorded again");
      assert.equal(new Set(records.map((r) => r.details.connectionId)).size, 1, "all on one connection");
    } finally {
      await stop();
    }
  });
});
