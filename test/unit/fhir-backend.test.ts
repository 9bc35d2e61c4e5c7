import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { once } from "node:events";
import { createServer as createHttpServer } from "node:http";
import { createServer, type Server, type Socket } from "node:net";
import { brotliCompressSync, deflateSync, gzipSync } from "node:zlib";
import type { AddressInfo } from "node:net";
import { BackendConnections } from "../../exports/backend-connections";
import { FhirBackend } from "../../proxies/fhir/fhir-backend";
import { FhirError } from "../../proxies/fhir/fhir-error";

const patient = '{"resourceType":"Patient","id":"p1"}';

/**
 * A FHIR backend that answers every request and closes a connection as idle `idleMs` after its
 * answer (as servers do with kept-alive connections), and an audit log that takes `auditMs` to
 * store a record: the export's request waits for that record on a connection the backend is closing.
 */
async function setUp(idleMs: number, auditMs: number) {
  const requests: string[] = [];
  const dropped = new Set<string>();
  let connections = 0;
  const server: Server = createServer((socket: Socket) => {
    connections++;
    let idle: NodeJS.Timeout | undefined;
    socket.on("error", () => undefined);
    socket.on("data", (chunk: Buffer) => {
      clearTimeout(idle);
      const line = chunk.toString("latin1").split("\r\n")[0]!;
      requests.push(line);
      // A path with "drop" in it: the first time, the connection is closed under the request, unanswered.
      if (line.includes("drop") && !dropped.has(line)) {
        dropped.add(line);
        return void socket.destroy();
      }
      socket.write(`HTTP/1.1 200 OK\r\nContent-Type: application/fhir+json\r\nContent-Length: ${patient.length}\r\n\r\n${patient}`);
      idle = setTimeout(() => socket.end(), idleMs);
    });
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  const endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}/fhir/`;
  const recorded: string[] = [];
  const backend = new FhirBackend(
    endpoint,
    new BackendConnections({
      exportId: "exp-1",
      component: "fhir",
      endpoint: new URL(endpoint),
      storedAudit: async (_level, _event, _message, details) => {
        recorded.push(`${String(details?.connectionId)} ${String(details?.identity)}`);
        await new Promise((resolve) => setTimeout(resolve, auditMs));
        return true;
      },
    }),
  );
  const stop = async () => {
    backend.close();
    await new Promise((resolve) => server.close(resolve));
  };
  return { backend, requests, recorded, connections: () => connections, stop };
}

describe("FHIR backend connections", () => {
  test("a kept-alive connection the backend closes while its record for a new identity is stored: the request goes out once, on a new connection", async () => {
    const { backend, requests, recorded, connections, stop } = await setUp(30, 150);
    try {
      const first = await backend.send("GET", "Patient/p1", {}, { name: "alice", source: "client" });
      assert.equal(first.status, 200);
      // Bob's record on alice's kept-alive connection takes 150 ms to store; the backend closes that connection after 30.
      const second = await backend.send("GET", "Patient/p1", {}, { name: "bob", source: "client" });
      assert.equal(second.status, 200, "answered, not 502");
      assert.deepEqual((second.json as { id: string }).id, "p1");
      assert.deepEqual(requests, ["GET /fhir/Patient/p1 HTTP/1.1", "GET /fhir/Patient/p1 HTTP/1.1"], "each request reached the backend once");
      assert.equal(connections(), 2);
      // alice and bob on the first connection (bob's request never written there), bob again on the second one.
      const [firstConnection, secondConnection] = [...new Set(recorded.map((line) => line.split(" ")[0]))];
      assert.deepEqual(recorded, [`${firstConnection} alice`, `${firstConnection} bob`, `${secondConnection} bob`]);
    } finally {
      await stop();
    }
  });

  test("a connection closed under a written request: a GET is sent again on another connection, a POST is not (it may have been taken)", async () => {
    const { backend, requests, stop } = await setUp(10_000, 0);
    try {
      assert.equal((await backend.send("GET", "Patient/p1", {}, { name: "alice", source: "client" })).status, 200);
      const read = await backend.send("GET", "Patient/drop", {}, { name: "alice", source: "client" });
      assert.equal(read.status, 200);
      assert.deepEqual(requests.slice(1), ["GET /fhir/Patient/drop HTTP/1.1", "GET /fhir/Patient/drop HTTP/1.1"]);
      requests.length = 0;
      const body = Buffer.from('{"resourceType":"Patient"}');
      const headers = { "content-type": "application/fhir+json" };
      await assert.rejects(backend.send("POST", "drop", headers, { name: "alice", source: "client" }, body), (error: Error & { status?: number }) => {
        assert.equal(error.status, 502);
        assert.match(error.message, /cannot be reached/);
        return true;
      });
      assert.deepEqual(requests, ["POST /fhir/drop HTTP/1.1"], "the create reached the backend once");
    } finally {
      await stop();
    }
  });
});

describe("FHIR backend answers in a content coding (asked for identity, compressed anyway)", () => {
  const encoders: Record<string, (body: Buffer) => Buffer> = { gzip: gzipSync, "x-gzip": gzipSync, deflate: deflateSync, br: brotliCompressSync };

  /** A backend that answers every request with `body` under `encoding`, whatever the request asked for. */
  async function encodingBackend(encoding: string, body: Buffer, maxAnswerBytes = 1 << 20) {
    const asked: string[] = [];
    const server = createHttpServer((request, response) => {
      asked.push(String(request.headers["accept-encoding"]));
      response.writeHead(200, { "content-type": "application/fhir+json", "content-encoding": encoding, "content-length": body.length });
      response.end(body);
    });
    server.listen(0, "127.0.0.1");
    await once(server, "listening");
    const endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}/fhir/`;
    const connections = new BackendConnections({ exportId: "exp-1", component: "fhir", endpoint: new URL(endpoint), storedAudit: async () => true });
    const backend = new FhirBackend(endpoint, connections, undefined, { maxAnswerBytes, timeoutMs: 5000 });
    const stop = async () => {
      backend.close();
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    };
    return { backend, asked, stop };
  }

  for (const encoding of Object.keys(encoders))
    test(`${encoding}: decoded, the answer is the JSON it holds`, async () => {
      const { backend, asked, stop } = await encodingBackend(encoding, encoders[encoding]!(Buffer.from(patient)));
      try {
        const answer = await backend.send("GET", "Patient/p1", {}, { name: null, source: "none" });
        assert.deepEqual(answer.json, JSON.parse(patient));
        assert.deepEqual(asked, ["identity"], "the export asks for identity");
      } finally {
        await stop();
      }
    });

  test("a coding it does not read, two codings, a corrupt body and a body that decodes past the size limit: 502, never the bytes", async () => {
    const cases: Array<[string, Buffer, RegExp, number?]> = [
      ["compress", Buffer.from(patient), /content coding this export does not read/],
      ["gzip, br", brotliCompressSync(gzipSync(Buffer.from(patient))), /content coding this export does not read/],
      ["gzip", Buffer.from("not gzip at all"), /could not be decoded/],
      // 64 KiB of zeros in a JSON string compress to well under 1 KiB; decoded they pass a 4 KiB limit.
      ["gzip", gzipSync(Buffer.from(`{"resourceType":"Patient","note":"${"0".repeat(1 << 16)}"}`)), /larger than 4096 bytes/, 4096],
    ];
    for (const [encoding, body, message, limit] of cases) {
      const { backend, stop } = await encodingBackend(encoding, body, limit);
      try {
        await assert.rejects(backend.send("GET", "Patient/p1", {}, { name: null, source: "none" }), (error: Error) => {
          assert.ok(error instanceof FhirError, `${encoding}: ${error}`);
          assert.equal(error.status, 502);
          assert.match(error.message, message);
          return true;
        });
      } finally {
        await stop();
      }
    }
  });
});
